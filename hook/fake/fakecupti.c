/*
 * fakecupti.c: a stand-in for libcupti and the GPU in CI. It implements the
 * calls the hook makes and enforces what CUPTI enforces: one subscriber per
 * process (a second gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
 * 39), callbacks only for enabled (domain, id) pairs, activity records only
 * once buffer callbacks are registered, and records handed back only
 * through the completion callback.
 *
 * fake_api_call plays the driver: it runs the subscriber's callback at API
 * enter and exit of one driver call, if enabled. It also plays the
 * driver's events (cuEventCreate, cuEventRecord, cuEventQuery) that the
 * hook's observer records after launches. fake_launch does that for
 * a kernel launch and then runs the kernel on a fake GPU: kernels run one at
 * a time, in launch order, for their duration, like time-shared processes
 * on one GPU. MMK_FAKE_GPU names a file that holds the GPU's timeline, so
 * that several processes share one GPU. fake_sync waits for the process's
 * last kernel, as a stream synchronisation does.
 *
 * It also plays the driver's kernel descriptor callback that the hook's TPC
 * masks use (tpcmask.c): cuGetExportTable hands out the callback table for
 * its id only, one subscriber, and fake_launch runs the pre-upload callback
 * on a Hopper descriptor (version 4.0) before the kernel is queued (one
 * subscriber to the driver's callbacks in all: CUPTI, or the table's); a
 * kernel whose descriptor keeps k of the fake GPU's 66 TPCs runs 66/k
 * times as long, as a kernel of many blocks does on fewer TPCs. Its mask
 * addresses 72 TPC slots, as an H100's does (8 GPCs of 9 TPCs), six of
 * them holes below slot 64 (an H100's slots 64-71 are TPCs; here the last
 * slot of each of the first six GPCs: 8, 17, 26, 35, 44, 53, an
 * assumption); a kernel with a bit set past slot 71 runs 1.22 times as
 * long besides (on an H100 bits 72-127 together ran a trainer at 0.818; a
 * simplification: single bits there cost nothing). Built by the tests,
 * never shipped.
 *
 * Like CUPTI it is thread-safe: any thread may launch, flush or subscribe
 * while others do. The activity buffer is under a mutex (act_mu), held
 * while the buffer callbacks run, so that a flush hands back every record
 * made before it and a buffer is handed back once (the callbacks may call
 * cuptiActivityGetNextRecord, not the rest of the activity API); the one
 * subscriber is taken under another (sub_mu); the rest is atomic.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../lib/cupti_decls.h"

#define FAKE_MAX_CBID 1024

/* The subscriber: set once, under sub_mu (data before the callback), read
 * by launching threads. */
static pthread_mutex_t sub_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic mmk_CUpti_CallbackFunc subscriber;
static _Atomic uint32_t correlation;
static void *_Atomic subscriber_data;
/* Another thread may turn a callback on or off while launches run (the
 * hook's watcher does, protocol step 8), as CUPTI allows. */
static _Atomic unsigned char enabled[FAKE_MAX_CBID];

/* The driver's callbacks take one subscriber, CUPTI or another through
 * its callback table (as an H200 with driver 580 does). */
static int table_taken(void);

