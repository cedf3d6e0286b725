#!/usr/bin/env bash
# mmkd-e2e.sh: mmkd end to end on a real GPU (MIG stays as it is), against
# the same jobs without mmk and against what a savvy user would do by hand.
#
#   bench/gpu/mmkd-e2e.sh OUTDIR [nvml|fake]
#
# Six jobs (bench/gpu/e2e_job.py): two online inference request loops
# (resnet50 and mobilenet_v2, batch 1, 2 ms think time, SERVE_S seconds)
# and four finite offline trainers (resnet50, vgg19, bert, densenet201).
# Each round runs these phases, in an order rotated from round to round,
# and reversed on odd rounds, so that drifts of the machine fall on every
# phase and no phase always follows the same one:
#   alone     each job by itself, one after another (online ones for
#             ALONE_S seconds): the references of every ratio;
#   baseline  all six started at once, no mmk: the GPU's time-sharing;
#   mps-prio  all six at once under one MPS daemon, the offline ones at
#             CUDA_MPS_CLIENT_PRIORITY=1 (below the online ones): what a
#             savvy user does by hand, the strongest simple alternative;
#   mmk       mmkd with the backend given (nvml: MPS and the hook when
#             found), the six submitted over its REST API (mmkctl) at once
#             (six mmkctl calls in parallel, as the by-hand phase starts
#             its six processes), with workload hints of their profiled
#             types;
#   mps-own   (only when named in PHASES; GPUS >= 2) as mps-prio, but
#             the online jobs on GPUs of their own by hand: round-robin
#             on the first half of the GPUs, the offline ones on the rest;
#   mmk-nohook (only when named in PHASES) mmk with kernel scheduling off
#             (MMK_KERNELSCHED_ENABLED=false: no hook, no CUPTI in the
#             jobs): what the hook costs end to end.
# GPUS (default 1) is how many GPUs the run uses. With 2 or more the job
# set is JOBSET=twelve (four online request loops, resnet50, mobilenet_v2,
# resnet18 and densenet121, and eight trainers): by hand, job i runs on
# GPU i mod GPUS (CUDA_VISIBLE_DEVICES=its UUID; under mps-prio one MPS
# control daemon serves them all), alone on the first GPU; mmkd manages
# the same GPUs (MMK_GPU_DEVICES), however many the host has. JOBSET=six (the default with one GPU) is the six
# above. JOBSET=sim is a case the job simulator can replay (issue 21: check
# the simulator against a real run of the same jobs): three services at
# batch 32 with open-loop Poisson requests (e2e_job.py serve --rate:
# resnet50 R50_RATE, default 20/s; mobilenet_v2 MOBILE_RATE, 40/s; vgg16
# VGG16_RATE, 10/s) and three trainers (resnet50, vgg19, bert).
# SLO (e.g. p99=1.5x), where set, is every online job's latency target:
# mmkd gets it on submission (--slo), and the report gives each phase's
# share of requests within it (the ratio against the service's p99 alone in
# the same round; JOBSET=sim, whose services report every latency).
# ROUNDS rounds (default 2), numbered from ROUND0 (default 0; to split the
# rounds over several calls into one OUTDIR). A phase ends when every job
# has, or after PHASE_MAX seconds (what is left is stopped and reported
# unfinished). Results go to OUTDIR: e2e.jsonl, one JSON line per round,
# phase and job (the job's own report; under mmk its job record too);
# per round mmkd's log, plan, reconfigurations and kernel scheduler
# counters; report.md and timeline-*.svg from bench/gpu/e2e_report.py.
# Under mmk the phase starts once mmkd has mapped each GPU's TPC slots
# (slo.masks, the first start on a GPU and driver; later phases of the
# call start their mmkd with the maps kept): per round its masks as the
# latency view says them (r*-mmk-masks.json, and a line in the output)
# and the maps (r*-mmk-tpcmaps/).
# MPS daemons are quit before the script ends. DRY=1 runs the jobs
# without a GPU (e2e_job.py --dry, no MPS daemon), with the fake backend,
# to test the orchestration.
set -euo pipefail
out=${1:?usage: mmkd-e2e.sh OUTDIR [nvml|fake]}
backend=${2:-nvml}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/mmkd-lib.sh"
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
SERVE_S=${SERVE_S:-25}
ALONE_S=${ALONE_S:-10}
PHASE_MAX=${PHASE_MAX:-240}
ROUNDS=${ROUNDS:-2}
ROUND0=${ROUND0:-0}
PHASES=${PHASES:-alone baseline mps-prio mmk}
dry=()
[ "${DRY:-0}" = 1 ] && dry=(--dry)
job=(python3 "$here/e2e_job.py")
addr=127.0.0.1:${PORT:-7077}
tmp=$(mktemp -d /tmp/mmk-e2e.XXXX)
mmkd_pid=
mps_pipe=

