#!/usr/bin/env bash
# sync-probe.sh: which driver API entry points a PyTorch job's
# synchronisations go through, as CUPTI's callbacks name them. The hook
# (protocol step 6) sees a synchronisation only through the callback ids it
# enables; this counts every driver API callback of a job that runs 200
# requests, each ended by torch.cuda.synchronize(), then 200 ended by a
# stream's synchronize() and 200 by .item(), and prints the ids with their
# names and counts, and the Synchronize ids of the real header.
#
#   bench/gpu/sync-probe.sh OUTDIR
set -euo pipefail
out=${1:?usage: sync-probe.sh OUTDIR}
mkdir -p "$out"
py=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13
inc="-I$py/include"
for d in /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include; do [ -d "$d" ] && inc="$inc -I$d"; done
tmp=$(mktemp -d /tmp/mmk-sync.XXXX)
cat >"$tmp/probe.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <cupti.h>
static _Atomic unsigned long counts[2][2048];
static CUpti_SubscriberHandle sub;
static void CUPTIAPI cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
	(void)u;
	const CUpti_CallbackData *c = data;
	if (c->callbackSite == CUPTI_API_ENTER && id < 2048)
		atomic_fetch_add(&counts[d == CUPTI_CB_DOMAIN_RUNTIME_API][id], 1);
}
static void dump(void)
{
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 2048; i++) {
			unsigned long n = atomic_load(&counts[r][i]);
			if (!n)
				continue;
			const char *name = "?";
			cuptiGetCallbackName(r ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, i, &name);
			printf("%s %4d %-40s %lu\n", r ? "runtime" : "driver ", i, name, n);
		}
}
int InitializeInjection(void)
{
	if (cuptiSubscribe(&sub, cb, NULL) != CUPTI_SUCCESS)
		return 0;
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
	atexit(dump);
	return 1;
}
C
gcc -shared -fPIC $inc -o "$tmp/probe.so" "$tmp/probe.c" -L"$py/lib" -l:libcupti.so.13 -Wl,-rpath,"$py/lib"
cat >"$tmp/job.py" <<'P'
import torch
x = torch.randn(256, 256, device="cuda")
for _ in range(10):
    x @ x
torch.cuda.synchronize()
print("marker: 200 x torch.cuda.synchronize, 200 x stream.synchronize, 200 x .item()", flush=True)
for _ in range(200):
    x @ x
    torch.cuda.synchronize()
s = torch.cuda.current_stream()
for _ in range(200):
    x @ x
    s.synchronize()
for _ in range(200):
    (x @ x).sum().item()
P
CUDA_INJECTION64_PATH="$tmp/probe.so" python3 "$tmp/job.py" | sort -k4 -n -r | tee "$out/sync-probe.txt" | head -40
grep -hE 'Synchronize' $(for d in $inc; do ls ${d#-I}/cupti_driver_cbid.h 2>/dev/null; done) | tee "$out/sync-cbids.txt"
