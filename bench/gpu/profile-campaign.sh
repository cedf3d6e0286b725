#!/usr/bin/env bash
# One chunk of the predictor's profiling campaign on a real GPU (resumable):
#   bash bench/gpu/profile-campaign.sh MMKCTL CSV [TIME_LIMIT [FLAGS...]]
# Runs `mmkctl profile` on GPU 0 for at most TIME_LIMIT (default 8m30s),
# appending to CSV, then copies CSV to $OUT. FLAGS go to mmkctl profile
# (--percents, --pairs, --triples, --reps, --priorities, --placements):
# give the same ones to every chunk. Run it again to go on.
set -euo pipefail
mmkctl=${1:?path of mmkctl}
csv=${2:?path of the CSV}
limit=${3:-8m30s}
shift $(($# < 3 ? $# : 3))
mkdir -p "$(dirname "$csv")"
start=$(date +%s)
"$mmkctl" profile --backend nvml --out "$csv" --time-limit "$limit" "$@" 2>&1 | tail -25
echo "chunk took $(($(date +%s) - start)) s"
[ -z "${OUT:-}" ] || cp "$csv" "$OUT/"