GPUS=${GPUS:-1}
JOBSET=${JOBSET:-$([ "$GPUS" -ge 2 ] && echo twelve || echo six)}

# name kind hint args...: the jobs, the same in every phase; SECONDS_ is
# the online jobs' serving time (SERVE_S, or ALONE_S alone).
JOBS=(
	"r50-serve online resnet50:1:infer serve --job resnet50_infer --batch 1 --think-ms 2 --seconds SECONDS_"
	"mobilenet-serve online mobilenet:1:infer serve --job mobilenet_infer --batch 1 --think-ms 2 --seconds SECONDS_"
)
[ "$JOBSET" = twelve ] && JOBS+=(
	"r18-serve online resnet18:1:infer serve --job resnet18_infer --batch 1 --think-ms 2 --seconds SECONDS_"
	"densenet121-serve online densenet121:1:infer serve --job densenet121_infer --batch 1 --think-ms 2 --seconds SECONDS_"
)
JOBS+=(
	"resnet50-train offline resnet50:32:train train --job resnet50_train --iters ${R50_ITERS:-300}"
	"vgg19-train offline vgg19:32:train train --job vgg19_train --iters ${VGG_ITERS:-150}"
	"bert-train offline bert:8:train train --job bert_train --iters ${BERT_ITERS:-200}"
	"densenet201-train offline densenet201:16:train train --job densenet201_train --iters ${DENSE_ITERS:-150}"
)
[ "$JOBSET" = twelve ] && JOBS+=(
	"resnet152-train offline resnet152:16:train train --job resnet152_train --iters ${R152_ITERS:-150}"
	"transformer-train offline transformer:32:train train --job transformer_train --iters ${TRANS_ITERS:-200}"
	"densenet121-train offline densenet121:16:train train --job densenet121_train --iters ${D121_ITERS:-200}"
	"resnet50b-train offline resnet50:32:train train --job resnet50_train --iters ${R50_ITERS:-300}"
)
[ "$JOBSET" = sim ] && JOBS=(
	"r50-svc online resnet50:32:infer serve --job resnet50_infer --batch 32 --rate ${R50_RATE:-20} --seed 1 --seconds SECONDS_"
	"mobilenet-svc online mobilenet:32:infer serve --job mobilenet_infer --batch 32 --rate ${MOBILE_RATE:-40} --seed 2 --seconds SECONDS_"
	"vgg16-svc online vgg16:32:infer serve --job vgg16_infer --batch 32 --rate ${VGG16_RATE:-10} --seed 3 --seconds SECONDS_"
	"resnet50-train offline resnet50:32:train train --job resnet50_train --iters ${R50_ITERS:-300}"
	"vgg19-train offline vgg19:32:train train --job vgg19_train --iters ${VGG_ITERS:-150}"
	"bert-train offline bert:8:train train --job bert_train --iters ${BERT_ITERS:-200}"
)
case $JOBSET in six | twelve | sim) ;; *) echo "JOBSET=$JOBSET: not six, twelve or sim" >&2; exit 2 ;; esac

# The GPUs by UUID (CUDA numbers GPUs fastest first, NVML by bus: a UUID
# names the same GPU for both); none set with one GPU, as before.
uuids=()
if [ "$GPUS" -gt 1 ]; then
	if [ "${DRY:-0}" = 1 ]; then
		for ((g = 0; g < GPUS; g++)); do uuids+=("GPU-dry-$g"); done
	else
		mapfile -t uuids < <(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n "$GPUS")
		[ "${#uuids[@]}" = "$GPUS" ] || { echo "GPUS=$GPUS, but nvidia-smi lists ${#uuids[@]}" >&2; exit 2; }
	fi
