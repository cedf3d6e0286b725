#!/usr/bin/env bash
# check-deb.sh DEB [ROOT]: install the mmk package and check it, as CI
# does on its clean machine (.ci/run):
#   - dpkg -i installs it;
#   - mmkd, mmkctl and mmk-dra --version print the package's version;
#   - systemd-analyze verify finds nothing to say about mmkd.service
#     (a warning fails too) and its ExecStart runs;
#   - mmkctl's bash completion loads;
#   - the postinst made the mmk group and /var/lib/mmk, root:mmk 0750;
#   - mmkd starts as the unit starts it (its command line and
#     /etc/mmk/mmk.yaml), on the fake GPUs, in /var/lib/mmk, and answers
#     /readyz, /api/v1/gpus and mmkctl with its token (and /readyz
#     refuses a caller without it);
#   - a user in the mmk group submits a job with mmkctl, over the socket
#     the package's configuration names, and the job runs as that user;
#     a user outside the group is refused;
#   - dpkg --purge removes it, /var/lib/mmk included, and keeps the group.
# It needs root (sudo otherwise): it adds two users for the check and
# removes them. With ROOT, dpkg installs into that directory instead of
# this system (--root, maintainer scripts run with DPKG_ROOT set,
# touching nothing outside it), mmkd runs in a temporary state directory
# and no user or group is made: a try without root rights on a
# developer's machine.
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
got=$("$r/usr/bin/mmk-dra" --version)
[ "$got" = "mmk-dra version $version" ] || fail "mmk-dra --version printed \"$got\""
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

# The group that may submit and the directory of mmkd's socket.
if [ -z "$root" ]; then
	getent group mmk >/dev/null || fail "the postinst made no mmk group"
	got=$(stat -c '%a %U %G' /var/lib/mmk) || fail "the postinst made no /var/lib/mmk"
	[ "$got" = "750 root mmk" ] || fail "/var/lib/mmk is $got, want 750 root mmk"
	grep -q '^  socket_group: mmk$' /etc/mmk/mmk.yaml || fail "/etc/mmk/mmk.yaml does not set server.socket_group: mmk"
	echo "the mmk group and /var/lib/mmk (750 root mmk): ok"
fi

# Start mmkd as the unit does, with a free port and fake GPUs, in the
# package's state directory (with ROOT, one of its own).
exec_start=$(sed -n 's/^ExecStart=//p' "$r$unit")
[ "$exec_start" = "/usr/bin/mmkd --config /etc/mmk/mmk.yaml" ] || fail "ExecStart is \"$exec_start\""
# priv runs mmkd (and reads its token) as the unit does, as root, on
# this system; with ROOT, as the caller.
if [ -n "$root" ]; then
	state=$(mktemp -d)
	data=(--data-dir "$state")
	priv=""
else
	state=/var/lib/mmk
	data=()
	priv=$sudo
fi
port=$((20000 + RANDOM % 20000))
hook=()
# With ROOT, the hook's path is of the system, and so is the mmk group,
# which the postinst did not make there: the caller's group stands in.
[ -z "$root" ] || hook=("MMK_KERNELSCHED_HOOK=$r/usr/lib/mmk/libmmkhook.so" "MMK_SERVER_SOCKET_GROUP=$(id -g)")
log=$(mktemp)
$priv env "${hook[@]}" "$r/usr/bin/mmkd" --config "$r/etc/mmk/mmk.yaml" --backend fake "${data[@]}" --listen "127.0.0.1:$port" 2>"$log" &
pid=$!
users=()
cleanup() {
	$priv kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	for u in "${users[@]}"; do $sudo userdel "$u" >/dev/null 2>&1 || true; done
	[ -z "$root" ] || rm -rf "$state"
	rm -f "$log"
	"${dpkg[@]}" --purge mmk >/dev/null || true
}
trap cleanup EXIT
# Only /healthz answers without mmkd's token (DATA_DIR/token, 0600).
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && $priv test -s "$state/token" && break; sleep 0.1; done
$priv test -s "$state/token" || { cat "$log" >&2; fail "the installed mmkd wrote no token to $state/token"; }
token=$($priv cat "$state/token")
auth=(-H "Authorization: Bearer $token")
curl -fs "${auth[@]}" "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$log" >&2; fail "the installed mmkd did not answer /readyz"; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 401 ] || fail "the installed mmkd answered /readyz without its token"
curl -fs "${auth[@]}" "http://127.0.0.1:$port/api/v1/gpus" | grep -q '"model":"H100-80GB"' || fail "the installed mmkd serves no GPU"
MMK_TOKEN=$token "$r/usr/bin/mmkctl" --addr "127.0.0.1:$port" jobs >/dev/null || fail "mmkctl cannot talk to the installed mmkd"
grep -q "version=$version" "$log" || fail "mmkd's log does not name version $version"
grep -q "kernelsched=true" "$log" || fail "mmkd did not find the installed hook: $(grep -i kernel "$log")"
echo "mmkd started as the unit starts it and answered: ok"

