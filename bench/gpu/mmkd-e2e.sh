#!/usr/bin/env bash
# mmkd-e2e.sh: mmkd end to end on a real GPU (MIG stays as it is), against
# the same jobs started together without mmk.
#
#   bench/gpu/mmkd-e2e.sh OUTDIR [nvml|fake]
#
# Six jobs (bench/gpu/e2e_job.py): two online inference request loops
# (resnet50 and mobilenet_v2, batch 1, 2 ms think time, SERVE_S seconds)
# and four finite offline trainers (resnet50, vgg19, bert, densenet201).
#   baseline  all six started at once, no mmk: the GPU's default sharing;
#   mmk       mmkd with the backend given (nvml: MPS and the hook when
#             found), the six submitted over its REST API (mmkctl) at once,
#             with workload hints of their profiled types.
# Each phase ends when every job has, or after PHASE_MAX seconds (what is
# left is stopped and reported unfinished). Results go to OUTDIR: one JSON
# line per job and phase (the job's own report, with mmk's job record),
# mmkd's log, plan, reconfigurations and kernel scheduler counters;
# bench/gpu/e2e_report.py OUTDIR makes the table. MPS daemons mmkd started
# are quit before the script ends. DRY=1 runs the jobs without a GPU
# (e2e_job.py --dry), with the fake backend, to test the orchestration.
set -euo pipefail
out=${1:?usage: mmkd-e2e.sh OUTDIR [nvml|fake]}
backend=${2:-nvml}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
SERVE_S=${SERVE_S:-60}
PHASE_MAX=${PHASE_MAX:-240}
dry=()
[ "${DRY:-0}" = 1 ] && dry=(--dry)
job=(python3 "$here/e2e_job.py")
addr=127.0.0.1:${PORT:-7077}
data=$(mktemp -d /tmp/mmk-e2e.XXXX)
mmkd_pid=

# name kind hint args...: the jobs, the same in both phases.
JOBS=(
	"r50-serve online resnet50:1:infer serve --job resnet50_infer --batch 1 --think-ms 2 --seconds $SERVE_S"
	"mobilenet-serve online mobilenet:1:infer serve --job mobilenet_infer --batch 1 --think-ms 2 --seconds $SERVE_S"
	"resnet50-train offline resnet50:32:train train --job resnet50_train --iters ${R50_ITERS:-600}"
	"vgg19-train offline vgg19:32:train train --job vgg19_train --iters ${VGG_ITERS:-300}"
	"bert-train offline bert:8:train train --job bert_train --iters ${BERT_ITERS:-400}"
	"densenet201-train offline densenet201:16:train train --job densenet201_train --iters ${DENSE_ITERS:-300}"
)

cleanup() {
	[ -n "$mmkd_pid" ] && kill "$mmkd_pid" 2>/dev/null && wait "$mmkd_pid" 2>/dev/null || true
	# mmkd leaves MPS daemons running for jobs that outlive it; this run
	# quits them.
	for p in "$data"/mps/*/pipe; do
		[ -d "$p" ] || continue
		echo quit | CUDA_MPS_PIPE_DIRECTORY="$p" nvidia-cuda-mps-control >/dev/null 2>&1 || true
	done
}
trap cleanup EXIT

nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv,noheader >"$out/gpu.txt" 2>/dev/null || echo "no nvidia-smi" >"$out/gpu.txt"

# --- baseline: the six at once, no mmk.
echo "baseline: $(date +%T)"
t0=$(date +%s.%N)
pids=()
for spec in "${JOBS[@]}"; do
	read -r name kind hint args <<<"$spec"
	# shellcheck disable=SC2086 # args: the job's arguments, split
	"${job[@]}" $args "${dry[@]}" >"$out/base-$name.out" 2>"$out/base-$name.err" &
	pids+=($!)
done
deadline=$(( $(date +%s) + PHASE_MAX ))
while kill -0 "${pids[@]}" 2>/dev/null; do
	# kill -0 of several pids fails only when none is left... or one is:
	# count the live ones.
	live=0
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && live=$((live + 1)); done
	[ "$live" = 0 ] && break
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "baseline: $live job(s) unfinished after ${PHASE_MAX}s; stopping them"
		kill "${pids[@]}" 2>/dev/null || true
		break
	fi
	sleep 1
done
for p in "${pids[@]}"; do wait "$p" || true; done
for spec in "${JOBS[@]}"; do
	read -r name kind hint args <<<"$spec"
	line=$(grep '^{' "$out/base-$name.out" | tail -n 1 || true)
	[ -n "$line" ] || line='{"unfinished": true}'
	echo "{\"phase\": \"baseline\", \"name\": \"$name\", \"kind\": \"$kind\", \"t0\": $t0, \"report\": $line}" >>"$out/e2e.jsonl"
done

# --- mmk: the same six through mmkd.
echo "mmk: $(date +%T)"
cupti=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
[ -e "$cupti" ] && export MMK_KERNELSCHED_CUPTI=$cupti
"$bin/mmkd" --backend "$backend" --data-dir "$data" --listen "$addr" 2>"$out/mmkd.log" &
mmkd_pid=$!
for _ in $(seq 300); do curl -fs "http://$addr/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
mk=("$bin/mmkctl" --addr "$addr")
t0=$(date +%s.%N)
declare -A ids
for spec in "${JOBS[@]}"; do
	read -r name kind hint args <<<"$spec"
	# shellcheck disable=SC2086 # args: the job's arguments, split
	id=$("${mk[@]}" submit -o json --name "$name" "--$kind" --workload "$hint" --memory 8GiB -- "${job[@]}" $args "${dry[@]}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	ids[$name]=$id
done
deadline=$(( $(date +%s) + PHASE_MAX ))
while :; do
	left=$("${mk[@]}" jobs -o json | python3 -c 'import json,sys; print(sum(j["state"] not in ("succeeded","failed","cancelled") for j in json.load(sys.stdin)))')
	[ "$left" = 0 ] && break
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "mmk: $left job(s) unfinished after ${PHASE_MAX}s; cancelling"
		for id in "${ids[@]}"; do "${mk[@]}" cancel "$id" >/dev/null 2>&1 || true; done
		sleep 3
		break
	fi
	sleep 1
done
"${mk[@]}" plan -o json >"$out/plan.json" 2>&1 || true
curl -fs "http://$addr/api/v1/reconfigs" >"$out/reconfigs.json" || true
curl -fs "http://$addr/api/v1/kernelsched" >"$out/kernelsched.json" || true
for spec in "${JOBS[@]}"; do
	read -r name kind hint args <<<"$spec"
	id=${ids[$name]}
	"${mk[@]}" job -o json "$id" >"$out/mmk-$name.job.json" || true
	line=$("${mk[@]}" logs "$id" 2>/dev/null | grep '^{' | tail -n 1 || true)
	[ -n "$line" ] || line='{"unfinished": true}'
	rec=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$out/mmk-$name.job.json" 2>/dev/null || echo '{}')
	echo "{\"phase\": \"mmk\", \"name\": \"$name\", \"kind\": \"$kind\", \"t0\": $t0, \"report\": $line, \"job\": $rec}" >>"$out/e2e.jsonl"
done
python3 "$here/e2e_report.py" "$out"
