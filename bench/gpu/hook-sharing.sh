#!/usr/bin/env bash
# hook-sharing.sh: the hook's overhead in the sharing phase with no
# co-runner: a kernel scheduler server (fikit) runs, the job connects as
# the only, top-priority task, and every launch is reported through the
# shared-memory ring. ROUNDS interleaved pairs of processes, without and
# with the hook, 300 timed iterations each, resnet50 inference batch 1
# and 32.
#
#   bench/gpu/hook-sharing.sh OUTDIR [ROUNDS]
set -euo pipefail
out=${1:?usage: hook-sharing.sh OUTDIR [ROUNDS]}
rounds=${2:-5}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$here/../.." && pwd)/bin
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
sock=$(mktemp -d /tmp/mmk-ks.XXXX)/sched.sock
"$bin/mmkctl" kernelsched serve --socket "$sock" --policy fikit --stats "$out/server.json" 2>"$out/server.log" &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
sleep 1
w="python3 $here/hook_workload.py"
for b in 1 32; do
  for r in $(seq "$rounds"); do
    $w --job resnet50_infer --batch "$b" --mode time --iters 300 --warmup 20 | sed 's/^{/{"hook": false, /' | tee -a "$out/sharing.jsonl"
    "$bin/mmkctl" run --socket "$sock" --priority 0 --online --name "r50-bs$b" -- $w --job resnet50_infer --batch "$b" --mode time --iters 300 --warmup 20 | sed 's/^{/{"hook": true, /' | tee -a "$out/sharing.jsonl"
  done
done
kill -INT $srv; wait $srv || true
cat "$out/server.json"
