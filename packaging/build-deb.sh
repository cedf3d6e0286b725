#!/usr/bin/env bash
# build-deb.sh VERSION BINDIR: the mmk .deb from the binaries make build
# put in BINDIR (mmkd, mmkctl, libmmkhook.so), with dpkg-deb (no other
# tool): BINDIR/mmk_VERSION_ARCH.deb. It holds
#   /usr/bin/mmkd, /usr/bin/mmkctl, /usr/lib/mmk/libmmkhook.so,
#   /lib/systemd/system/mmkd.service, /etc/mmk/mmk.yaml (a conffile),
#   mmkctl's completion for bash, zsh and fish,
#   /usr/share/doc/mmk (README.md, mmk.yaml.default: every key).
set -euo pipefail
version=${1:?usage: build-deb.sh VERSION BINDIR}
bindir=${2:?usage: build-deb.sh VERSION BINDIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
arch=$(dpkg --print-architecture)
for f in mmkd mmkctl libmmkhook.so; do
	[ -f "$bindir/$f" ] || { echo "build-deb.sh: $bindir/$f is missing (make build)" >&2; exit 1; }
done
got=$("$bindir/mmkd" --version)
[ "$got" = "mmkd version $version" ] || { echo "build-deb.sh: $bindir/mmkd says \"$got\", not version $version: build it with make" >&2; exit 1; }
pkg=$(mktemp -d "${TMPDIR:-/tmp}/mmk-deb.XXXX")
trap 'rm -rf "$pkg"' EXIT
chmod 0755 "$pkg"
install -D -m 0755 "$bindir/mmkd" "$pkg/usr/bin/mmkd"
install -D -m 0755 "$bindir/mmkctl" "$pkg/usr/bin/mmkctl"
install -D -m 0644 "$bindir/libmmkhook.so" "$pkg/usr/lib/mmk/libmmkhook.so"
install -D -m 0644 "$here/mmkd.service" "$pkg/lib/systemd/system/mmkd.service"
install -D -m 0644 "$here/mmk.yaml" "$pkg/etc/mmk/mmk.yaml"
install -D -m 0644 "$root/README.md" "$pkg/usr/share/doc/mmk/README.md"
install -D -m 0644 "$root/configs/mmk.yaml" "$pkg/usr/share/doc/mmk/mmk.yaml.default"
mkdir -p "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/zsh/vendor-completions" "$pkg/usr/share/fish/vendor_completions.d"
"$bindir/mmkctl" completion bash >"$pkg/usr/share/bash-completion/completions/mmkctl"
"$bindir/mmkctl" completion zsh >"$pkg/usr/share/zsh/vendor-completions/_mmkctl"
"$bindir/mmkctl" completion fish >"$pkg/usr/share/fish/vendor_completions.d/mmkctl.fish"
chmod 0644 "$pkg"/usr/share/*/*/mmkctl* "$pkg/usr/share/zsh/vendor-completions/_mmkctl"
mkdir -p "$pkg/DEBIAN"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" "$here/deb/control.in" >"$pkg/DEBIAN/control"
echo "Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)" >>"$pkg/DEBIAN/control"
echo /etc/mmk/mmk.yaml >"$pkg/DEBIAN/conffiles"
install -m 0755 "$here/deb/postinst" "$here/deb/prerm" "$here/deb/postrm" "$pkg/DEBIAN/"
out="$bindir/mmk_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out" >/dev/null
echo "$out"
