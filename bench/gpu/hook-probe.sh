#!/usr/bin/env bash
# hook-probe.sh: read, on the GPU machine, the CUDA and CUPTI facts the hook
# is built on: header locations, versions, the driver callback ids of every
# launch entry point, and the offsets of the structures the hook reads
# (CUpti_CallbackData, launch parameters, CUlaunchConfig, the newest kernel
# activity record). The hook declares these itself (no CUDA headers on the
# build machine); hook/cuda_decls_test checks its copy against this output.
#
#   bench/gpu/hook-probe.sh OUTDIR
set -euo pipefail
out=${1:?usage: hook-probe.sh OUTDIR}
mkdir -p "$out"
py=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13
inc=""
for d in "$py/include" /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include /usr/local/cuda-13*/include /usr/local/cuda-13*/extras/CUPTI/include; do
  [ -d "$d" ] && inc="$inc -I$d"
done
{
  echo "include dirs:$inc"
  for d in $inc; do d=${d#-I}; echo "== $d"; ls "$d" | grep -iE 'cupti|^cuda\.h|cudaTypedefs|generated_cuda_meta' || true; done
  nvcc --version | tail -2 || true
  gcc --version | head -1 || true
  ls "$py/lib" | grep -iE 'cupti|cudart' || true
} >"$out/env.txt" 2>&1
find_h() { for d in $inc; do d=${d#-I}; [ -f "$d/$1" ] && { echo "$d/$1"; return; }; done; }
cbid=$(find_h cupti_driver_cbid.h)
grep -E 'cuLaunch|cuGraphLaunch' "$cbid" >"$out/cbid.txt"
act=$(find_h cupti_activity.h)
krec=$(grep -oE 'CUpti_ActivityKernel[0-9]+' "$act" | sort -u -V | tail -1)
echo "newest kernel record: $krec" >>"$out/env.txt"
cat >/tmp/probe.c <<C
#include <stdio.h>
#include <stddef.h>
#include <cuda.h>
#include <cupti.h>

#define OFF(t, f) printf("%-40s %-28s %zu\n", #t, #f, offsetof(t, f))
#define SZ(t) printf("%-40s %-28s %zu\n", #t, "sizeof", sizeof(t))
int main(void) {
  printf("CUDA_VERSION %d CUPTI_API_VERSION %d\n", CUDA_VERSION, CUPTI_API_VERSION);
  SZ(CUpti_CallbackData);
  OFF(CUpti_CallbackData, callbackSite); OFF(CUpti_CallbackData, functionName);
  OFF(CUpti_CallbackData, functionParams); OFF(CUpti_CallbackData, functionReturnValue);
  OFF(CUpti_CallbackData, symbolName); OFF(CUpti_CallbackData, context);
  OFF(CUpti_CallbackData, contextUid); OFF(CUpti_CallbackData, correlationData);
  OFF(CUpti_CallbackData, correlationId);
  SZ(cuLaunchKernel_params);
  OFF(cuLaunchKernel_params, f); OFF(cuLaunchKernel_params, gridDimX); OFF(cuLaunchKernel_params, blockDimX);
  OFF(cuLaunchKernel_params, sharedMemBytes); OFF(cuLaunchKernel_params, hStream);
  OFF(cuLaunchKernelEx_params, config); OFF(cuLaunchKernelEx_params, f);
  SZ(CUlaunchConfig); OFF(CUlaunchConfig, gridDimX); OFF(CUlaunchConfig, blockDimX);
  OFF(CUlaunchConfig, sharedMemBytes); OFF(CUlaunchConfig, hStream);
  OFF(cuLaunchCooperativeKernel_params, f); OFF(cuLaunchCooperativeKernel_params, hStream);
  OFF(cuGraphLaunch_params, hGraph); OFF(cuGraphLaunch_params, hStream);
  SZ($krec);
  OFF($krec, kind); OFF($krec, start); OFF($krec, end); OFF($krec, completed);
  OFF($krec, deviceId); OFF($krec, contextId); OFF($krec, streamId);
  OFF($krec, gridX); OFF($krec, gridY); OFF($krec, gridZ);
  OFF($krec, blockX); OFF($krec, blockY); OFF($krec, blockZ);
  OFF($krec, correlationId); OFF($krec, name);
  printf("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL %d CUPTI_ACTIVITY_KIND_KERNEL %d\n", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
  printf("CUPTI_CB_DOMAIN_DRIVER_API %d CUPTI_API_ENTER %d CUPTI_API_EXIT %d\n", CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_API_ENTER, CUPTI_API_EXIT);
  return 0;
}
C
gcc $inc -o /tmp/probe /tmp/probe.c >"$out/probe-build.txt" 2>&1 || { cat "$out/probe-build.txt"; exit 1; }
/tmp/probe >"$out/offsets.txt"
cat "$out/env.txt" "$out/cbid.txt" "$out/offsets.txt"
