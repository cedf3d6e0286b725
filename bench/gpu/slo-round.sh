#!/usr/bin/env bash
# slo-round.sh R [SLO_ARGS...]: one round of the SLO benchmark for one
# call of the GPU machine, everything packed into $OUT/rR.tgz.
#
#   MMK_BIN=.dev/gpu bench/gpu/slo-round.sh 50 --trainers resnet152:32 ...
#
# The flags after R go to slo.py (SLO_ARGS); the round number rotates the
# settings' order (slo.py). The round's folder is /tmp/slo-rR; its
# windows, rungs, requests, logs and report go into the archive, and the
# report's verdict lines to stdout. Needs MMK_BIN (mmkctl and
# libmmkhook.so built on the build machine) and OUT (the device tool's).
set -u
r=${1:?usage: slo-round.sh ROUND [SLO_ARGS...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
o=/tmp/slo-r$r
mkdir -p "$o"
SLO_ARGS="$*" timeout 570 bash "$here/slo.sh" "$o" 1 "$r" >"$o/run.log" 2>&1
echo "slo-round.sh: round $r rc=$?"
tail -5 "$o/run.log"
grep -A12 "## The issue's questions" "$o/report.md" 2>/dev/null
tar czf "${OUT:?}/r$r.tgz" -C /tmp "slo-r$r"
