/*
 * inject.c: the hook's entry. The CUDA driver loads the library named by
 * CUDA_INJECTION64_PATH at cuInit and calls InitializeInjection, before any
 * kernel can be launched. The hook then subscribes to CUPTI callbacks and
 * enables only the driver-API launch callback ids, so every kernel launch of
 * the process, whichever API issued it, runs mmk_on_launch on the launching
 * thread before the launch, and nothing else is slowed down.
 *
 * CUPTI is opened with dlopen (MMK_CUPTI_PATH, else libcupti.so.13, else
 * libcupti.so): the hook links against no CUDA library and builds without
 * the toolkit. No Go code runs in the job's process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "observe.h"
#include "profile.h"
#include "tpcmask.h"

static const char *stats_path;

/* write_stats appends the counters to MMK_HOOK_STATS at exit. */
static void write_stats(void)
{
	if (!stats_path)
		return;
	char buf[1024];
	int n = mmk_stats_json(buf, sizeof buf - 1);
	buf[n++] = '\n';
	FILE *f = fopen(stats_path, "a");
	if (!f) {
		mmk_log(1, "stats %s: %s", stats_path, strerror(errno));
		return;
	}
	fwrite(buf, 1, (size_t)n, f);
	fclose(f);
}

static int is_sync(mmk_CUpti_CallbackId cbid);

/* mark_only: the launch callbacks are on only to mark requests (protocol
 * step 9). */
static _Atomic int mark_only;

/* A launch to observe, between its enter and exit callbacks (one thread
 * runs both, with no other launch between them). */
static __thread struct {
	uint64_t gen, seq;
	const void *stream;
	int ptsz;
} to_observe;

static int is_ptsz(enum mmk_api a)
{
	return a == MMK_API_LAUNCH_KERNEL_PTSZ || a == MMK_API_LAUNCH_KERNEL_EX_PTSZ || a == MMK_API_COOPERATIVE_PTSZ ||
	       a == MMK_API_GRAPH_PTSZ;
}

