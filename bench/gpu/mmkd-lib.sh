# mmkd-lib.sh: shell functions of the GPU scripts (mmkd-e2e.sh,
# memlimit-e2e.sh, devices-check.sh, slo.sh, calibrate.sh), which source
# it.
#
# mmkd_ready DATA ADDR: wait up to 30 s for the mmkd with data directory
# DATA listening on ADDR to write its token and answer /readyz with it
# (over TCP mmkd asks for the token it writes to DATA/token on start;
# mmkctl reads it there through MMK_DATA_DIR). On success it sets
# mmkd_auth to curl's arguments for that token and returns 0; else 1.
mmkd_auth=()
mmkd_ready() {
	local data=$1 addr=$2
	for _ in $(seq 300); do
		if [ -s "$data/token" ] && curl -fs -H "Authorization: Bearer $(cat "$data/token")" "http://$addr/readyz" >/dev/null 2>&1; then
			mmkd_auth=(-H "Authorization: Bearer $(cat "$data/token")")
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# masks_ready ADDR OUT: wait (at most 180 s) until mmkd maps no GPU's TPC
# mask slots any more (GET /api/v1/slo's masks; slo.masks), write its
# view to OUT and print each GPU's masks in a line; after mmkd_ready. An
# mmkd that serves no latency view (503) has none to wait for.
masks_ready() {
	local addr=$1 outf=$2 code
	for _ in $(seq 1800); do
		code=$(curl -s -o "$outf" -w '%{http_code}' "${mmkd_auth[@]}" "http://$addr/api/v1/slo" || true)
		[ "$code" = 200 ] || return 0
		if python3 - "$outf" <<'PY'
import json, sys
masks = json.load(open(sys.argv[1])).get("masks") or []
if any(m["state"] == "mapping" for m in masks):
    sys.exit(1)
for m in masks:
    print("  %s: TPC masks %s (%s; %.1f s); ladder %s" % (m["gpu"], m["state"], m["why"], m.get("tookS", 0), ",".join(m["ladder"])))
PY
		then
			return 0
		fi
		sleep 0.1
	done
	echo "mmkd still maps a GPU's TPC slots after 180 s" >&2
	return 1
}

# quit_mps PIPE [CONTROL]: quit the MPS control daemon whose pipe
# directory is PIPE, if there is one, with CONTROL (default
# nvidia-cuda-mps-control); a daemon already gone is no error.
quit_mps() {
	local p=$1 ctl=${2:-nvidia-cuda-mps-control}
	[ -n "$p" ] && [ -d "$p" ] || return 0
	echo quit | CUDA_MPS_PIPE_DIRECTORY="$p" "$ctl" >/dev/null 2>&1 || true
}

# fake_or_machine OUT: with DRY=1 (the protocol with sleeping workers and
# no GPU) sets fake=(--fake) for the python driver; else fake=() and
# appends the time, the GPU as nvidia-smi reads it and the CPU count to
# OUT/machine.txt.
fake=()
fake_or_machine() {
	fake=()
	if [ "${DRY:-0}" = 1 ]; then
		fake=(--fake)
		return 0
	fi
	{
		date -u +%FT%TZ
		nvidia-smi --query-gpu=name,uuid,driver_version,mig.mode.current,compute_mode,clocks.max.sm,power.limit --format=csv
		echo "cpus $(nproc)"
	} | tee -a "$1/machine.txt"
}
