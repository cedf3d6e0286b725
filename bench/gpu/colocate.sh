#!/usr/bin/env bash
# Calibration data for the kernel-level simulator (docs/results/kernelsched.md):
# resnet50 bs=1 inference with 2 ms think time, alone and next to a trainer
# under default time sharing (no MPS), on a real GPU. Results go to
# $OUT/colocate.jsonl (or stdout). Read-only for the GPU: no MIG, no MPS.
set -euo pipefail
cd "$(dirname "$0")"
out="${OUT:-/tmp}/colocate.jsonl"
: >"$out"
py=python3
nvidia-smi --query-gpu=name,driver_version,mig.mode.current,compute_mode --format=csv,noheader | tee -a "$out"
HP_S=${HP_S:-10}
$py colocate.py hp --seconds "$HP_S" | sed "s/^{/{\"setting\":\"alone\",/" | tee -a "$out"
for spec in vgg19:32 vgg16:64; do
	m=${spec%:*} b=${spec#*:}
	$py colocate.py lp --model "$m" --batch "$b" --seconds 8 --warmup 4 | sed "s/^{/{\"setting\":\"alone\",/" | tee -a "$out"
	# Trainer first; the HP measures once the trainer is past its warm-up.
	$py colocate.py lp --model "$m" --batch "$b" --seconds "$((HP_S + 4))" --warmup 6 | sed "s/^{/{\"setting\":\"with $m bs=$b\",/" | tee -a "$out" &
	lp=$!
	sleep 8
	$py colocate.py hp --seconds "$HP_S" | sed "s/^{/{\"setting\":\"with $m bs=$b\",/" | tee -a "$out"
	wait "$lp"
done
