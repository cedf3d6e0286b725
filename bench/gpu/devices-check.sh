#!/usr/bin/env bash
# devices-check.sh: gpu.devices on a real host of two or more GPUs (issue
# 36): mmkd manages one GPU (MANAGED, an NVML index, default the last),
# runs a short CUDA job there, and the other GPUs stay untouched.
#
#   bench/gpu/devices-check.sh OUTDIR
#
# Checks, each printed as "ok ..." or "FAIL ...", and the exit status the
# number of failures:
#   - mmkd's /api/v1/gpus lists the managed GPU alone, by its UUID;
#   - the job's process runs on the managed GPU (nvidia-smi
#     --query-compute-apps while it runs), and no process of it, nor an
#     MPS server, on any other GPU;
#   - an unknown device (gpu.devices naming index 99) stops mmkd at start
#     with an error that names it.
# OUTDIR gets mmkd's logs, the GPU list, nvidia-smi's views and check.txt.
# Read-only on the GPUs it does not manage; MIG stays as it is; the MPS
# daemons mmkd started are quit before the end.
set -euo pipefail
out=${1:?usage: devices-check.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/mmkd-lib.sh"
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
mkdir -p "$out"
n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ "$n" -ge 2 ] || { echo "devices-check: $n GPU(s); needs 2 or more" >&2; exit 2; }
managed=${MANAGED:-$((n - 1))}
mapfile -t uuids < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
want=${uuids[$managed]}
tmp=$(mktemp -d /tmp/mmk-devices.XXXX)
addr=127.0.0.1:${PORT:-7078}
fails=0
say() { echo "$*" | tee -a "$out/check.txt"; }
check() { if eval "$2"; then say "ok   $1"; else say "FAIL $1"; fails=$((fails + 1)); fi; }
nvidia-smi --query-gpu=index,uuid,name,driver_version,mig.mode.current --format=csv >"$out/gpus-host.csv"

# An unknown device stops mmkd at its start, naming it.
if MMK_GPU_DEVICES=99 "$bin/mmkd" --backend nvml --data-dir "$tmp/bad" --listen 127.0.0.1:0 >"$out/mmkd-unknown.log" 2>&1; then
	check "an unknown device stops mmkd" false
else
	check "an unknown device stops mmkd, naming it" 'grep -q 99 "$out/mmkd-unknown.log"'
fi

data=$tmp/data
cupti=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
[ -e "$cupti" ] && export MMK_KERNELSCHED_CUPTI=$cupti
MMK_GPU_DEVICES=$managed MMK_JOBS_ALLOW_ROOT=true "$bin/mmkd" --backend nvml --data-dir "$data" --listen "$addr" 2>"$out/mmkd.log" &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	for p in "$data"/mps/*/pipe; do quit_mps "$p"; done
}
trap cleanup EXIT
mmkd_ready "$data" "$addr" || { echo "mmkd not ready; see $out/mmkd.log" >&2; exit 1; }
curl -fs "${mmkd_auth[@]}" "http://$addr/api/v1/gpus" >"$out/api-gpus.json"
got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); g=d.get("gpus", d) if isinstance(d, dict) else d; print(" ".join(x.get("uuid", "?") for x in g))' "$out/api-gpus.json")
check "/api/v1/gpus lists the managed GPU alone ($want): got $got" '[ "$got" = "$want" ]'

mk=(env MMK_DATA_DIR="$data" "$bin/mmkctl" --addr "$addr")
id=$("${mk[@]}" submit -o json --name devcheck --offline --memory 4GiB -- python3 -c \
	'import torch,time; a=torch.randn(4096,4096,device="cuda"); t=time.time()
while time.time()-t<12: (a@a).sum().item()' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
seen=
for _ in $(seq 60); do
	nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader >"$out/compute-apps.csv" 2>&1 || true
	if grep -q python "$out/compute-apps.csv"; then seen=1; sleep 2; nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader >"$out/compute-apps.csv"; break; fi
	sleep 0.5
done
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
check "the job ran on a GPU (nvidia-smi saw it)" '[ -n "$seen" ]'
others=$(grep -v "$want" "$out/compute-apps.csv" | grep -c . || true)
check "no process on any GPU but the managed one ($others listed elsewhere)" '[ "$others" = 0 ]'
check "the job's process is on the managed GPU" 'grep "$want" "$out/compute-apps.csv" | grep -q python'
for _ in $(seq 60); do
	st=$("${mk[@]}" job -o json "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
	case $st in succeeded | failed | cancelled) break ;; esac
	sleep 0.5
done
check "the job succeeded (state $st)" '[ "$st" = succeeded ]'
"${mk[@]}" job "$id" >"$out/job.txt" 2>&1 || true
say "devices-check: $fails failure(s); managed GPU $managed ($want) of $n"
exit "$fails"
