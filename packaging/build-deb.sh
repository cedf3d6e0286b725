#!/usr/bin/env bash
# build-deb.sh VERSION BINDIR: the mmk .deb from the binaries make build
# put in BINDIR (mmkd, mmkctl, mmk-dra, libmmkhook.so, mmk-tpcprobe), with dpkg-deb (no
# other tool): BINDIR/mmk_VERSION_ARCH.deb. It holds
#   /usr/bin/mmkd, /usr/bin/mmkctl, /usr/bin/mmk-dra (the Kubernetes DRA
#   driver, docs/kubernetes.md), /usr/lib/mmk/libmmkhook.so and
#   /usr/lib/mmk/mmk-tpcprobe (mmkd maps TPC masks with it, next to the hook),
#   /lib/systemd/system/mmkd.service, /etc/mmk/mmk.yaml (a conffile),
#   mmkctl's completion for bash, zsh and fish,
#   /usr/share/doc/mmk (README.md, mmk.yaml.default: every key).
# build-deb.sh --list prints the package's files, one a line, without
# building it (packaging/deb_test.go checks a package against it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

# installs: DEST MODE SRC of each file copied into the package (SRC
# relative to BINDIR's "@BIN@", the checkout's "@ROOT@"); completions are
# the files mmkctl writes.
installs() {
	cat <<'END'
/usr/bin/mmkd 0755 @BIN@/mmkd
/usr/bin/mmkctl 0755 @BIN@/mmkctl
/usr/bin/mmk-dra 0755 @BIN@/mmk-dra
/usr/lib/mmk/libmmkhook.so 0644 @BIN@/libmmkhook.so
/usr/lib/mmk/mmk-tpcprobe 0755 @BIN@/mmk-tpcprobe
/lib/systemd/system/mmkd.service 0644 @ROOT@/packaging/mmkd.service
/etc/mmk/mmk.yaml 0644 @ROOT@/packaging/mmk.yaml
/usr/share/doc/mmk/README.md 0644 @ROOT@/README.md
/usr/share/doc/mmk/mmk.yaml.default 0644 @ROOT@/configs/mmk.yaml
END
}
completions=(
	"bash /usr/share/bash-completion/completions/mmkctl"
	"zsh /usr/share/zsh/vendor-completions/_mmkctl"
	"fish /usr/share/fish/vendor_completions.d/mmkctl.fish"
)

if [ "${1:-}" = --list ]; then
	installs | while read -r dest _ _; do echo "$dest"; done
	for c in "${completions[@]}"; do echo "${c#* }"; done
	exit 0
fi

version=${1:?usage: build-deb.sh VERSION BINDIR, or build-deb.sh --list}
bindir=${2:?usage: build-deb.sh VERSION BINDIR, or build-deb.sh --list}
arch=$(dpkg --print-architecture)
for f in mmkd mmkctl mmk-dra libmmkhook.so mmk-tpcprobe; do
	[ -f "$bindir/$f" ] || { echo "build-deb.sh: $bindir/$f is missing (make build)" >&2; exit 1; }
done
for b in mmkd mmk-dra; do
	got=$("$bindir/$b" --version)
	[ "$got" = "$b version $version" ] || { echo "build-deb.sh: $bindir/$b says \"$got\", not version $version: build it with make" >&2; exit 1; }
done
pkg=$(mktemp -d "${TMPDIR:-/tmp}/mmk-deb.XXXX")
trap 'rm -rf "$pkg"' EXIT
chmod 0755 "$pkg"
installs | while read -r dest mode src; do
	src=${src/#@BIN@/$bindir}
	src=${src/#@ROOT@/$root}
	install -D -m "$mode" "$src" "$pkg$dest"
done
for c in "${completions[@]}"; do
	shell=${c%% *} dest=${c#* }
	mkdir -p "$(dirname "$pkg$dest")"
	"$bindir/mmkctl" completion "$shell" >"$pkg$dest"
	chmod 0644 "$pkg$dest"
done
mkdir -p "$pkg/DEBIAN"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" "$here/deb/control.in" >"$pkg/DEBIAN/control"
echo "Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)" >>"$pkg/DEBIAN/control"
echo /etc/mmk/mmk.yaml >"$pkg/DEBIAN/conffiles"
install -m 0755 "$here/deb/postinst" "$here/deb/prerm" "$here/deb/postrm" "$pkg/DEBIAN/"
out="$bindir/mmk_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out" >/dev/null
echo "$out"
