/*
 * cupti_decls.h: the few CUDA driver and CUPTI declarations the hook uses,
 * written from NVIDIA's public documentation so that the hook builds without
 * the CUDA toolkit. bench/gpu/hook-probe.sh prints the real headers' values
 * and offsets on the GPU machine; docs/hook.md records them, and
 * hook/lib/layout_check.c (compiled there against the real headers) fails to
 * build if any of these drift.
 */
#ifndef MMK_CUPTI_DECLS_H
#define MMK_CUPTI_DECLS_H

#include <stddef.h>
#include <stdint.h>

typedef int mmk_CUresult;
typedef void *mmk_CUfunction;
typedef void *mmk_CUstream;
typedef void *mmk_CUgraphExec;
typedef void *mmk_CUevent;
typedef void *mmk_CUcontext;

/* CUDA driver values the observer (observe.c) uses (cuda.h). */
enum {
	MMK_CUDA_SUCCESS = 0,
	MMK_CUDA_ERROR_INVALID_HANDLE = 400,
	MMK_CUDA_ERROR_NOT_READY = 600,
	MMK_CU_EVENT_DISABLE_TIMING = 0x2,
};

/* CUPTI callback API (cupti_callbacks.h). */
typedef int mmk_CUptiResult;
typedef void *mmk_CUpti_SubscriberHandle;
typedef uint32_t mmk_CUpti_CallbackId;
typedef int mmk_CUpti_CallbackDomain;

enum {
	MMK_CUPTI_SUCCESS = 0,
	MMK_CUPTI_CB_DOMAIN_DRIVER_API = 1,
	MMK_CUPTI_API_ENTER = 0,
	MMK_CUPTI_API_EXIT = 1,
};

typedef struct {
	int callbackSite; /* CUpti_ApiCallbackSite */
	const char *functionName;
	const void *functionParams;
	void *functionReturnValue;
	const char *symbolName;
	void *context;
	uint32_t contextUid;
	uint64_t *correlationData;
	uint32_t correlationId;
} mmk_CUpti_CallbackData;

typedef void (*mmk_CUpti_CallbackFunc)(void *userdata, mmk_CUpti_CallbackDomain domain,
				       mmk_CUpti_CallbackId cbid, const void *cbdata);

/* Driver-API callback ids of every launch entry point (cupti_driver_cbid.h,
 * CUDA 13.0, read on the GPU machine). */
enum {
	MMK_CBID_cuCtxSynchronize = 17,
	MMK_CBID_cuEventSynchronize = 121,
	MMK_CBID_cuStreamSynchronize = 126,
	MMK_CBID_cuStreamSynchronize_ptsz = 440,
	/* cudaDeviceSynchronize's entry point since CUDA 12.9 (sync-probe.sh
	 * on the H100, CUDA 13.0: torch.cuda.synchronize() calls it). */
	MMK_CBID_cuCtxSynchronize_v2 = 800,
	MMK_CBID_cuLaunch = 115,
	MMK_CBID_cuLaunchGrid = 116,
	MMK_CBID_cuLaunchGridAsync = 117,
	MMK_CBID_cuLaunchKernel = 307,
	MMK_CBID_cuLaunchKernel_ptsz = 442,
	MMK_CBID_cuLaunchCooperativeKernel = 477,
	MMK_CBID_cuLaunchCooperativeKernel_ptsz = 478,
	MMK_CBID_cuLaunchCooperativeKernelMultiDevice = 480,
	MMK_CBID_cuGraphLaunch = 514,
	MMK_CBID_cuGraphLaunch_ptsz = 515,
	MMK_CBID_cuLaunchKernelEx = 652,
	MMK_CBID_cuLaunchKernelEx_ptsz = 653,
};

/* Parameter blocks CUPTI hands the callback (generated_cuda_meta.h). The
 * _ptsz variants have the same layout. */
typedef struct {
	mmk_CUfunction f;
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	mmk_CUstream hStream;
	void **kernelParams;
	void **extra;
} mmk_cuLaunchKernel_params;

typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	mmk_CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} mmk_CUlaunchConfig;

typedef struct {
	const mmk_CUlaunchConfig *config;
	mmk_CUfunction f;
	void **kernelParams;
	void **extra;
} mmk_cuLaunchKernelEx_params;

typedef struct {
	mmk_CUfunction f;
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	mmk_CUstream hStream;
	void **kernelParams;
} mmk_cuLaunchCooperativeKernel_params;

typedef struct {
	void *launchParamsList;
	unsigned int numDevices;
	unsigned int flags;
} mmk_cuLaunchCooperativeKernelMultiDevice_params;

typedef struct {
	mmk_CUgraphExec hGraph;
	mmk_CUstream hStream;
} mmk_cuGraphLaunch_params;

typedef struct {
	mmk_CUfunction f;
} mmk_cuLaunch_params;

typedef struct {
	mmk_CUfunction f;
	int grid_width, grid_height;
} mmk_cuLaunchGrid_params;

/* CUPTI activity API (cupti_activity.h), for the profiling phase. Records
 * are packed and 8-byte aligned; mmk_CUpti_ActivityKernel is the prefix of
 * CUpti_ActivityKernel10 up to name, which the hook reads. */
enum {
	MMK_CUPTI_ACTIVITY_KIND_KERNEL = 3,
	MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
	MMK_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1,
};

typedef struct __attribute__((packed, aligned(8))) {
	uint32_t kind;
	uint8_t cacheConfig;
	uint8_t sharedMemoryConfig;
	uint16_t registersPerThread;
	uint32_t partitionedGlobalCacheRequested;
	uint32_t partitionedGlobalCacheExecuted;
	uint64_t start, end; /* ns, cuptiGetTimestamp's clock */
	uint64_t completed;
	uint32_t deviceId, contextId, streamId;
	int32_t gridX, gridY, gridZ;
	int32_t blockX, blockY, blockZ;
	int32_t staticSharedMemory, dynamicSharedMemory;
	uint32_t localMemoryPerThread, localMemoryTotal;
	uint32_t correlationId;
	int64_t gridId;
	const char *name;
} mmk_CUpti_ActivityKernel;

typedef void (*mmk_CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void (*mmk_CUpti_BuffersCallbackCompleteFunc)(void *context, uint32_t streamId, uint8_t *buffer, size_t size, size_t validSize);

#endif
