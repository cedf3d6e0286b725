#!/usr/bin/env bash
# hook-toggle.sh: the sharing phase's cost inside one process, on resnet50
# inference at batch 1 (launch-bound) and 32.
#
#   bench/gpu/hook-toggle.sh OUTDIR [BLOCKS] [ITERS]
#
# Two kernel scheduler servers (fikit) run: one loud (--loud: every hook
# reports every launch, as while the task shares its instance with a task
# fikit holds), one as by default (a task alone is quiet: its hook turns
# the launch callbacks off and reports only synchronisations, protocol
# step 8). For each batch size a profiling run writes the task's profile;
# then one process runs under the hook, the only task of a server, online
# at priority 0 with its profile present, and times BLOCKS blocks of ITERS
# iterations with the hook's callbacks on and off in turn (on, off, off,
# on, ...; hook_workload.py --mode toggle). "Off" is CUPTI loaded with no
# callback enabled: the job as if unhooked. The ratio of the two sides is
# the hook's cost, free of the process-to-process spread that
# hook-overhead.sh's separate processes carry. Then, at batch 1, the same
# without a server (MMK_SCHED_SOCKET unset: the hook's callbacks decode and
# name each launch but report nothing), so that CUPTI's callback cost is
# told apart from the reporting's. Results: OUTDIR/toggle.jsonl (the field
# "server" says which: 1 loud, 2 quiet, 0 none).
set -euo pipefail
out=${1:?usage: hook-toggle.sh OUTDIR [BLOCKS] [ITERS]}
blocks=${2:-40}
iters=${3:-50}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
tmp=$(mktemp -d /tmp/mmk-tg.XXXX)
prof=$tmp/profiles
mkdir -p "$prof"
loud=$tmp/loud.sock
quiet=$tmp/quiet.sock
"$bin/mmkctl" kernelsched serve --socket "$loud" --loud --policy fikit --profiles "$prof" --stats "$out/toggle-server-loud.json" 2>"$out/toggle-server-loud.log" &
srv_loud=$!
"$bin/mmkctl" kernelsched serve --socket "$quiet" --policy fikit --profiles "$prof" --stats "$out/toggle-server-quiet.json" 2>"$out/toggle-server-quiet.log" &
srv_quiet=$!
trap 'kill $srv_loud $srv_quiet 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$loud" ] && [ -S "$quiet" ] && break; sleep 0.1; done
w=(python3 "$here/hook_workload.py" --job resnet50_infer --warmup 30)
# summary adds "server" (1: loud, 2: quiet, 0: interception only) to the
# line and prints a digest of it on stderr.
summary='import json,sys
r=json.loads(sys.stdin.read()); r["server"]=int(sys.argv[1]); print(json.dumps(r))
print("bs", r["batch"], "server", r["server"], "p50 on/off", round(r["iter_ms_p50_on"],3), round(r["iter_ms_p50_off"],3), "ratio p50 %+.2f %%" % ((r["ratio_p50"]-1)*100), "mean %+.2f %%" % ((r["ratio_mean"]-1)*100), "block pairs %+.2f %%" % ((r["block_ratio_median"]-1)*100), "seen on/off", r["kernels_seen_on"], r["kernels_seen_off"], file=sys.stderr)'
for b in 1 32; do
	"$bin/mmkctl" run --profiles "$prof" --task-key "r50-bs$b" --name "r50-bs$b" --profile-skip 5 --profile-runs 100 -- "${w[@]}" --mode time --batch "$b" --iters 150 >/dev/null
	for s in 1 2; do
		sock=$loud
		[ "$s" = 2 ] && sock=$quiet
		"$bin/mmkctl" run --socket "$sock" --profiles "$prof" --task-key "r50-bs$b" --priority 0 --online --name "r50-bs$b" -- "${w[@]}" --mode toggle --batch "$b" --blocks "$blocks" --iters "$iters" |
			python3 -c "$summary" "$s" | tee -a "$out/toggle.jsonl"
	done
done
"$bin/mmkctl" run --profiles "$prof" --task-key r50-bs1 --priority 0 --online --name r50-bs1 -- "${w[@]}" --mode toggle --batch 1 --blocks "$blocks" --iters "$iters" |
	python3 -c "$summary" 0 | tee -a "$out/toggle.jsonl"
kill -INT $srv_loud $srv_quiet
wait $srv_loud $srv_quiet || true
trap - EXIT
cat "$out/toggle-server-loud.json" "$out/toggle-server-quiet.json"
