#!/usr/bin/env bash
# pareto.sh: co-location settings side by side on a real GPU, then the report.
#
#   bench/gpu/pareto.sh OUTDIR main [alexnet keypoint mask]
#
# For each pair, bench/gpu/pareto.py runs every setting in the same
# processes (per MPS state), cycled in rounds with alone measured in each
# (see its docstring); OUTDIR/windows.jsonl collects the windows of all
# pairs, and bin/pareto (go build ./bench/pareto) prints the tables.
# PARETO_ARGS passes more flags to pareto.py (e.g. "--cycles 3").
# Needs bin/mmkctl and bin/libmmkhook.so (make build) in MMK_BIN. No MIG
# change; the MPS daemon pareto.py starts uses a pipe directory under /tmp
# and is quit before it returns.
set -euo pipefail
out=${1:?usage: pareto.sh OUTDIR PAIR...}
shift
[ $# -gt 0 ] || set -- main
here=$(cd "$(dirname "$0")" && pwd)
export MMK_BIN=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
{
	date -u +%FT%TZ
	nvidia-smi --query-gpu=name,driver_version,mig.mode.current,compute_mode,clocks.max.sm,clocks.max.mem,power.limit --format=csv
	echo "cpus $(nproc)"
	lscpu | grep -E "^(Model name|Thread|Core|Socket|NUMA node\(s\)|CPU max MHz)" || true
	uptime
} | tee -a "$out/machine.txt"
for pair in "$@"; do
	# shellcheck disable=SC2086 # PARETO_ARGS: flags, split
	python3 "$here/pareto.py" --out "$out" --pair "$pair" --mmkctl "$MMK_BIN/mmkctl" ${PARETO_ARGS:-}
done
if [ -x "$MMK_BIN/pareto" ]; then
	"$MMK_BIN/pareto" "$out/windows.jsonl" | tee "$out/report.md"
fi
