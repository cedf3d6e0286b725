# mmkd-ready.sh, sourced by the GPU scripts that start mmkd (mmkd-e2e.sh,
# memlimit-e2e.sh).
#
# mmkd_ready DATA ADDR: wait up to 30 s for the mmkd with data directory
# DATA listening on ADDR to write its token and answer /readyz with it
# (over TCP mmkd asks for the token it writes to DATA/token on start;
# mmkctl reads it there through MMK_DATA_DIR). On success it sets
# mmkd_auth to curl's arguments for that token and returns 0; else 1.
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