fi

# mmkd manages the same GPUs as the by-hand phases (gpu.devices): the
# first GPUS by NVML index, so that on a bigger host it gets no more
# hardware than they do.
managed=$(seq -s, 0 $((GPUS - 1)))

# on_gpu I: the environment that puts job I on its GPU by hand.
on_gpu() {
	[ "${#uuids[@]}" -gt 0 ] && echo "CUDA_VISIBLE_DEVICES=${uuids[$(($1 % GPUS))]}"
	return 0
}

# own_gpu KIND K: under mps-own, the environment that puts the K-th job of
# its kind on its GPU: the online jobs round-robin on the first half of
# the GPUs (at least one), the offline ones on the rest.
own_gpu() {
	[ "${#uuids[@]}" -gt 0 ] || return 0
	local half=$((GPUS / 2))
	if [ "$1" = online ]; then
		echo "CUDA_VISIBLE_DEVICES=${uuids[$(($2 % half))]}"
	else
		echo "CUDA_VISIBLE_DEVICES=${uuids[$((half + $2 % (GPUS - half)))]}"
	fi
}

cleanup() {
	[ -n "$mmkd_pid" ] && kill "$mmkd_pid" 2>/dev/null && wait "$mmkd_pid" 2>/dev/null || true
	# mmkd leaves MPS daemons running for jobs that outlive it; this run
	# quits them, and the by-hand phase's.
	for p in "$tmp"/*/mps/*/pipe; do quit_mps "$p"; done
	quit_mps "$mps_pipe"
}
trap cleanup EXIT

nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv,noheader >"$out/gpu.txt" 2>/dev/null || echo "no nvidia-smi" >"$out/gpu.txt"
# The services' declared target (SLO=p99=1.5x: of each one's p99 alone),
# for mmkd and for the report, which judges every phase's requests by it.
[ -n "${SLO:-}" ] && echo "$SLO" >"$out/slo.txt"

# record ROUND PHASE NAME KIND T0 OUTFILE [JOBJSON]: one line of e2e.jsonl.
record() {
	local line
	line=$(grep '^{' "$6" 2>/dev/null | tail -n 1 || true)
	[ -n "$line" ] || line='{"unfinished": true}'
	echo "{\"round\": $1, \"phase\": \"$2\", \"name\": \"$3\", \"kind\": \"$4\", \"t0\": $5, \"report\": $line, \"job\": ${7:-{\}}}" >>"$out/e2e.jsonl"
}

# wait_pids DEADLINE PID...: waits for the processes, stopping them past
# the deadline.
wait_pids() {
	local deadline=$1 live p
	shift
	while :; do
		live=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && live=$((live + 1)); done
		[ "$live" = 0 ] && break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "  $live job(s) unfinished after ${PHASE_MAX}s; stopping them"
			kill "$@" 2>/dev/null || true
			break
		fi
		sleep 0.5
	done
	for p in "$@"; do wait "$p" || true; done
}