static void mmk_on_callback(void *userdata, mmk_CUpti_CallbackDomain domain, mmk_CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	const mmk_CUpti_CallbackData *cb = data;
	if (domain != MMK_CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (is_sync(cbid)) {
		atomic_fetch_add_explicit(&mmk_stats.syncs, cb->callbackSite == MMK_CUPTI_API_ENTER, memory_order_relaxed);
		mmk_report_sync(cb->callbackSite == MMK_CUPTI_API_ENTER);
		return;
	}
	if (atomic_load_explicit(&mark_only, memory_order_relaxed) && !atomic_load_explicit(&mmk_profiling, memory_order_relaxed)) {
		/* Quiet, marking requests (protocol step 9): no launch is
		 * reported, the first after a synchronisation begins a request. */
		if (cb->callbackSite == MMK_CUPTI_API_ENTER)
			mmk_mark();
		return;
	}
	if (cb->callbackSite != MMK_CUPTI_API_ENTER) {
		/* The launch went: its kernel is queued on the stream. */
		if (to_observe.seq) {
			mmk_observe_launch(cb->context, to_observe.stream, to_observe.ptsz, to_observe.gen, to_observe.seq);
			to_observe.seq = 0;
		}
		return;
	}
	to_observe.seq = 0; /* an exit missed while the callbacks turned */
	struct mmk_launch l;
	if (!mmk_decode(cbid, cb, &l))
		return;
	atomic_fetch_add_explicit(&mmk_stats.by_api[l.api], 1, memory_order_relaxed);
	if (!l.name)
		atomic_fetch_add_explicit(&mmk_stats.unnamed, 1, memory_order_relaxed);
	uint32_t id = mmk_name_id(&l);
	if (atomic_load_explicit(&mmk_profiling, memory_order_relaxed))
		mmk_profile_launch(cb, &l, id);
	uint64_t gen = 0, seq = mmk_report(&l, id, &gen);
	if (seq) {
		to_observe.gen = gen, to_observe.seq = seq;
		to_observe.stream = l.stream, to_observe.ptsz = is_ptsz(l.api);
	}
}

static const mmk_CUpti_CallbackId callback_ids[] = {
	MMK_CBID_cuLaunch, MMK_CBID_cuLaunchGrid, MMK_CBID_cuLaunchGridAsync,
	MMK_CBID_cuLaunchKernel, MMK_CBID_cuLaunchKernel_ptsz,
	MMK_CBID_cuLaunchCooperativeKernel, MMK_CBID_cuLaunchCooperativeKernel_ptsz,
	MMK_CBID_cuLaunchCooperativeKernelMultiDevice,
	MMK_CBID_cuGraphLaunch, MMK_CBID_cuGraphLaunch_ptsz,
	MMK_CBID_cuLaunchKernelEx, MMK_CBID_cuLaunchKernelEx_ptsz,
};

/* Synchronisations tell the scheduler when a task's kernels have really
 * finished and an online job's request is over (protocol step 6); they
 * are rare next to launches. Their ids are looked up by name where CUPTI
 * can name them (cuptiGetCallbackName), since a new CUDA moves a runtime
 * call to a new entry point (cudaDeviceSynchronize to cuCtxSynchronize_v2
 * in 12.9), and default to the ids of CUDA 13.0. */
static const char *const sync_names[] = {"cuCtxSynchronize", "cuCtxSynchronize_v2", "cuEventSynchronize",
					 "cuStreamSynchronize", "cuStreamSynchronize_ptsz"};
enum { MAX_SYNC_IDS = 8, MAX_CBID = 4096 };
static mmk_CUpti_CallbackId sync_ids[MAX_SYNC_IDS] = {MMK_CBID_cuCtxSynchronize, MMK_CBID_cuCtxSynchronize_v2,
						       MMK_CBID_cuEventSynchronize, MMK_CBID_cuStreamSynchronize,
						       MMK_CBID_cuStreamSynchronize_ptsz};
static int n_sync = 5;

static int is_sync(mmk_CUpti_CallbackId cbid)
{
	for (int i = 0; i < n_sync; i++)
		if (sync_ids[i] == cbid)
			return 1;
	return 0;
}

typedef mmk_CUptiResult (*name_fn)(mmk_CUpti_CallbackDomain, uint32_t, const char **);

/* find_sync_ids replaces the default sync ids with those CUPTI names so. */
static void find_sync_ids(void *cupti)
{
	name_fn name_of = (name_fn)dlsym(cupti, "cuptiGetCallbackName");
	if (!name_of)
		return;
	mmk_CUpti_CallbackId found[MAX_SYNC_IDS];
	int n = 0;
	for (uint32_t id = 1; id < MAX_CBID && n < MAX_SYNC_IDS; id++) {
		const char *name = NULL;
		if (name_of(MMK_CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != MMK_CUPTI_SUCCESS || !name)
			continue;
		for (size_t k = 0; k < sizeof sync_names / sizeof *sync_names; k++)
			if (strcmp(name, sync_names[k]) == 0)
				found[n++] = id;
	}
	if (n == 0)
		return;
	memcpy(sync_ids, found, (size_t)n * sizeof *found);
	n_sync = n;
	mmk_log(0, "%d synchronisation callback ids found by name", n);
}

typedef mmk_CUptiResult (*subscribe_fn)(mmk_CUpti_SubscriberHandle *, mmk_CUpti_CallbackFunc, void *);
typedef mmk_CUptiResult (*enable_fn)(uint32_t, mmk_CUpti_SubscriberHandle, mmk_CUpti_CallbackDomain, mmk_CUpti_CallbackId);

static void *open_cupti(void)
{
	const char *candidates[] = {getenv("MMK_CUPTI_PATH"), "libcupti.so.13", "libcupti.so"};
	for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
		if (!candidates[i] || !*candidates[i])
			continue;
		void *h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
		if (h) {
			mmk_log(0, "CUPTI from %s", candidates[i]);
			return h;
		}
		mmk_log(0, "dlopen %s: %s", candidates[i], dlerror());
	}
	return NULL;
}

static int injected;
static int masks_hold; /* TPC masks took the driver's callbacks */
static enable_fn enable_cb;
static mmk_CUpti_SubscriberHandle subscriber;

/* Which callbacks are on: the synchronisations while the hook is active
 * (mmk_hook_set_active), the launches while it is active and the server
 * needs them (not quiet, protocol step 8) or marks requests (step 9), or a
 * profile is being taken. cb_mu orders the watcher thread's changes
 * against the job's. */
static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static int active = 1, launches_cur, syncs_cur;
static enum mmk_launch_mode mode = MMK_LAUNCHES_ON;

/* enable_ids turns ids on or off; it returns the number CUPTI refused. */
static int enable_ids(const mmk_CUpti_CallbackId *ids, size_t n, uint32_t on)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		mmk_CUptiResult r = enable_cb(on, subscriber, MMK_CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
		if (r != MMK_CUPTI_SUCCESS) {
			mmk_log(1, "cuptiEnableCallback(%u, %u): CUPTI error %d", on, ids[i], r);
			bad++;
		}
	}
	return bad;
}

