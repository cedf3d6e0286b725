/*
 * layout_check.c: built on the GPU machine against the real CUDA and CUPTI
 * headers (bench/gpu/hook-probe.sh); it fails to compile if the hook's own
 * declarations in cupti_decls.h differ from them. Not part of the hook.
 */
#include <stddef.h>
#include <stdio.h>

#include <cuda.h>
#include <cupti.h>

#include "cupti_decls.h"

#define SAME_OFF(a, b, f) _Static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f " moved")
#define SAME_SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), #a " changed size")
#define SAME(v, w) _Static_assert((int)(v) == (int)(w), #v " changed")

SAME_SIZE(mmk_CUpti_CallbackData, CUpti_CallbackData);
SAME_OFF(mmk_CUpti_CallbackData, CUpti_CallbackData, callbackSite);
SAME_OFF(mmk_CUpti_CallbackData, CUpti_CallbackData, functionParams);
SAME_OFF(mmk_CUpti_CallbackData, CUpti_CallbackData, symbolName);
SAME_OFF(mmk_CUpti_CallbackData, CUpti_CallbackData, correlationId);
SAME_SIZE(mmk_cuLaunchKernel_params, cuLaunchKernel_params);
SAME_OFF(mmk_cuLaunchKernel_params, cuLaunchKernel_params, gridDimX);
SAME_OFF(mmk_cuLaunchKernel_params, cuLaunchKernel_params, blockDimZ);
SAME_OFF(mmk_cuLaunchKernel_params, cuLaunchKernel_params, sharedMemBytes);
SAME_OFF(mmk_cuLaunchKernel_params, cuLaunchKernel_params, hStream);
SAME_SIZE(mmk_cuLaunchKernel_params, cuLaunchKernel_ptsz_params);
SAME_SIZE(mmk_cuLaunchKernelEx_params, cuLaunchKernelEx_params);
SAME_OFF(mmk_cuLaunchKernelEx_params, cuLaunchKernelEx_params, f);
SAME_SIZE(mmk_CUlaunchConfig, CUlaunchConfig);
SAME_OFF(mmk_CUlaunchConfig, CUlaunchConfig, hStream);
SAME_OFF(mmk_CUlaunchConfig, CUlaunchConfig, numAttrs);
SAME_SIZE(mmk_cuLaunchCooperativeKernel_params, cuLaunchCooperativeKernel_params);
SAME_OFF(mmk_cuLaunchCooperativeKernel_params, cuLaunchCooperativeKernel_params, hStream);
SAME_SIZE(mmk_cuGraphLaunch_params, cuGraphLaunch_params);
SAME_OFF(mmk_cuGraphLaunch_params, cuGraphLaunch_params, hStream);
SAME_OFF(mmk_cuLaunchGrid_params, cuLaunchGrid_params, grid_height);
SAME(MMK_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(MMK_CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE);
SAME(MMK_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME(MMK_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME(MMK_CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(MMK_CUPTI_API_ENTER, CUPTI_API_ENTER);
SAME(MMK_CUPTI_API_EXIT, CUPTI_API_EXIT);
SAME(MMK_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize);
SAME(MMK_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize);
SAME(MMK_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize);
SAME(MMK_CBID_cuStreamSynchronize_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz);
SAME(MMK_CBID_cuCtxSynchronize_v2, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2);
SAME(MMK_CBID_cuLaunch, CUPTI_DRIVER_TRACE_CBID_cuLaunch);
SAME(MMK_CBID_cuLaunchGrid, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid);
SAME(MMK_CBID_cuLaunchGridAsync, CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync);
SAME(MMK_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
SAME(MMK_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz);
SAME(MMK_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
SAME(MMK_CBID_cuLaunchCooperativeKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz);
SAME(MMK_CBID_cuLaunchCooperativeKernelMultiDevice, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice);
SAME(MMK_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
SAME(MMK_CBID_cuGraphLaunch_ptsz, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
SAME(MMK_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
SAME(MMK_CBID_cuLaunchKernelEx_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz);
SAME(MMK_CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
SAME(MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(MMK_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, registersPerThread);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, start);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, end);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, streamId);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, gridX);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, blockZ);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, staticSharedMemory);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, dynamicSharedMemory);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, correlationId);
SAME_OFF(mmk_CUpti_ActivityKernel, CUpti_ActivityKernel10, name);

int main(void)
{
	puts("layout_check: the hook's CUDA/CUPTI declarations match the headers");
	return 0;
}
