#!/usr/bin/env bash
# hook-colocate.sh: the hook and the kernel scheduler on a real GPU.
#
#   bench/gpu/hook-colocate.sh OUTDIR main   # resnet50 bs1 (2 ms think) + vgg16 trainer:
#                                            # profiling phase; default, MPS and the
#                                            # kernel policies, also with the trainer
#                                            # capped by MPS; fail-open
#   bench/gpu/hook-colocate.sh OUTDIR pairs  # three of FIKIT's pairs: default vs fikit
#
# Results go to OUTDIR/*.jsonl (one JSON line per process, tagged with its
# setting); bench/gpu/colocate_report.py OUTDIR turns them into tables. No MIG
# change; an MPS daemon is started with a pipe directory under /tmp and
# quit before the script ends.
set -euo pipefail
out=${1:?usage: hook-colocate.sh OUTDIR main|pairs}
part=${2:?usage: hook-colocate.sh OUTDIR main|pairs}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=${MMK_BIN:-$(cd "$here/../.." && pwd)/bin}
mk=$bin/mmkctl
export MMK_CUPTI_PATH=${MMK_CUPTI_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13}
py="python3 $here/pair.py"
prof=$out/profiles
mkdir -p "$prof"
tmp=$(mktemp -d /tmp/mmk-co.XXXX)
srv=
mps_on=0
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null || true
	[ "$mps_on" = 1 ] && echo quit | nvidia-cuda-mps-control || true
}
trap cleanup EXIT
HP_S=${HP_S:-8}

tag() { sed "s/^{/{\"setting\": \"$1\", /"; }

mps_start() {
	export CUDA_MPS_PIPE_DIRECTORY=$tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=$tmp/mps-log
	mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
	nvidia-cuda-mps-control -d
	mps_on=1
	sleep 1
}
mps_stop() {
	echo quit | nvidia-cuda-mps-control
	mps_on=0
	sleep 2
	unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}

