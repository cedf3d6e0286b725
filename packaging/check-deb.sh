#!/usr/bin/env bash
# check-deb.sh DEB [ROOT]: install the mmk package and check it, as CI
# does on its clean machine (.ci/run):
#   - dpkg -i installs it;
#   - mmkd --version and mmkctl --version print the package's version;
#   - systemd-analyze verify finds nothing to say about mmkd.service
#     (a warning fails too) and its ExecStart runs;
#   - mmkctl's bash completion loads;
#   - mmkd starts as the unit starts it (its command line and
#     /etc/mmk/mmk.yaml), on the fake GPUs in a temporary state directory,
#     and answers /readyz, /api/v1/gpus and mmkctl with its token (and
#     /readyz refuses a caller without it);
#   - dpkg --purge removes it.
# With ROOT, dpkg installs into that directory instead of this system
# (--root, maintainer scripts run with DPKG_ROOT set, touching nothing
# outside it), and systemd-analyze verifies the unit there: a try without
# root rights on a developer's machine.
set -euo pipefail
deb=${1:?usage: check-deb.sh DEB [ROOT]}
root=${2:-}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
version=$(dpkg-deb -f "$deb" Version)
fail() { echo "check-deb.sh: $*" >&2; exit 1; }

if [ -n "$root" ]; then
	mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
	touch "$root/var/lib/dpkg/status"
	dpkg=(dpkg --root="$root" --force-script-chrootless --force-not-root --force-depends --log=/dev/null)
else
	dpkg=($sudo dpkg)
fi
"${dpkg[@]}" -i "$deb"
trap '"${dpkg[@]}" --purge mmk >/dev/null || true' EXIT
r=${root:-}

got=$("$r/usr/bin/mmkd" --version)
[ "$got" = "mmkd version $version" ] || fail "mmkd --version printed \"$got\", want \"mmkd version $version\""
got=$("$r/usr/bin/mmkctl" --version)
[ "$got" = "mmkctl version $version" ] || fail "mmkctl --version printed \"$got\""
echo "installed mmk $version: $(dpkg-deb -c "$deb" | wc -l) entries"

unit=/lib/systemd/system/mmkd.service
[ -f "$r$unit" ] || fail "$unit is not installed"
if [ -n "$root" ]; then
	# verify in ROOT needs systemd's own units there.
	mkdir -p "$root/usr/lib/systemd"
	cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/" 2>/dev/null || cp -a /lib/systemd/system "$root/usr/lib/systemd/"
	cp "$r$unit" "$root/usr/lib/systemd/system/mmkd.service"
	said=$(systemd-analyze verify --root="$root" mmkd.service 2>&1) || fail "systemd-analyze verify: $said"
else
	said=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $said"
fi
[ -z "$said" ] || fail "systemd-analyze verify $unit: $said"
echo "systemd-analyze verify $unit: ok"

completion=$r/usr/share/bash-completion/completions/mmkctl
bash -c "source '$completion' && complete -p mmkctl" >/dev/null || fail "mmkctl's bash completion does not load"
for f in /usr/share/zsh/vendor-completions/_mmkctl /usr/share/fish/vendor_completions.d/mmkctl.fish; do
	[ -s "$r$f" ] || fail "$f is missing"
done
echo "shell completion: bash, zsh, fish"

# Start mmkd as the unit does, with a free port, fake GPUs and a state
# directory of its own.
exec_start=$(sed -n 's/^ExecStart=//p' "$r$unit")
[ "$exec_start" = "/usr/bin/mmkd --config /etc/mmk/mmk.yaml" ] || fail "ExecStart is \"$exec_start\""
state=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
hook=()
[ -z "$root" ] || hook=("MMK_KERNELSCHED_HOOK=$r/usr/lib/mmk/libmmkhook.so") # the file's path is of the system
env "${hook[@]}" "$r/usr/bin/mmkd" --config "$r/etc/mmk/mmk.yaml" --backend fake --data-dir "$state" --listen "127.0.0.1:$port" 2>"$state/mmkd.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$state"; "${dpkg[@]}" --purge mmk >/dev/null || true' EXIT
# Only /healthz answers without mmkd's token (DATA_DIR/token, 0600).
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && [ -s "$state/token" ] && break; sleep 0.1; done
[ -s "$state/token" ] || { cat "$state/mmkd.log" >&2; fail "the installed mmkd wrote no token to $state/token"; }
token=$(cat "$state/token")
auth=(-H "Authorization: Bearer $token")
curl -fs "${auth[@]}" "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$state/mmkd.log" >&2; fail "the installed mmkd did not answer /readyz"; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 401 ] || fail "the installed mmkd answered /readyz without its token"
curl -fs "${auth[@]}" "http://127.0.0.1:$port/api/v1/gpus" | grep -q '"model":"H100-80GB"' || fail "the installed mmkd serves no GPU"
MMK_TOKEN=$token "$r/usr/bin/mmkctl" --addr "127.0.0.1:$port" jobs >/dev/null || fail "mmkctl cannot talk to the installed mmkd"
grep -q "version=$version" "$state/mmkd.log" || fail "mmkd's log does not name version $version"
grep -q "kernelsched=true" "$state/mmkd.log" || fail "mmkd did not find the installed hook: $(grep -i kernel "$state/mmkd.log")"
kill "$pid"
wait "$pid" || true
rm -rf "$state"
echo "mmkd started as the unit starts it and answered: ok"

trap - EXIT
"${dpkg[@]}" --purge mmk
for f in /usr/bin/mmkd /usr/bin/mmkctl /etc/mmk/mmk.yaml "$unit"; do
	[ ! -e "$r$f" ] || fail "$f is left after dpkg --purge"
done
echo "dpkg --purge removed it: ok"
