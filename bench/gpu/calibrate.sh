#!/usr/bin/env bash
# calibrate.sh: the latency controller's plant measured on a real GPU
# (issue 52): each rung and static setting beside each trainer mix.
#
#   bench/gpu/calibrate.sh OUTDIR --mix vgg19:32 [--mix MODEL:BATCH,...] [calibrate.py's flags]
#
# Runs bench/gpu/calibrate.py (its docstring says what it measures),
# appending to OUTDIR/calib.jsonl, which `mmkctl sim slo --calibration`
# and the scenario suite (sim/slosuite) read. Needs mmkctl and
# libmmkhook.so in MMK_BIN (make build). DRY=1 runs the protocol with
# sleeping workers and no GPU (CI: calibrate_dry_test.go). No MIG change;
# the MPS daemon uses a pipe directory under /tmp and is quit before the
# script ends.
set -euo pipefail
out=${1:?usage: calibrate.sh OUTDIR --mix MODEL:BATCH[,...] [flags]}
shift
here=$(cd "$(dirname "$0")" && pwd)
export MMK_BIN=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
. "$here/mmkd-lib.sh"
fake_or_machine "$out"
python3 "$here/calibrate.py" --out "$out" --bin "$MMK_BIN" "${fake[@]}" "$@"
