/*
 * observe.c: completions seen on the GPU (protocol step 7). For a held
 * task the hook records a CUDA event on the stream of every
 * observe_every-th launch, at the exit of the launch call (the kernel is
 * queued by then), and a thread of the hook's own polls the oldest event
 * (cuEventQuery) and publishes its completion (mmk_report_done). The
 * kernel scheduler then counts a kernel as finished when the GPU says so,
 * not when its profiled duration has passed: a kernel slowed down by its
 * neighbours stays in flight.
 *
 * Events are a fixed pool, reused in order; a launch finding them all
 * waiting goes unobserved (counted), which only happens when the GPU is
 * POOL (256) observed launches behind. The CUDA calls come from the driver
 * library the process has loaded already (MMK_CUDA_PATH, else
 * libcuda.so.1, opened with RTLD_NOLOAD): the hook still links against no
 * CUDA library. Without them the hook observes nothing and says so.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "client.h"
#include "observe.h"

enum { POOL = 256, POLL_NS = 20000 };

typedef mmk_CUresult (*event_create_fn)(mmk_CUevent *, unsigned);
typedef mmk_CUresult (*event_record_fn)(mmk_CUevent, mmk_CUstream);
typedef mmk_CUresult (*event_query_fn)(mmk_CUevent);
typedef mmk_CUresult (*ctx_set_fn)(mmk_CUcontext);

static event_create_fn ev_create;
static event_record_fn ev_record, ev_record_ptsz;
static event_query_fn ev_query;
static ctx_set_fn ctx_set;

/* The events in flight, oldest at tail (both under mu); ring[i] keeps
 * its event once created. */
struct waiting {
	mmk_CUevent ev;
	void *ctx;
	uint64_t gen, seq;
};
static struct waiting ring[POOL];
static uint64_t head, tail;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;
static int started, failed_logged;

uint32_t mmk_observe_init(void)
{
	uint32_t every = 1;
	const char *v = getenv("MMK_OBSERVE_EVERY");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);
		if (*end || n < 0 || n > 1 << 20) {
			mmk_log(1, "MMK_OBSERVE_EVERY=%s is not a number of launches in 0..%d; using 1", v, 1 << 20);
			n = 1;
		}
		every = (uint32_t)n;
	}
	if (!every)
		return 0;
	const char *why = NULL;
	void *h = mmk_cuda(&why);
	if (!h) {
		mmk_log(1, "no CUDA driver loaded (%s): completions are predicted, not observed", why);
		return 0;
	}
	ev_create = (event_create_fn)dlsym(h, "cuEventCreate");
	ev_record = (event_record_fn)dlsym(h, "cuEventRecord");
	ev_record_ptsz = (event_record_fn)dlsym(h, "cuEventRecord_ptsz");
	ev_query = (event_query_fn)dlsym(h, "cuEventQuery");
	ctx_set = (ctx_set_fn)dlsym(h, "cuCtxSetCurrent");
	if (!ev_create || !ev_record || !ev_query || !ctx_set) {
		mmk_log(1, "the CUDA driver lacks cuEventCreate, cuEventRecord, cuEventQuery or cuCtxSetCurrent: completions are predicted, not observed");
		return 0;
	}
	if (!ev_record_ptsz)
		ev_record_ptsz = ev_record;
	return every;
}

/* observer publishes the completions of the events in flight, oldest
 * first, polling every POLL_NS while any is in flight. */
static void *observer(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	void *cur = NULL;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (tail == head)
			pthread_cond_wait(&more, &mu);
		struct waiting w = ring[tail % POOL];
		pthread_mutex_unlock(&mu);
		if (w.ctx && w.ctx != cur && ctx_set(w.ctx) == MMK_CUDA_SUCCESS)
			cur = w.ctx;
		mmk_CUresult r = ev_query(w.ev);
		if (r == MMK_CUDA_ERROR_NOT_READY) {
			struct timespec ts = {0, POLL_NS};
			nanosleep(&ts, NULL);
			continue;
		}
		if (r == MMK_CUDA_SUCCESS) {
			atomic_fetch_add_explicit(&mmk_stats.observed, 1, memory_order_relaxed);
			mmk_report_done(w.gen, w.seq);
		} else {
			atomic_fetch_add_explicit(&mmk_stats.unobserved, 1, memory_order_relaxed);
			if (!failed_logged++)
				mmk_log(1, "cuEventQuery: CUDA error %d; that launch goes unobserved", r);
		}
		pthread_mutex_lock(&mu);
		tail++;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

void mmk_observe_launch(void *ctx, const void *stream, int ptsz, uint64_t gen, uint64_t seq)
{
	pthread_mutex_lock(&mu);
	if (!started)
		started = mmk_thread(observer, "observer thread: completions are predicted, not observed") == 0 ? 1 : -1;
	struct waiting *w = &ring[head % POOL];
	mmk_CUresult r = MMK_CUDA_SUCCESS;
	if (started < 0 || head - tail == POOL || (!w->ev && (r = ev_create(&w->ev, MMK_CU_EVENT_DISABLE_TIMING)) != MMK_CUDA_SUCCESS) ||
	    (r = (ptsz ? ev_record_ptsz : ev_record)(w->ev, (mmk_CUstream)stream)) != MMK_CUDA_SUCCESS) {
		if (r != MMK_CUDA_SUCCESS && !failed_logged++)
			mmk_log(1, "recording a CUDA event: CUDA error %d; that launch goes unobserved", r);
		atomic_fetch_add_explicit(&mmk_stats.unobserved, 1, memory_order_relaxed);
		pthread_mutex_unlock(&mu);
		return;
	}
	w->ctx = ctx, w->gen = gen, w->seq = seq;
	if (head++ == tail)
		pthread_cond_signal(&more);
	pthread_mutex_unlock(&mu);
}
