#!/usr/bin/env bash
# hook-measure.sh: the hook's coverage and overhead on the GPU machine.
#
#   bench/gpu/hook-measure.sh OUTDIR [ROUNDS]
#
# Needs bin/libmmkhook.so (make hook). Coverage: for resnet50 inference at
# batch 1 and 32 and BERT training, the kernels the hook saw over 20
# iterations against torch.profiler's kernel count over the same 20
# iterations (separate processes: CUPTI takes one subscriber, so the hook
# and the profiler cannot share one). Overhead: ROUNDS (default 5)
# interleaved pairs of processes, without and with the hook, 300 timed
# iterations each after 20 of warm-up; the hook only counts (no scheduler).
set -euo pipefail
out=${1:?usage: hook-measure.sh OUTDIR [ROUNDS]}
rounds=${2:-5}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
hook=$(cd "$here/../.." && pwd)/bin/libmmkhook.so
[ -f "$hook" ] || { echo "no $hook: run make hook" >&2; exit 1; }
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
w="python3 $here/hook_workload.py"
cases=("resnet50_infer 1" "resnet50_infer 32" "bert_train 8")
for c in "${cases[@]}"; do
  set -- $c
  CUDA_INJECTION64_PATH=$hook $w --job "$1" --batch "$2" --mode count --iters 20 | tee -a "$out/coverage.jsonl"
  $w --job "$1" --batch "$2" --mode profile --iters 20 | tee -a "$out/coverage.jsonl"
done
for c in "resnet50_infer 1" "resnet50_infer 32"; do
  set -- $c
  for r in $(seq "$rounds"); do
    $w --job "$1" --batch "$2" --mode time --iters 300 --warmup 20 | sed 's/^{/{"hook": false, /' | tee -a "$out/overhead.jsonl"
    CUDA_INJECTION64_PATH=$hook $w --job "$1" --batch "$2" --mode time --iters 300 --warmup 20 | sed 's/^{/{"hook": true, /' | tee -a "$out/overhead.jsonl"
  done
done
