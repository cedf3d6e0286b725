#!/usr/bin/env bash
# slo-mixes.sh ROUNDS [ROUNDS...]: issue 52's GPU rounds on three mixes,
# one list of rounds per GPU, the GPUs side by side (each list on its own
# GPU, CUDA_VISIBLE_DEVICES its UUID, and its own share of the CPUs, so that the
# rounds' pinned services do not share cores); each round is
# slo-round.sh's, packed into $OUT/rR.tgz.
#
#   MMK_BIN=.dev/gpu bench/gpu/slo-mixes.sh vgg19:80,three:81 dense:83,three:84
#
# A list is MIX:R[,MIX:R...] (R: the round number, which rotates the
# settings' order). The mixes:
#   vgg19  the SLO benchmark (issue 34): vgg19 at batch 32 beside resnet50
#          at batch 1 (p99 75 ms) and 32 (p99 25 ms), batch-1 rates 20/50/80
#   three  vgg19, resnet152 and BERT training beside BERT inference at
#          batch 8 (p99 1.5x its p99 alone at the high rate, 10/25/40
#          requests a second) and resnet50 at batch 1 (3x, 20/50/80)
#   dense  densenet201 and BERT training beside BERT inference (1.5x,
#          10/25/40) and resnet50 at batch 32 (2x, 6/14/24)
# MIX_<name> replaces a mix's flags, COMMON the flags every round gets
# (settings, ladder, phases). Needs MMK_BIN and OUT, as slo-round.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${MIX_vgg19:=--trainers vgg19:32 --slo svc-b32=p99=25ms --slo svc-b1=p99=75ms --rates svc-b1=20/50/80}"
: "${MIX_three:=--trainers vgg19:32,resnet152:32,bert:8 --services svc-bert=bert:8,svc-b1=resnet50:1 --rates svc-bert=10/25/40 --rates svc-b1=20/50/80 --slo svc-bert=p99=1.5x --slo svc-b1=p99=3x}"
: "${MIX_dense:=--trainers densenet201:32,bert:8 --services svc-bert=bert:8,svc-b32=resnet50:32 --rates svc-bert=10/25/40 --rates svc-b32=6/14/24 --slo svc-bert=p99=1.5x --slo svc-b32=p99=2x}"
: "${COMMON:=--phase-s 10 --ref-s 4 --tpc-map slo/tpcmap-h100.json --settings prio,prio+50%,reqmask=0.25,mmk --ladder priority,tpcs=0.25/req,tpcs=0.25,suspend --no-papers}"
n=$#
cpus=$(nproc)
per=$((cpus / (n > 0 ? n : 1)))
gpu=0
for list in "$@"; do
	(
		# The GPU's UUID, not its index: under MPS a client counts only
		# the GPUs its control daemon sees (one, numbered 0), so an index
		# past 0 matched nothing ("No CUDA GPUs are available"); a UUID
		# names the same GPU to both.
		uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i "$gpu" 2>/dev/null)
		export CUDA_VISIBLE_DEVICES=${uuid:-$gpu}
		for item in ${list//,/ }; do
			mix=${item%%:*} r=${item#*:}
			var=MIX_$mix
			if [ -z "${!var:-}" ]; then
				echo "slo-mixes.sh: no mix $mix (vgg19, three, dense)"
				continue
			fi
			echo "slo-mixes.sh: GPU $gpu round $r mix $mix"
			# shellcheck disable=SC2086 # flags, split
			taskset -c "$((gpu * per))-$(((gpu + 1) * per - 1))" bash "$here/slo-round.sh" "$r" ${!var} $COMMON
		done
	) >"${OUT:?}/gpu$gpu.log" 2>&1 &
	gpu=$((gpu + 1))
done
wait
cat "$OUT"/gpu*.log