/* apply_callbacks (cb_mu held) brings the callbacks to what active, loud
 * and profiling ask; it returns the number of ids CUPTI refused. A launch
 * id CUPTI refused to turn on leaves the launches counted off. */
static int apply_callbacks(void)
{
	int bad = 0;
	int want = active && (mode != MMK_LAUNCHES_OFF || atomic_load_explicit(&mmk_profiling, memory_order_relaxed));
	if (want != launches_cur) {
		int b = enable_ids(callback_ids, sizeof callback_ids / sizeof *callback_ids, (uint32_t)want);
		launches_cur = b && want ? 0 : want;
		bad += b;
	}
	if (active != syncs_cur) {
		bad += enable_ids(sync_ids, (size_t)n_sync, (uint32_t)active);
		syncs_cur = active;
	}
	return bad;
}

/* A fork while the watcher thread holds cb_mu must not leave it locked in
 * the child. */
static void cb_lock(void) { pthread_mutex_lock(&cb_mu); }
static void cb_unlock(void) { pthread_mutex_unlock(&cb_mu); }

/* set_launches is the client's switch (protocol steps 8 and 9). */
static int set_launches(enum mmk_launch_mode m)
{
	pthread_mutex_lock(&cb_mu);
	mode = m;
	atomic_store_explicit(&mark_only, m == MMK_LAUNCHES_MARK, memory_order_relaxed);
	if (enable_cb)
		apply_callbacks();
	int r = launches_cur;
	pthread_mutex_unlock(&cb_mu);
	return r;
}