__attribute__((visibility("default"))) mmk_CUptiResult cuptiSubscribe(mmk_CUpti_SubscriberHandle *sub, mmk_CUpti_CallbackFunc cb, void *data)
{
	pthread_mutex_lock(&sub_mu);
	mmk_CUptiResult r = MMK_CUPTI_SUCCESS;
	if (atomic_load(&subscriber) || table_taken())
		r = 39; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
	else if (!sub || !cb)
		r = 1; /* CUPTI_ERROR_INVALID_PARAMETER */
	else {
		atomic_store(&subscriber_data, data);
		atomic_store(&subscriber, cb);
		*sub = (mmk_CUpti_SubscriberHandle)&subscriber;
	}
	pthread_mutex_unlock(&sub_mu);
	return r;
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiEnableCallback(uint32_t enable, mmk_CUpti_SubscriberHandle sub, mmk_CUpti_CallbackDomain domain, mmk_CUpti_CallbackId cbid)
{
	if (sub != (mmk_CUpti_SubscriberHandle)&subscriber || domain != MMK_CUPTI_CB_DOMAIN_DRIVER_API || cbid >= FAKE_MAX_CBID)
		return 1;
	enabled[cbid] = enable ? 1 : 0;
	return MMK_CUPTI_SUCCESS;
}

/* api_site runs the callback of one site of a driver call, if enabled;
 * it returns 1 if it ran. */
static int api_site(mmk_CUpti_CallbackId cbid, int site, const void *params, const char *symbol, uint32_t corr)
{
	mmk_CUpti_CallbackFunc cb = atomic_load(&subscriber);
	if (!cb || cbid >= FAKE_MAX_CBID || !enabled[cbid])
		return 0;
	mmk_CUpti_CallbackData d;
	memset(&d, 0, sizeof d);
	d.functionName = "fake";
	d.functionParams = params;
	d.symbolName = symbol;
	d.correlationId = corr;
	d.callbackSite = site;
	cb(atomic_load(&subscriber_data), MMK_CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
	return 1;
}

/* fake_api_call runs the callbacks of one driver call with its parameters
 * and the kernel's symbol name; it returns how many callbacks ran. */
__attribute__((visibility("default"))) int fake_api_call(mmk_CUpti_CallbackId cbid, const void *params, const char *symbol)
{
	uint32_t corr = ++correlation;
	int n = api_site(cbid, MMK_CUPTI_API_ENTER, params, symbol, corr);
	return n + api_site(cbid, MMK_CUPTI_API_EXIT, params, symbol, corr);
}

/* The driver calls the fake knows by name, as cuptiGetCallbackName gives
 * them; a real CUPTI names every id of its version. */
static const struct {
	mmk_CUpti_CallbackId id;
	const char *name;
} names[] = {
	{MMK_CBID_cuCtxSynchronize, "cuCtxSynchronize"}, {MMK_CBID_cuCtxSynchronize_v2, "cuCtxSynchronize_v2"},
	{MMK_CBID_cuEventSynchronize, "cuEventSynchronize"}, {MMK_CBID_cuStreamSynchronize, "cuStreamSynchronize"},
	{MMK_CBID_cuStreamSynchronize_ptsz, "cuStreamSynchronize_ptsz"}, {MMK_CBID_cuLaunchKernel, "cuLaunchKernel"},
	{MMK_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"}, {MMK_CBID_cuGraphLaunch, "cuGraphLaunch"},
};

__attribute__((visibility("default"))) mmk_CUptiResult cuptiGetCallbackName(mmk_CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	if (domain != MMK_CUPTI_CB_DOMAIN_DRIVER_API || !name)
		return 1; /* CUPTI_ERROR_INVALID_PARAMETER */
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (names[i].id == cbid) {
			*name = names[i].name;
			return MMK_CUPTI_SUCCESS;
		}
	return 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiGetTimestamp(uint64_t *ts)
{
	if (!ts)
		return 1;
	*ts = now_ns();
	return MMK_CUPTI_SUCCESS;
}

/* Activity records: one buffer at a time, handed back when full or
 * flushed; all of it under act_mu. */
static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static mmk_CUpti_BuffersCallbackRequestFunc requested;
static mmk_CUpti_BuffersCallbackCompleteFunc completed;
static int kernels_on;
static uint8_t *buf;
static size_t buf_size, buf_used;

__attribute__((visibility("default"))) mmk_CUptiResult cuptiActivityRegisterCallbacks(mmk_CUpti_BuffersCallbackRequestFunc req, mmk_CUpti_BuffersCallbackCompleteFunc comp)
{
	if (!req || !comp)
		return 1;
	pthread_mutex_lock(&act_mu);
	requested = req, completed = comp;
	pthread_mutex_unlock(&act_mu);
	return MMK_CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiActivityEnable(uint32_t kind)
{
	if (kind != MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		return 1;
	pthread_mutex_lock(&act_mu);
	mmk_CUptiResult r = MMK_CUPTI_SUCCESS;
	if (!requested)
		r = 15; /* CUPTI_ERROR_NOT_INITIALIZED: no buffer callbacks */
	else
		kernels_on = 1;
	pthread_mutex_unlock(&act_mu);
	return r;
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiActivityDisable(uint32_t kind)
{
	if (kind != MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		return 1;
	pthread_mutex_lock(&act_mu);
	kernels_on = 0;
	pthread_mutex_unlock(&act_mu);
	return MMK_CUPTI_SUCCESS;
}

/* hand_back hands the buffer back (act_mu held); it is no longer the
 * fake's before the callback runs. */
static void hand_back(void)
{
	uint8_t *b = buf;
	size_t size = buf_size, used = buf_used;
	buf = NULL, buf_size = buf_used = 0;
	if (b)
		completed(NULL, 0, b, size, used);
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	pthread_mutex_lock(&act_mu);
	if (completed)
		hand_back();
	pthread_mutex_unlock(&act_mu);
	return MMK_CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record)
{
	if (!buffer || !record)
		return 1;
	uint8_t *next = *record ? (uint8_t *)*record + sizeof(mmk_CUpti_ActivityKernel) : buffer;
	if (next + sizeof(mmk_CUpti_ActivityKernel) > buffer + valid)
		return 12; /* CUPTI_ERROR_MAX_LIMIT_REACHED: no more records */
	*record = next;
	return MMK_CUPTI_SUCCESS;
}

/* The fake GPU's timeline: when the last kernel queued on it ends (set
 * up once, open_timeline); and when the process's last kernel ends. */
static _Atomic uint64_t own_gpu, *gpu;
static pthread_once_t gpu_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t last_end;

static void open_timeline(void)
{
	gpu = &own_gpu;
	const char *p = getenv("MMK_FAKE_GPU");
	if (p && *p) {
		int fd = open(p, O_RDWR | O_CREAT, 0600);
		if (fd >= 0 && ftruncate(fd, 4096) == 0) {
			void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m != MAP_FAILED)
				gpu = m;
		}
		if (fd >= 0)
			close(fd);
	}
}

static _Atomic uint64_t *timeline(void)
{
	pthread_once(&gpu_once, open_timeline);
	return gpu;
}

static void record(uint32_t corr, const mmk_cuLaunchKernel_params *p, const char *symbol, uint64_t start, uint64_t end)
{
	pthread_mutex_lock(&act_mu);
	if (!kernels_on)
		goto out;
	if (buf && buf_used + sizeof(mmk_CUpti_ActivityKernel) > buf_size)
		hand_back();
	if (!buf) {
		size_t max = 0;
		requested(&buf, &buf_size, &max);
		if (!buf || buf_size < sizeof(mmk_CUpti_ActivityKernel)) {
			buf = NULL, buf_size = 0;
			goto out; /* CUPTI drops records it has no buffer for */
		}
	}
	mmk_CUpti_ActivityKernel *k = (mmk_CUpti_ActivityKernel *)(buf + buf_used);
	memset(k, 0, sizeof *k);
	k->kind = MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->registersPerThread = 32;
	k->start = start, k->end = end;
	k->streamId = 7;
	k->gridX = (int32_t)p->gridDimX, k->gridY = (int32_t)p->gridDimY, k->gridZ = (int32_t)p->gridDimZ;
	k->blockX = (int32_t)p->blockDimX, k->blockY = (int32_t)p->blockDimY, k->blockZ = (int32_t)p->blockDimZ;
	k->dynamicSharedMemory = (int32_t)p->sharedMemBytes;
	k->correlationId = corr;
	k->name = symbol;
	buf_used += sizeof *k;
out:
	pthread_mutex_unlock(&act_mu);
}

/* The driver's callback table (tpcmask.c names its id and entries). */
enum { FAKE_TPCS = 66, FAKE_SLOTS = 72, QMD_DOMAIN = 0xb, QMD_PRE_UPLOAD = 1 };
static const unsigned char table_id[16] = {0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
					   0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b};
typedef void (*qmd_fn)(void *, int, int, const void *);
static _Atomic qmd_fn qmd_cb; /* set once, under sub_mu (data first) */
static void *_Atomic qmd_data;
static _Atomic int qmd_on;
static _Atomic uint64_t tpc_masked;
static _Atomic uint32_t tpc_last_keep;
static _Atomic uint64_t tpc_past; /* kernels with a mask bit past FAKE_SLOTS */

static int table_taken(void) { return atomic_load(&qmd_cb) != NULL; }

static int fake_subscribe(uint32_t *handle, qmd_fn cb, void *data)
{
	pthread_mutex_lock(&sub_mu);
	int r = 0;
	if (table_taken() || atomic_load(&subscriber))
		r = 210; /* CUDA_ERROR_ALREADY_ACQUIRED: one subscriber */
	else if (!handle || !cb)
		r = 1;
	else {
		atomic_store(&qmd_data, data);
		atomic_store(&qmd_cb, cb);
		*handle = 7;
	}
	pthread_mutex_unlock(&sub_mu);
	return r;
}

static int fake_enable(uint32_t on, uint32_t handle, int domain, int cbid)
{
	if (handle != 7 || !table_taken())
		return 1;
	if (domain == QMD_DOMAIN && cbid == QMD_PRE_UPLOAD)
		qmd_on = on ? 1 : 0;
	return 0;
}

static const void *fake_table[8] = {0, 0, 0, (const void *)fake_subscribe, 0, 0, (const void *)fake_enable, 0};

__attribute__((visibility("default"))) int cuGetExportTable(const void **table, const void *id)
{
	if (!table || !id)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	if (memcmp(id, table_id, sizeof table_id) != 0)
		return 500; /* CUDA_ERROR_NOT_FOUND */
	*table = fake_table;
	return 0;
}

/* is_tpc reports whether mask slot i is one of the fake GPU's TPCs: every
 * slot but the last of each of the first six GPCs of 9. */
static int is_tpc(uint32_t i) { return i % 9 != 8 || i / 9 >= FAKE_SLOTS - FAKE_TPCS; }

/* descriptor_keep runs the pre-upload callback on a fresh descriptor and
 * returns the TPCs it leaves the kernel (FAKE_TPCS: no mask); *past says
 * whether the mask sets a bit past the slots. */
static uint32_t descriptor_keep(int *past)
{
	*past = 0;
	qmd_fn cb = atomic_load(&qmd_cb);
	if (!cb || !qmd_on)
		return FAKE_TPCS;
	unsigned char tmd[512];
	memset(tmd, 0, sizeof tmd);
	tmd[72] = 0x40;
	void *params[6] = {0};
	uint32_t size = sizeof params;
	memcpy(params, &size, sizeof size);
	params[4] = tmd;
	cb(atomic_load(&qmd_data), QMD_DOMAIN, QMD_PRE_UPLOAD, params);
	uint32_t w[4], first;
	memcpy(&first, tmd, sizeof first);
	memcpy(w, tmd + 304, sizeof w);
	if (!(first & 0x80000000u))
		return FAKE_TPCS;
	uint32_t keep = 0;
	for (uint32_t i = 0; i < FAKE_SLOTS; i++)
		if (is_tpc(i))
			keep += !(w[i / 32] & (1u << (i % 32)));
	for (uint32_t i = FAKE_SLOTS; i < 128; i++)
		if (w[i / 32] & (1u << (i % 32)))
			*past = 1;
	return keep;
}

/* fake_tpc_stats are the kernels that ran masked, the TPCs the last one
 * kept, and the kernels whose mask set a bit past the slots. */
__attribute__((visibility("default"))) void fake_tpc_stats(uint64_t *masked, uint32_t *last_keep, uint64_t *past)
{
	*masked = atomic_load(&tpc_masked);
	*last_keep = atomic_load(&tpc_last_keep);
	*past = atomic_load(&tpc_past);
}

/* fake_launch is one cuLaunchKernel of a kernel that runs dur_ns: the
 * enter callback, the kernel queued on the fake GPU, the exit callback
 * (as the driver does: the kernel is queued when the call returns). */
__attribute__((visibility("default"))) void fake_launch(const mmk_cuLaunchKernel_params *p, const char *symbol, uint64_t dur_ns)
{
	uint32_t corr = ++correlation;
	api_site(MMK_CBID_cuLaunchKernel, MMK_CUPTI_API_ENTER, p, symbol, corr);
	int past;
	uint32_t keep = descriptor_keep(&past);
	if (past) {
		atomic_fetch_add(&tpc_past, 1);
		dur_ns = dur_ns * 122 / 100;
	}
	if (keep < FAKE_TPCS) {
		atomic_fetch_add(&tpc_masked, 1);
		atomic_store(&tpc_last_keep, keep);
		dur_ns = keep ? dur_ns * FAKE_TPCS / keep : dur_ns * FAKE_TPCS;
	}
	_Atomic uint64_t *g = timeline();
	uint64_t now = now_ns(), busy = atomic_load(g), start;
	do {
		start = busy > now ? busy : now;
	} while (!atomic_compare_exchange_weak(g, &busy, start + dur_ns));
	uint64_t end = start + dur_ns, last = atomic_load(&last_end);
	/* The process's kernels end in launch order: the latest end stays. */
	while (last < end && !atomic_compare_exchange_weak(&last_end, &last, end))
		;
	record(corr, p, symbol, start, end);
	api_site(MMK_CBID_cuLaunchKernel, MMK_CUPTI_API_EXIT, p, symbol, corr);
}

/* The driver's events, as the hook's observer uses them: an event is
 * complete once the work queued before its record has run (here: the
 * process's last kernel queued), and an event never recorded is
 * complete. A handle that cuEventCreate did not give, or a flag the
 * driver does not know, is refused as the driver refuses it. */
enum { FAKE_EVENT_MAGIC = 0x45564e54, FAKE_EVENT_FLAGS = 0xf };

struct fake_event {
	uint32_t magic;
	_Atomic uint64_t done_at; /* 0: never recorded */
};

__attribute__((visibility("default"))) mmk_CUresult cuEventCreate(mmk_CUevent *ev, unsigned flags)
{
	if (!ev || (flags & ~(unsigned)FAKE_EVENT_FLAGS))
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	struct fake_event *e = calloc(1, sizeof *e);
	if (!e)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	e->magic = FAKE_EVENT_MAGIC;
	*ev = e;
	return MMK_CUDA_SUCCESS;
}

static struct fake_event *event_of(mmk_CUevent ev)
{
	struct fake_event *e = ev;
	return e && e->magic == FAKE_EVENT_MAGIC ? e : NULL;
}

__attribute__((visibility("default"))) mmk_CUresult cuEventRecord(mmk_CUevent ev, mmk_CUstream stream)
{
	(void)stream; /* one stream per process */
	struct fake_event *e = event_of(ev);
	if (!e)
		return MMK_CUDA_ERROR_INVALID_HANDLE;
	uint64_t at = atomic_load(&last_end);
	if (at == 0)
		at = 1;
	atomic_store(&e->done_at, at);
	return MMK_CUDA_SUCCESS;
}

__attribute__((visibility("default"))) mmk_CUresult cuEventRecord_ptsz(mmk_CUevent ev, mmk_CUstream stream)
{
	return cuEventRecord(ev, stream);
}

__attribute__((visibility("default"))) mmk_CUresult cuEventQuery(mmk_CUevent ev)
{
	struct fake_event *e = event_of(ev);
	if (!e)
		return MMK_CUDA_ERROR_INVALID_HANDLE;
	return now_ns() >= atomic_load(&e->done_at) ? MMK_CUDA_SUCCESS : MMK_CUDA_ERROR_NOT_READY;
}

__attribute__((visibility("default"))) mmk_CUresult cuCtxSetCurrent(mmk_CUcontext ctx)
{
	(void)ctx;
	return MMK_CUDA_SUCCESS;
}

/* fake_sync is one cudaDeviceSynchronize as CUDA 13 makes it, a
 * cuCtxSynchronize_v2: its enter callback, a wait until the process's
 * kernels have run, its exit callback. */
__attribute__((visibility("default"))) void fake_sync(void)
{
	uint32_t corr = ++correlation;
	api_site(MMK_CBID_cuCtxSynchronize_v2, MMK_CUPTI_API_ENTER, NULL, NULL, corr);
	uint64_t now = now_ns(), end = atomic_load(&last_end);
	if (end > now) {
		uint64_t d = end - now;
		struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ull), .tv_nsec = (long)(d % 1000000000ull)};
		nanosleep(&ts, NULL);
	}
	api_site(MMK_CBID_cuCtxSynchronize_v2, MMK_CUPTI_API_EXIT, NULL, NULL, corr);
}