# serve POLICY SETTING: a kernel scheduler on $sock reading the profiles;
# its counters are tagged with the setting of the pair it serves.
serve() {
	srv_name=$2
	local f=${2//[^A-Za-z0-9+_-]/_}
	sock=$tmp/$f.sock
	srv_log=$tmp/server-$f.log
	"$mk" kernelsched serve --socket "$sock" --policy "$1" --profiles "$prof" --stats "$tmp/server.json" 2>"$srv_log" &
	srv=$!
	for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
}
unserve() {
	kill -INT "$srv"
	wait "$srv" || true
	srv=
	tag "$srv_name" <"$tmp/server.json" | tee -a "$out/servers.jsonl"
	{ echo "== $srv_name"; tail -n 5 "$srv_log"; } >>"$out/servers.log"
}

# hooked PRIO ONLINE KEY -- CMD: CMD under the hook, reporting to $sock.
hooked() {
	local prio=$1 online=$2 key=$3
	shift 4
	local o=()
	[ "$online" = 1 ] && o=(--online)
	mkdir -p "$tmp/hs"
	# shellcheck disable=SC2086 # RUNFLAGS: extra mmkctl run flags, split
	MMK_HOOK_STATS="$tmp/hs/$key.jsonl" "$mk" run --socket "${sock:-}" --profiles "$prof" --task-key "$key" --name "$key" --priority "$prio" "${o[@]}" ${RUNFLAGS:-} -- "$@"
}

# pair SETTING HPCMD... :: LPCMD...: the LP starts first; the HP measures
# once the LP is past its warm-up.
pair() {
	local setting=$1
	shift
	local hp=() lp=()
	while [ "$1" != "::" ]; do hp+=("$1"); shift; done
	shift
	lp=("$@")
	"${lp[@]}" | tag "$setting" >>"$out/lp.jsonl" &
	local lpid=$!
	sleep 9
	"${hp[@]}" | tag "$setting" | tee -a "$out/hp.jsonl"
	wait "$lpid"
	tail -n 1 "$out/lp.jsonl" | cut -c1-160
	hookstats "$setting"
}

# hookstats SETTING: the hooks' counters (launches, held, fail-opens,
# synchronisations) of the processes since the last call, tagged.
hookstats() {
	local f
	for f in "$tmp"/hs/*.jsonl; do
		[ -e "$f" ] || continue
		local key
		key=$(basename "$f" .jsonl)
		sed "s/^{/{\"setting\": \"$1\", \"key\": \"$key\", /" "$f" >>"$out/hookstats.jsonl"
		rm -f "$f"
	done
}

main() {
	nvidia-smi --query-gpu=name,driver_version,mig.mode.current,compute_mode --format=csv,noheader | tee "$out/gpu.txt"
	# The activity-record declarations against the real headers.
	inc=""
	for d in /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/include; do
		[ -d "$d" ] && inc="$inc -I$d"
	done
	cc -std=c11 $inc -o "$tmp/layout_check" "$here/../../hook/lib/layout_check.c" && "$tmp/layout_check" | tee "$out/layout.txt"

	HP=($py hp --model resnet50 --batch 1 --think-ms 2 --seconds "$HP_S")
	LP=($py lp --model vgg16 --batch 64 --train --seconds $((HP_S + 12)) --warmup 6)
	# Alone, without and with the profiling phase (which writes the profiles).
	"${HP[@]}" | tag alone | tee -a "$out/hp.jsonl"
	# The whole run is profiled (runs without end), so that its timing is
	# the profiling phase's.
	RUNFLAGS="--profile-runs 1000000" hooked 0 1 r50-bs1 -- "${HP[@]}" | tag "alone, profiling" | tee -a "$out/hp.jsonl"
	$py lp --model vgg16 --batch 64 --train --seconds 8 --warmup 6 | tag alone | tee -a "$out/lp.jsonl" | cut -c1-120
	RUNFLAGS="--profile-runs 1000000" hooked 5 0 vgg16-train -- $py lp --model vgg16 --batch 64 --train --seconds 8 --warmup 6 | tag "alone, profiling" | tee -a "$out/lp.jsonl" | cut -c1-120
	ls -l "$prof"

	pair default "${HP[@]}" :: "${LP[@]}"
	mps_start
	pair mps "${HP[@]}" :: "${LP[@]}"
	# MMK's MPS level under the kernel scheduler: the trainer capped at
	# LP_PCTS % of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), the HP at 100.
	for pct in ${LP_PCTS-50}; do
		pair "mps, LP $pct %" "${HP[@]}" :: env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct "${LP[@]}"
		for pol in ${LP_PCT_POLICIES:-fikit+mmk}; do
			serve "$pol" "$pol (MPS, LP $pct %)"
			pair "$pol (MPS, LP $pct %)" hooked 0 1 r50-bs1 -- "${HP[@]}" :: env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct "$mk" run --socket "$sock" --profiles "$prof" --task-key vgg16-train --name vgg16-train --priority 5 -- "${LP[@]}"
			unserve
		done
	done
	for pol in fikit mmk fikit+mmk; do
		serve "$pol" "$pol (MPS)"
		pair "$pol (MPS)" hooked 0 1 r50-bs1 -- "${HP[@]}" :: hooked 5 0 vgg16-train -- "${LP[@]}"
		unserve
	done
	mps_stop

	# Fail-open: the server is killed while both jobs run.
	serve fikit "fikit, server killed"
	MMK_HOOK_LOG=0 hooked 5 0 vgg16-train -- "${LP[@]}" 2>"$out/failopen-lp.err" | tag "fikit, server killed" >>"$out/lp.jsonl" &
	lpid=$!
	sleep 9
	(sleep 8; date +%s.%N >"$out/failopen-kill.txt"; kill -9 "$srv") &
	hooked 0 1 r50-bs1 -- "${HP[@]}" 2>"$out/failopen-hp.err" | tag "fikit, server killed" | tee -a "$out/hp.jsonl"
	rc=0
	wait "$lpid" || rc=$?
	echo "lp exit $rc" >>"$out/failopen-kill.txt"
	srv=
	cat "$out/failopen-kill.txt" "$out/failopen-hp.err" "$out/failopen-lp.err" | grep -v '^$' | tail -n 8

	# FIKIT's own setting: no MPS, the GPU time-sliced between the jobs.
	serve fikit fikit
	pair "fikit" hooked 0 1 r50-bs1 -- "${HP[@]}" :: hooked 5 0 vgg16-train -- "${LP[@]}"
	unserve
}

pairs() {
	# FIKIT's pairs: HP inference (2 ms think) against LP inference back to back.
	for spec in ${PAIRS:-alexnet:vgg16 keypointrcnn:fcn_resnet50 maskrcnn:keypointrcnn}; do
		h=${spec%:*} l=${spec#*:}
		HP=($py hp --model "$h" --batch 1 --think-ms 2 --seconds "$HP_S")
		LP=($py lp --model "$l" --batch 8 --seconds $((HP_S + 12)) --warmup 6)
		"${HP[@]}" | tag "$h alone" | tee -a "$out/hp.jsonl"
		RUNFLAGS="--profile-runs 1000000" hooked 0 1 "$h-hp" -- "${HP[@]}" | tag "$h alone, profiling" | tee -a "$out/hp.jsonl"
		hooked 5 0 "$l-lp" -- $py lp --model "$l" --batch 8 --seconds 6 --warmup 4 | tag "$l alone, profiling" | tee -a "$out/lp.jsonl" | cut -c1-120
		pair "$h+$l default" "${HP[@]}" :: "${LP[@]}"
		serve fikit "$h+$l fikit"
		pair "$h+$l fikit" hooked 0 1 "$h-hp" -- "${HP[@]}" :: hooked 5 0 "$l-lp" -- "${LP[@]}"
		unserve
	done
}

"$part"
