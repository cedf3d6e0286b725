#!/usr/bin/env bash
# memlimit-e2e.sh: mmkd's memory limits end to end: a job with --memory
# 2GiB that allocates 4 GiB fails with the limit named in its record, and
# its co-runner finishes.
#
#   bench/gpu/memlimit-e2e.sh OUTDIR [nvml|fake]
#
# One mmkd (MPS on, kernel scheduling off unless KS=auto) runs a resnet50
# trainer as the co-runner (no memory of its own: no limit); once it
# trains, three jobs are submitted beside it:
#   hog    --memory ${LIMIT_GIB}GiB, memhog.py asks for ${HOG_GIB} GiB: must
#          fail with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT named in its reason;
#   fits   --memory ${FIT_GIB}GiB, memhog.py asks for ${HOG_GIB} GiB: must
#          succeed (a limit above what a job uses costs it nothing);
#   other  --memory ${LIMIT_GIB}GiB, exits 1 without touching the GPU: must
#          fail with its plain exit status, not the limit;
# and the co-runner must succeed, having run from before the hog failed
# to after. Results go to OUTDIR: memlimit-e2e.jsonl (one line per job:
# state, reason, exit code, what was wanted, ok; and the overlap),
# jobs.json (the records), metrics.txt (the mmk_job_* lines of /metrics,
# read every half second while the jobs run), jobs-wide.txt (mmkctl jobs
# -o wide meanwhile), the jobs' logs, mmkd.log and summary.txt. The script
# exits 1 when a check fails. MPS daemons are quit before it ends.
#
# DRY=1 runs without a GPU, as CI does (bench/gpu/memlimit_dry_test.go):
# the fake backend, MPS through the stand-in control program
# MMK_MPS_CONTROL names (mps/mpstest), the trainer's --dry, and memhog.py
# on bench/gpu/drytorch, a stand-in for torch whose device memory
# CUDA_MPS_PINNED_DEVICE_MEM_LIMIT limits as MPS does.
set -euo pipefail
out=${1:?usage: memlimit-e2e.sh OUTDIR [nvml|fake]}
backend=${2:-nvml}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/mmkd-lib.sh"
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
LIMIT_GIB=${LIMIT_GIB:-2}
FIT_GIB=${FIT_GIB:-6}
HOG_GIB=${HOG_GIB:-4}
HOLD_S=${HOLD_S:-2}
CO_ITERS=${CO_ITERS:-400}
CO_WARM_S=${CO_WARM_S:-10}
PHASE_MAX=${PHASE_MAX:-300}
addr=127.0.0.1:${PORT:-7078}
tmp=$(mktemp -d /tmp/mmk-memlimit-e2e.XXXX)
mmkd_pid=
capture_pid=
dry=()
# The jobs run as the user who runs this script (as root where it runs as
# root, which mmkd then must allow: jobs.allow_root).
envs=(MMK_MPS_ENABLED=true "MMK_KERNELSCHED_ENABLED=${KS:-false}" MMK_JOBS_ALLOW_ROOT=true)
if [ "${DRY:-0}" = 1 ]; then
	dry=(--dry)
	backend=fake
	[ -x "${MMK_MPS_CONTROL:-}" ] || { echo "DRY=1 needs MMK_MPS_CONTROL: a stand-in for nvidia-cuda-mps-control (mps/mpstest writes one)" >&2; exit 2; }
	envs+=("MMK_MPS_CONTROL=$MMK_MPS_CONTROL" "PYTHONPATH=$here/drytorch${PYTHONPATH:+:$PYTHONPATH}")
else
	ctl=${MMK_MPS_CONTROL:-$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)}
	envs+=("MMK_MPS_CONTROL=$ctl")
fi

