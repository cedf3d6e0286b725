#!/usr/bin/env bash
# memlimit.sh: does CUDA_MPS_PINNED_DEVICE_MEM_LIMIT hold on this GPU, and
# does a client that hits it leave its co-runner alone? (no mmk: the MPS
# facts mmkd's memory limits rely on)
#
#   bench/gpu/memlimit.sh OUTDIR
#
# Under one MPS daemon (pipe directory under /tmp, quit at the end): a
# resnet50 trainer runs as the co-runner while memhog.py asks for 4 GiB
# (a) with no limit, (b) with the limit 0=2G, (c) with 0=2048M; each prints
# one JSON line into OUTDIR/memlimit.jsonl with its exit code, and the
# co-runner's report follows.
set -euo pipefail
out=${1:?usage: memlimit.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/mmk-memlimit.XXXX)
export CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe CUDA_MPS_LOG_DIRECTORY=$tmp/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true; cp "$CUDA_MPS_LOG_DIRECTORY"/*.log "$out"/ 2>/dev/null || true' EXIT
python3 "$here/e2e_job.py" train --job resnet50_train --iters "${CO_ITERS:-600}" >"$out/corunner.out" 2>"$out/corunner.err" &
co=$!
sleep "${CO_WARM_S:-12}"
for limit in "" 0=2G 0=2048M; do
	rc=0
	if [ -n "$limit" ]; then
		CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$limit python3 "$here/memhog.py" --gib 4 >"$out/hog.out" 2>"$out/hog-$limit.err" || rc=$?
	else
		python3 "$here/memhog.py" --gib 4 >"$out/hog.out" 2>"$out/hog-none.err" || rc=$?
	fi
	echo "{\"case\": \"${limit:-none}\", \"rc\": $rc, \"hog\": $(grep '^{' "$out/hog.out" | tail -n 1 || echo null), \"corunner_alive\": $(kill -0 "$co" 2>/dev/null && echo true || echo false)}" | tee -a "$out/memlimit.jsonl"
done
corc=0
wait "$co" || corc=$?
echo "{\"case\": \"corunner\", \"rc\": $corc, \"report\": $(grep '^{' "$out/corunner.out" | tail -n 1 || echo null)}" | tee -a "$out/memlimit.jsonl"
