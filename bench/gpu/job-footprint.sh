#!/usr/bin/env bash
# Measures, for each MMK Table III job of bench/workloads/workload.py, run
# alone on the whole GPU: its start-up time to the first finished iteration
# (the cost of restarting a job, checkpoint load aside) and the device
# memory it uses (CUDA context included). The job-level simulator's job
# table (trace/jobs_table.go) takes its memory and restart defaults from
# this output. Run on the GPU machine from the repository root; results go
# to $OUT/job-footprint.jsonl (one JSON line per job and repetition).
set -uo pipefail
out=${OUT:-/tmp}/job-footprint.jsonl
: >"$out"
jobs=$(python3 -c 'import sys; sys.path.insert(0, "bench/workloads"); import workload; print(" ".join(sorted(workload.JOBS)))')
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
for rep in 1 2; do
	for j in $jobs; do
		line=$(python3 bench/workloads/workload.py --job "$j" --warmup 1 --seconds 1 2>/dev/null | tail -1)
		echo "{\"rep\": $rep, \"result\": ${line:-null}}" | tee -a "$out"
	done
done
