#!/usr/bin/env bash
# hook-overhead.sh: what the hook costs a job with no co-runner, in its two
# phases, on resnet50 inference at batch 1 (launch-bound) and 32.
#
#   bench/gpu/hook-overhead.sh OUTDIR [ROUNDS] [ITERS]
#
# A kernel scheduler server (fikit) runs. Each round starts, one after the
# other, up to three processes per batch size, ITERS timed iterations each
# (torch.cuda.synchronize() after each) after 30 of warm-up. Batch 1, the
# launch-bound case where the hook's cost shows, runs plain and sharing in
# all ROUNDS rounds; the profiling variant and batch 32 run in the first
# FEW rounds (default 3). Jobs run on CPUs PIN_JOB (default 4-7) and the
# server on PIN_SRV (default 12-13), the same for every variant, so that
# process-to-process spread from CPU placement stays out of the ratios
# (empty: no pinning).
#   plain      no hook;
#   sharing    the hook, connected to the server as the only task, online
#              at priority 0, with its kernel profile present (written by
#              a profiling run before the rounds): every launch goes
#              through the shared-memory ring;
#   profiling  the hook in its profiling phase for the whole timed window
#              (an empty profile directory, --profile-runs without end):
#              CUPTI kernel activity records on.
# Rounds interleave the variants so that drifts of clock and temperature
# fall on all three. bench/gpu/overhead_report.py makes the table.
set -euo pipefail
out=${1:?usage: hook-overhead.sh OUTDIR [ROUNDS] [ITERS]}
rounds=${2:-8}
iters=${3:-1000}
few=${FEW:-3}
pin() { local cpus=$1; shift; if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi; }
PIN_JOB=${PIN_JOB-4-7}
PIN_SRV=${PIN_SRV-12-13}
if ! command -v taskset >/dev/null; then
	echo "hook-overhead.sh: no taskset; not pinning" >&2
	PIN_JOB= PIN_SRV=
fi
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
tmp=$(mktemp -d /tmp/mmk-ov.XXXX)
prof=$tmp/profiles
mkdir -p "$prof"
sock=$tmp/sched.sock
pin "$PIN_SRV" "$bin/mmkctl" kernelsched serve --socket "$sock" --policy fikit --profiles "$prof" --stats "$out/server.json" 2>"$out/server.log" &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
w=(python3 "$here/hook_workload.py" --job resnet50_infer --mode time --iters "$iters" --warmup 30)
tag() { sed "s/^{/{\"variant\": \"$1\", \"round\": $2, /"; }
# The profiles the sharing variant finds present.
for b in 1 32; do
	"$bin/mmkctl" run --profiles "$prof" --task-key "r50-bs$b" --name "r50-bs$b" --profile-skip 5 --profile-runs 200 -- "${w[@]}" --batch "$b" --iters 300 >/dev/null
done
ls -l "$prof" | tee "$out/profiles.txt"
for r in $(seq "$rounds"); do
	for b in 1 32; do
		[ "$b" = 1 ] || [ "$r" -le "$few" ] || continue
		pin "$PIN_JOB" "${w[@]}" --batch "$b" | tag plain "$r" | tee -a "$out/overhead.jsonl"
		pin "$PIN_JOB" "$bin/mmkctl" run --socket "$sock" --profiles "$prof" --task-key "r50-bs$b" --priority 0 --online --name "r50-bs$b" -- "${w[@]}" --batch "$b" |
			tag sharing "$r" | tee -a "$out/overhead.jsonl"
		[ "$r" -le "$few" ] || continue
		empty=$(mktemp -d "$tmp/empty.XXXX")
		pin "$PIN_JOB" "$bin/mmkctl" run --profiles "$empty" --task-key "r50-bs$b" --name "r50-bs$b" --profile-skip 0 --profile-runs 100000000 -- "${w[@]}" --batch "$b" 2>>"$out/profiling.log" |
			tag profiling "$r" | tee -a "$out/overhead.jsonl"
	done
done
kill -INT $srv
wait $srv || true
trap - EXIT
cat "$out/server.json"