# together ROUND PHASE: the six at once as plain processes; under mps-prio
# in one MPS daemon's clients, offline at client priority 1.
together() {
	local r=$1 phase=$2 t0 name kind hint args e g
	local pids=()
	mps_env=()
	if [ "$phase" != baseline ] && [ ${#dry[@]} = 0 ]; then
		mps_pipe=$tmp/hand-mps/pipe
		mkdir -p "$mps_pipe" "$tmp/hand-mps/log"
		CUDA_MPS_PIPE_DIRECTORY=$mps_pipe CUDA_MPS_LOG_DIRECTORY=$tmp/hand-mps/log nvidia-cuda-mps-control -d
		mps_env=(CUDA_MPS_PIPE_DIRECTORY="$mps_pipe" CUDA_MPS_LOG_DIRECTORY="$tmp/hand-mps/log")
	fi
	t0=$(date +%s.%N)
	local i=0
	declare -A nth=([online]=0 [offline]=0)
	for spec in "${JOBS[@]}"; do
		read -r name kind hint args <<<"$spec"
		e=("${mps_env[@]}")
		if [ "$phase" = mps-own ]; then
			g=$(own_gpu "$kind" "${nth[$kind]}")
			nth[$kind]=$((nth[$kind] + 1))
		else
			g=$(on_gpu $i)
		fi
		[ -n "$g" ] && e+=("$g")
		i=$((i + 1))
		if [ "$phase" != baseline ]; then
			if [ "$kind" = offline ]; then e+=(CUDA_MPS_CLIENT_PRIORITY=1); else e+=(CUDA_MPS_CLIENT_PRIORITY=0); fi
		fi
		# shellcheck disable=SC2086 # args: the job's arguments, split
		env "${e[@]}" "${job[@]}" ${args//SECONDS_/$SERVE_S} "${dry[@]}" >"$out/r$r-$phase-$name.out" 2>"$out/r$r-$phase-$name.err" &
		pids+=($!)
	done
	wait_pids $(($(date +%s) + PHASE_MAX)) "${pids[@]}"
	if [ -n "$mps_pipe" ]; then
		quit_mps "$mps_pipe"
		mps_pipe=
	fi
	for spec in "${JOBS[@]}"; do
		read -r name kind hint args <<<"$spec"
		record "$r" "$phase" "$name" "$kind" "$t0" "$out/r$r-$phase-$name.out"
	done
}

# alone ROUND: each job by itself.
alone() {
	local r=$1 t0 name kind hint args
	for spec in "${JOBS[@]}"; do
		read -r name kind hint args <<<"$spec"
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086 # args: the job's arguments, split
		env $(on_gpu 0) "${job[@]}" ${args//SECONDS_/$ALONE_S} "${dry[@]}" >"$out/r$r-alone-$name.out" 2>"$out/r$r-alone-$name.err" &
		wait_pids $(($(date +%s) + PHASE_MAX)) $!
		record "$r" alone "$name" "$kind" "$t0" "$out/r$r-alone-$name.out"
	done
}

# with_mmk ROUND [PHASE]: the six through a fresh mmkd (PHASE mmk, or
# mmk-nohook: kernel scheduling off).
with_mmk() {
	local r=$1 phase=${2:-mmk} t0 name kind hint args id left data=$tmp/r$r-$phase
	local cupti=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
	[ -e "$cupti" ] && export MMK_KERNELSCHED_CUPTI=$cupti
	local ks=auto
	[ "$phase" = mmk-nohook ] && ks=false
	# The jobs run as the user who runs this script (as root where it runs
	# as root, which mmkd then must allow: jobs.allow_root).
	local conf=()
	if [ "$backend" = fake ]; then
		# As many fake GPUs as the run uses, whole H100s as on the GPU
		# machine (the embedded default has three, two with MIG).
		mkdir -p "$data"
		{
			printf 'gpu:\n  fake:\n    gpus:\n'
			for ((g = 0; g < GPUS; g++)); do printf '      - {model: H100-80GB, mig: false}\n'; done
		} >"$data.yaml"
		conf=(--config "$data.yaml")
	fi
	# The GPUs' TPC maps mmkd took in an earlier phase of this call (kept
	# in its data directory once per GPU and driver, as across restarts of
	# one mmkd).
	if [ -d "$tmp/tpcmaps" ]; then
		mkdir -p "$data"
		cp -r "$tmp/tpcmaps" "$data/"
	fi
	MMK_GPU_DEVICES=$managed MMK_KERNELSCHED_ENABLED=$ks MMK_JOBS_ALLOW_ROOT=true "$bin/mmkd" "${conf[@]}" --backend "$backend" --data-dir "$data" --listen "$addr" 2>"$out/r$r-$phase-mmkd.log" &
	mmkd_pid=$!
	mmkd_ready "$data" "$addr" || echo "mmkd not ready after 30 s; see $out/r$r-$phase-mmkd.log" >&2
	# Jobs wait while mmkd maps a GPU's TPC slots (the first start on a
	# GPU and driver, slo.masks): the phase starts after it, so that its
	# makespan is the jobs'.
	masks_ready "$addr" "$out/r$r-$phase-masks.json" || true
	if [ -d "$data/tpcmaps" ]; then
		cp -r "$data/tpcmaps" "$tmp/"
		cp -r "$data/tpcmaps" "$out/r$r-$phase-tpcmaps"
	fi
	local auth=("${mmkd_auth[@]}")
	local mk=(env MMK_DATA_DIR="$data" "$bin/mmkctl" --addr "$addr")
	declare -A ids
	local subs=()
	t0=$(date +%s.%N)
	for spec in "${JOBS[@]}"; do
		read -r name kind hint args <<<"$spec"
		# shellcheck disable=SC2086 # args: the job's arguments, split
		local slo=()
		[ "$kind" = online ] && [ -n "${SLO:-}" ] && slo=(--slo "$SLO")
		"${mk[@]}" submit -o json --name "$name" "--$kind" --workload "$hint" --memory 8GiB "${slo[@]}" -- "${job[@]}" ${args//SECONDS_/$SERVE_S} "${dry[@]}" >"$tmp/submit-$name.json" &
		subs+=($!)
	done
	for p in "${subs[@]}"; do wait "$p"; done
	for spec in "${JOBS[@]}"; do
		read -r name kind hint args <<<"$spec"
		ids[$name]=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/submit-$name.json")
	done
	local deadline=$(($(date +%s) + PHASE_MAX))
	while :; do
		left=$("${mk[@]}" jobs -o json | python3 -c 'import json,sys; print(sum(j["state"] not in ("succeeded","failed","cancelled") for j in json.load(sys.stdin)))')
		[ "$left" = 0 ] && break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "  mmk: $left job(s) unfinished after ${PHASE_MAX}s; cancelling"
			for id in "${ids[@]}"; do "${mk[@]}" cancel "$id" >/dev/null 2>&1 || true; done
			sleep 3
			break
		fi
		sleep 0.5
	done
	"${mk[@]}" plan -o json >"$out/r$r-$phase-plan.json" 2>&1 || true
	curl -fs "${auth[@]}" "http://$addr/api/v1/reconfigs" >"$out/r$r-$phase-reconfigs.json" || true
	curl -fs "${auth[@]}" "http://$addr/api/v1/kernelsched" >"$out/r$r-$phase-kernelsched.json" || true
	for spec in "${JOBS[@]}"; do
		read -r name kind hint args <<<"$spec"
		id=${ids[$name]}
		"${mk[@]}" job -o json "$id" >"$out/r$r-$phase-$name.job.json" 2>/dev/null || echo '{}' >"$out/r$r-$phase-$name.job.json"
		"${mk[@]}" logs "$id" >"$out/r$r-$phase-$name.out" 2>/dev/null || true
		record "$r" "$phase" "$name" "$kind" "$t0" "$out/r$r-$phase-$name.out" \
			"$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$out/r$r-$phase-$name.job.json" 2>/dev/null || echo '{}')"
	done
	kill "$mmkd_pid" 2>/dev/null && wait "$mmkd_pid" 2>/dev/null || true
	mmkd_pid=
	for p in "$data"/mps/*/pipe; do quit_mps "$p"; done
}

read -r -a phases <<<"$PHASES"
for ((k = 0; k < ROUNDS; k++)); do
	r=$((ROUND0 + k))
	n=${#phases[@]}
	for ((i = 0; i < n; i++)); do
		at=$(((i + r) % n))
		[ $((r % 2)) = 1 ] && at=$(((n - 1 - i + r) % n))
		phase=${phases[$at]}
		echo "round $r $phase: $(date +%T)"
		case $phase in
		alone) alone "$r" ;;
		baseline | mps-prio) together "$r" "$phase" ;;
		mps-own)
			[ "$GPUS" -ge 2 ] || { echo "mps-own needs GPUS >= 2" >&2; exit 2; }
			together "$r" "$phase"
			;;
		mmk | mmk-nohook) with_mmk "$r" "$phase" ;;
		*) echo "unknown phase $phase" >&2; exit 2 ;;
		esac
	done
done
python3 "$here/e2e_report.py" "$out" >"$out/report.md"
cat "$out/report.md"