cleanup() {
	[ -n "$capture_pid" ] && kill "$capture_pid" 2>/dev/null && wait "$capture_pid" 2>/dev/null || true
	[ -n "$mmkd_pid" ] && kill "$mmkd_pid" 2>/dev/null && wait "$mmkd_pid" 2>/dev/null || true
	# mmkd leaves MPS daemons running for jobs that outlive it: quit them.
	for p in "$tmp"/data/mps/*/pipe; do quit_mps "$p" "${MMK_MPS_CONTROL:-${ctl:-nvidia-cuda-mps-control}}"; done
	rm -rf "$tmp"
}
trap cleanup EXIT

nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv,noheader >"$out/gpu.txt" 2>/dev/null || echo "no nvidia-smi" >"$out/gpu.txt"
env "${envs[@]}" "$bin/mmkd" --backend "$backend" --data-dir "$tmp/data" --listen "$addr" 2>"$out/mmkd.log" &
mmkd_pid=$!
mmkd_ready "$tmp/data" "$addr" || { echo "mmkd did not start; see $out/mmkd.log" >&2; exit 1; }
auth=("${mmkd_auth[@]}")
mk=(env MMK_DATA_DIR="$tmp/data" "$bin/mmkctl" --addr "$addr")

# submit NAME MMKCTL-ARGS... -- COMMAND...: the job's id.
submit() {
	local name=$1
	shift
	"${mk[@]}" submit -o json --name "$name" "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}

# state ID: the job's state.
state() { "${mk[@]}" job -o json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }

terminal() { case $1 in succeeded | failed | cancelled) return 0 ;; esac; return 1; }

co=$(submit co-runner -- python3 "$here/e2e_job.py" train --job resnet50_train --iters "$CO_ITERS" "${dry[@]}")
for _ in $(seq 600); do [ "$(state "$co")" = running ] && break; sleep 0.5; done
sleep "$CO_WARM_S"

: >"$out/metrics.txt"
: >"$out/jobs-wide.txt"
# What /metrics and mmkctl jobs -o wide say every half second while the
# jobs run, in the background so that a slow state check misses nothing.
(
	while [ ! -e "$tmp/stop-capture" ]; do
		{ echo "# $(date +%s.%N)"; curl -fs "${auth[@]}" "http://$addr/metrics" | grep '^mmk_job_' || true; } >>"$out/metrics.txt"
		{ echo "# $(date +%s.%N)"; "${mk[@]}" jobs -o wide || true; } >>"$out/jobs-wide.txt"
		sleep 0.5
	done
) &
capture_pid=$!
hog=$(submit memhog --memory "${LIMIT_GIB}GiB" -- python3 "$here/memhog.py" --gib "$HOG_GIB" --hold-s "$HOLD_S")
fits=$(submit memhog-fits --memory "${FIT_GIB}GiB" -- python3 "$here/memhog.py" --gib "$HOG_GIB" --hold-s "$HOLD_S")
other=$(submit other-failure --memory "${LIMIT_GIB}GiB" -- python3 -c 'import sys; print("failing for a reason of its own"); sys.exit(1)')

deadline=$(($(date +%s) + PHASE_MAX))
while :; do
	left=0
	for id in "$co" "$hog" "$fits" "$other"; do terminal "$(state "$id")" || left=$((left + 1)); done
	[ "$left" = 0 ] && break
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "$left job(s) unfinished after ${PHASE_MAX}s; cancelling" | tee -a "$out/summary.txt"
		for id in "$co" "$hog" "$fits" "$other"; do "${mk[@]}" cancel "$id" >/dev/null 2>&1 || true; done
		sleep 3
		break
	fi
	sleep 0.5
done
touch "$tmp/stop-capture"
wait "$capture_pid" || true
capture_pid=

: >"$out/memlimit-e2e.jsonl"
echo "[" >"$out/jobs.json"
sep=
failed=0
# check CASE ID WANT-STATE WANT-IN-REASON REFUSE-IN-REASON: one line of memlimit-e2e.jsonl.
check() {
	local rec ok
	rec=$("${mk[@]}" job -o json "$2")
	"${mk[@]}" logs "$2" >"$out/$1.log" 2>&1 || true
	printf '%s%s\n' "$sep" "$rec" >>"$out/jobs.json"
	sep=,
	ok=$(REC=$rec python3 -c '
import json, os, sys
j = json.loads(os.environ["REC"])
want_state, want, refuse = sys.argv[1:4]
r = j.get("reason", "")
print(json.dumps(j["state"] == want_state and want in r and (refuse == "" or refuse not in r)))' "$3" "$4" "$5")
	CASE=$1 REC=$rec WS=$3 WR=$4 OK=$ok python3 -c '
import json, os
j = json.loads(os.environ["REC"])
print(json.dumps({"case": os.environ["CASE"], "id": j["id"], "state": j["state"], "reason": j.get("reason", ""),
                  "exit_code": j.get("exitCode"), "mem_limit_mib": (j.get("placement") or {}).get("memLimitMiB", 0),
                  "want_state": os.environ["WS"], "want_in_reason": os.environ["WR"], "ok": json.loads(os.environ["OK"])}))' >>"$out/memlimit-e2e.jsonl"
	[ "$ok" = true ] || failed=1
}
check co-runner "$co" succeeded "" ""
check hog "$hog" failed "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=" ""
check fits "$fits" succeeded "" ""
check other "$other" failed "exit status 1" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
echo "]" >>"$out/jobs.json"
# The co-runner must have run beside the hog: started before it failed,
# ended after.
python3 -c '
import json, sys
jobs = {j["spec"]["name"]: j for j in json.load(open(sys.argv[1]))}
co, hog = jobs["co-runner"], jobs["memhog"]
ok = co["startedAt"] < hog["finishedAt"] < co.get("finishedAt", "9")
print(json.dumps({"case": "overlap", "co_runner_started": co["startedAt"], "hog_failed": hog["finishedAt"],
                  "co_runner_ended": co.get("finishedAt", ""), "ok": ok}))' "$out/jobs.json" >>"$out/memlimit-e2e.jsonl"
grep -q '"case": "overlap".*"ok": true' "$out/memlimit-e2e.jsonl" || failed=1
grep '^{' "$out/co-runner.log" | tail -n 1 >"$out/co-runner.report.json" || true
{
	cat "$out/gpu.txt"
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["case"] == "overlap":
        print("overlap    the co-runner ran from %s to %s, the hog failed at %s: ok=%s" % (r["co_runner_started"], r["co_runner_ended"], r["hog_failed"], r["ok"]))
        continue
    print("%-10s %-9s ok=%-5s exit=%s limit=%s MiB  %s" % (r["case"], r["state"], r["ok"], r["exit_code"], r["mem_limit_mib"], r["reason"]))' "$out/memlimit-e2e.jsonl"
	echo "co-runner report: $(cat "$out/co-runner.report.json")"
} | tee -a "$out/summary.txt"
exit "$failed"