# A member of the mmk group submits over the socket, as the README says
# (mmkctl finds /var/lib/mmk/mmkd.sock by itself), and the job runs as
# them; another user cannot connect.
if [ -z "$root" ]; then
	member=mmkcheck-in$$
	outsider=mmkcheck-out$$
	users=("$member" "$outsider")
	$sudo useradd --no-create-home --groups mmk "$member"
	$sudo useradd --no-create-home "$outsider"
	as() { local u=$1; shift; (cd /tmp && $sudo setpriv --reuid="$u" --regid="$u" --init-groups env -u MMK_ADDR -u MMK_TOKEN -u MMK_DATA_DIR HOME=/nonexistent "$@"); }
	out=$(as "$member" /usr/bin/mmkctl submit --name check-deb -- sh -c 'id -un; echo ckpt >"$MMK_CHECKPOINT_DIR/ok" && echo checkpoint written') ||
		{ cat "$log" >&2; fail "a member of mmk could not submit: $out"; }
	id=$(echo "$out" | awk 'NR == 2 {print $1}')
	for _ in $(seq 300); do
		st=$(as "$member" /usr/bin/mmkctl job "$id" -o json | grep -o '"state": *"[a-z]*"' | head -n 1)
		case $st in *succeeded* | *failed* | *cancelled*) break ;; esac
		sleep 0.1
	done
	case $st in *succeeded*) ;; *) cat "$log" >&2; fail "the member's job $id ended $st: $(as "$member" /usr/bin/mmkctl logs "$id" 2>&1)" ;; esac
	got=$(as "$member" /usr/bin/mmkctl logs "$id")
	[ "$(echo "$got" | head -n 1)" = "$member" ] || fail "the member's job ran as \"$(echo "$got" | head -n 1)\", not $member"
	echo "$got" | grep -q '^checkpoint written$' || fail "the member's job could not write its checkpoint directory: $got"
	echo "a member of mmk submitted a job that ran as them: ok"
	if out=$(as "$outsider" /usr/bin/mmkctl submit -- true 2>&1); then
		fail "a user outside mmk submitted a job: $out"
	fi
	echo "$out" | grep -q "permission denied" || fail "a user outside mmk was refused otherwise than by the socket: $out"
	echo "a user outside mmk is refused: ok ($out)"
fi
$priv kill "$pid"
wait "$pid" || true

for u in "${users[@]}"; do $sudo userdel "$u"; done
users=()
[ -z "$root" ] || rm -rf "$state"
rm -f "$log"
trap - EXIT
"${dpkg[@]}" --purge mmk
for f in /usr/bin/mmkd /usr/bin/mmkctl /usr/bin/mmk-dra /etc/mmk/mmk.yaml "$unit" /var/lib/mmk; do
	[ ! -e "$r$f" ] || fail "$f is left after dpkg --purge"
done
[ -n "$root" ] || getent group mmk >/dev/null || fail "dpkg --purge removed the mmk group"
echo "dpkg --purge removed it and kept the group: ok"
