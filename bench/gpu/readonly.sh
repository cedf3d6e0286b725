#!/usr/bin/env bash
# Read-only checks of mmk against a real GPU (issue: foundation). Run on a
# GPU machine from the repository root after `make build tools` and
# `go test -c -o bin/nvmlbackend.test ./partitioner/nvmlbackend` on the
# build machine. It never changes MIG mode and never creates or destroys
# an instance. Output goes to stdout and, when set, to $OUT/readonly.txt.
set -uo pipefail
out=${OUT:-/tmp}/readonly.txt
{
	echo "== host"; date -u; uname -r
	echo "== nvidia-smi"; nvidia-smi --query-gpu=index,name,memory.total,mig.mode.current,mig.mode.pending,driver_version --format=csv
	echo "== nvidia-smi mig -lgip"; nvidia-smi mig -lgip
	echo "== nvidia-smi mig -lgipp"; nvidia-smi mig -lgipp
	echo "== mmkctl gpus --backend nvml"; bin/mmkctl gpus --backend nvml
	echo "== mmkctl mig profiles --backend nvml --check"; bin/mmkctl mig profiles --backend nvml --check; echo "exit $?"
	echo "== mmkctl gpus --backend nvml -o json"; bin/mmkctl gpus --backend nvml -o json
	echo "== nvmlprobe"; bin/nvmlprobe
	echo "== TestRealGPUReadOnly"; MMK_TEST_NVML=1 bin/nvmlbackend.test -test.run TestRealGPUReadOnly -test.v
} 2>&1 | tee "$out"