/* InitializeInjection is what the CUDA driver calls. It returns 1 when the
 * hook is in place; on any failure the job runs on unhooked (fail-open). */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	if (injected++)
		return 1;
	mmk_log_init();
	stats_path = getenv("MMK_HOOK_STATS");
	if (stats_path && !*stats_path)
		stats_path = NULL;
	if (stats_path)
		atexit(write_stats);
	static const struct mmk_client_hooks client_hooks = {mmk_observe_init, set_launches};
	/* The driver takes one subscriber to its callbacks, CUPTI's or
	 * another's: TPC masks (MMK_TPC_MASK=1) take it first, and the job's
	 * launches then go unseen (an offline job a latency controller masks
	 * needs no launch of it seen); it still talks to its kernel scheduler,
	 * which sets its mask. */
	if (mmk_tpcmask_init()) {
		masks_hold = 1;
		mmk_log(0, "TPC masks hold the driver's callbacks (MMK_TPC_MASK=1): launches and synchronisations are not seen");
		mmk_client_init(&client_hooks);
		return 1;
	}
	void *h = open_cupti();
	if (!h) {
		mmk_log(1, "no CUPTI library (set MMK_CUPTI_PATH); launches are not seen");
		return 0;
	}
	subscribe_fn subscribe = (subscribe_fn)dlsym(h, "cuptiSubscribe");
	enable_fn enable = (enable_fn)dlsym(h, "cuptiEnableCallback");
	if (!subscribe || !enable) {
		mmk_log(1, "CUPTI lacks cuptiSubscribe or cuptiEnableCallback; launches are not seen");
		return 0;
	}
	mmk_CUptiResult r = subscribe(&subscriber, mmk_on_callback, NULL);
	if (r != MMK_CUPTI_SUCCESS) {
		mmk_log(1, "cuptiSubscribe: CUPTI error %d (another CUPTI subscriber, e.g. a profiler?); launches are not seen", r);
		return 0;
	}
	find_sync_ids(h);
	pthread_mutex_lock(&cb_mu);
	enable_cb = enable;
	apply_callbacks();
	pthread_mutex_unlock(&cb_mu);
	pthread_atfork(cb_lock, cb_unlock, cb_unlock);
	mmk_profile_init(h);
	mmk_client_init(&client_hooks);
	mmk_log(0, "hooked %zu launch and %d synchronisation callbacks", sizeof callback_ids / sizeof *callback_ids, n_sync);
	return 1;
}

/* mmk_hook_stats_json is for a job (or a test) that reads the counters
 * through ctypes or dlsym. */
__attribute__((visibility("default"))) int mmk_hook_stats_json(char *buf, int len)
{
	return mmk_stats_json(buf, len);
}

/* mmk_hook_quiet is 1 while the kernel scheduler keeps the hook quiet
 * (the launch callbacks off, or marking requests only: protocol step 8),
 * else 0; for a job (or a test) that needs to know which launches the
 * hook sees. */
__attribute__((visibility("default"))) int mmk_hook_quiet(void)
{
	pthread_mutex_lock(&cb_mu);
	int q = mode != MMK_LAUNCHES_ON;
	pthread_mutex_unlock(&cb_mu);
	return q;
}

/* mmk_hook_set_active turns the hook's callbacks off (0) or back on
 * (1) while the job runs: with them off CUPTI calls nothing at a launch.
 * On, the launch callbacks still follow the server's quiet word.
 * It is for measuring the hook's cost inside one process (interleaved
 * blocks of iterations, bench/gpu/hook_workload.py --mode toggle), never
 * called from a launch callback. It returns 0 on success (and where TPC
 * masks hold the driver's callbacks: there are none of CUPTI's to turn),
 * -1 when the hook is not in place, else the number of ids CUPTI
 * refused. */
__attribute__((visibility("default"))) int mmk_hook_set_active(int on)
{
	if (masks_hold)
		return 0;
	pthread_mutex_lock(&cb_mu);
	int r = -1;
	if (enable_cb) {
		active = on ? 1 : 0;
		r = apply_callbacks();
	}
	pthread_mutex_unlock(&cb_mu);
	return r;
}

/* mmk_report_request is for a service that measures its own requests
 * (protocol step 10): start and end on CLOCK_MONOTONIC, in nanoseconds
 * (Python: time.monotonic_ns()). mmk then judges the job's latency target
 * by them instead of by what the hook sees. It waits only while the ring
 * to the scheduler is full, at most the hook's bound; it returns 0, or -1
 * without a kernel scheduler or for an end of 0 or before its start. */
__attribute__((visibility("default"))) int mmk_report_request(unsigned long long start_ns, unsigned long long end_ns)
{
	return mmk_client_request(start_ns, end_ns);
}

/* mmk_hook_count is the number of launches seen so far. */
__attribute__((visibility("default"))) unsigned long long mmk_hook_count(void)
{
	return (unsigned long long)mmk_hook_launches();
}
