#!/usr/bin/env bash
# slo.sh: the SLO benchmark (issue 34) on a real GPU, then its report.
#
#   bench/gpu/slo.sh OUTDIR [ROUNDS [ROUND0]]
#
# Runs bench/gpu/slo.py ROUNDS times (round numbers from ROUND0, which
# rotate the order of the settings), appending to OUTDIR/windows.jsonl
# and OUTDIR/slo.jsonl, then bench/gpu/slo_report.py writes
# OUTDIR/report.md and a plot per round. One round is sized for one
# 10-minute call of the GPU machine (about 8 minutes). SLO_ARGS passes
# more flags to slo.py (e.g. "--slo svc-b32=p99=40ms --timeslice").
# Needs mmkctl and libmmkhook.so in MMK_BIN (make build). DRY=1 runs the
# protocol with sleeping workers and no GPU (CI: slo_dry_test.go). No MIG
# change; each round's MPS daemon uses a pipe directory under /tmp and is
# quit before the round ends.
set -euo pipefail
out=${1:?usage: slo.sh OUTDIR [ROUNDS [ROUND0]]}
rounds=${2:-1}
round0=${3:-0}
here=$(cd "$(dirname "$0")" && pwd)
export MMK_BIN=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
. "$here/mmkd-lib.sh"
fake_or_machine "$out"
for ((r = round0; r < round0 + rounds; r++)); do
	echo "slo.sh: round $r"
	# shellcheck disable=SC2086 # SLO_ARGS: flags, split
	python3 "$here/slo.py" --out "$out" --round "$r" --bin "$MMK_BIN" "${fake[@]}" ${SLO_ARGS:-}
done
