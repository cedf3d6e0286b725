/*
 * profile.c: the profiling phase. When MMK_PROFILE_OUT names a file, the
 * hook turns on CUPTI's kernel activity records and writes, for a number of
 * runs, every kernel's GPU start and end with its launch call's time, in
 * the kernel trace format of ../shared/traces (one JSON object per line,
 * times in microseconds; "iter" is the run). mmkctl turns the file into the
 * task's kernel profile with the same Go code that profiles those traces.
 *
 * A run ends where the job's launch calls pause for MMK_PROFILE_RUN_GAP_US
 * (default 1000): an inference request, or a training step that waits for
 * the GPU. The first MMK_PROFILE_SKIP runs (default 10) are warm-up and not
 * written; the phase ends after MMK_PROFILE_RUNS more (default 50) once
 * MMK_PROFILE_MIN_S seconds (default 2) have passed, or after
 * MMK_PROFILE_MAX_S seconds (default 60), or at exit. Only complete runs
 * are written. The file appears (renamed from PATH.tmp) when it is whole.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"

typedef mmk_CUptiResult (*register_fn)(mmk_CUpti_BuffersCallbackRequestFunc, mmk_CUpti_BuffersCallbackCompleteFunc);
typedef mmk_CUptiResult (*kind_fn)(uint32_t kind);
typedef mmk_CUptiResult (*next_fn)(uint8_t *buffer, size_t valid, void **record);
typedef mmk_CUptiResult (*flush_fn)(uint32_t flag);
typedef mmk_CUptiResult (*stamp_fn)(uint64_t *ts);

enum { BUFFER_BYTES = 4 << 20, CORR = 1 << 18 };

/* What the launch callback knew of a launch, found again by its CUPTI
 * correlation id when the kernel's record arrives. */
struct corr {
	_Atomic uint32_t id;
	uint32_t name_id;
	int32_t run; /* -1: warm-up */
	uint32_t api;
	uint64_t launch_ns;
};

static struct {
	kind_fn enable, disable;
	next_fn next;
	flush_fn flush;
	stamp_fn stamp;
	char path[4096], tmp[4100];
	FILE *f;
	pid_t pid;
	uint64_t run_gap, min_ns, max_ns;
	int skip, runs;
	uint64_t t0;
	_Atomic uint64_t last_launch;
	_Atomic int run;      /* runs begun, minus one */
	_Atomic int end_run;  /* runs before this one are written; INT32_MAX while on */
	_Atomic uint64_t written, dropped;
	struct corr *corr;
	pthread_mutex_t mu; /* file, finishing */
	pthread_cond_t cv;
	int finished;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

_Atomic int mmk_profiling;

/* env_u64 reads a whole number of at least min from the environment. */
static uint64_t env_u64(const char *k, uint64_t def, uint64_t min)
{
	const char *v = getenv(k);
	if (!v || !*v)
		return def;
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	if (*end || x < min || *v == '-') {
		mmk_log(1, "%s=%s is not a whole number of at least %llu; using %llu", k, v, (unsigned long long)min,
			(unsigned long long)def);
		return def;
	}
	return x;
}

static void request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;
	if (posix_memalign(&p, 8, BUFFER_BYTES) != 0)
		p = NULL;
	*buffer = p;
	*size = p ? BUFFER_BYTES : 0;
	*max_records = 0;
}

/* json_str writes s as a JSON string. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void write_kernel(const mmk_CUpti_ActivityKernel *k)
{
	struct corr *c = &P.corr[k->correlationId & (CORR - 1)];
	if (atomic_load_explicit(&c->id, memory_order_acquire) != k->correlationId) {
		atomic_fetch_add_explicit(&P.dropped, 1, memory_order_relaxed);
		return;
	}
	if (c->run < 0 || c->run >= atomic_load(&P.end_run))
		return;
	const char *name = c->api == MMK_API_GRAPH || c->api == MMK_API_GRAPH_PTSZ ? k->name : mmk_name_of(c->name_id);
	if (!name)
		name = k->name ? k->name : "?";
	pthread_mutex_lock(&P.mu);
	if (P.f) {
		fprintf(P.f, "{\"iter\": %d, \"name\": ", c->run);
		json_str(P.f, name);
		fprintf(P.f, ", \"grid\": [%d, %d, %d], \"block\": [%d, %d, %d], \"regs\": %u, \"smem\": %d, \"occ\": 0, \"stream\": %u, "
			     "\"ts\": %.3f, \"dur\": %.3f, \"launch_ts\": %.3f, \"launch_api\": \"%s\"}\n",
			k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ, k->registersPerThread,
			k->staticSharedMemory + k->dynamicSharedMemory, k->streamId, (double)k->start / 1e3,
			(double)(k->end - k->start) / 1e3, (double)c->launch_ns / 1e3, mmk_api_name((enum mmk_api)c->api));
		atomic_fetch_add_explicit(&P.written, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&P.mu);
}

static void complete(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)ctx, (void)stream, (void)size;
	void *rec = NULL;
	while (buffer && P.next(buffer, valid, &rec) == MMK_CUPTI_SUCCESS) {
		const mmk_CUpti_ActivityKernel *k = rec;
		if (k->kind == MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || k->kind == MMK_CUPTI_ACTIVITY_KIND_KERNEL)
			write_kernel(k);
	}
	free(buffer);
}

/* finish ends the phase (once): the records still buffered are flushed,
 * the file is closed and renamed into place if it holds a whole run. */
static void finish(const char *why)
{
	pthread_mutex_lock(&P.mu);
	if (P.finished || !P.f) {
		pthread_mutex_unlock(&P.mu);
		return;
	}
	P.finished = 1;
	pthread_mutex_unlock(&P.mu);
	atomic_store(&mmk_profiling, 0);
	P.flush(MMK_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	P.disable(MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	pthread_mutex_lock(&P.mu);
	int err = ferror(P.f) | fclose(P.f);
	P.f = NULL;
	pthread_mutex_unlock(&P.mu);
	int runs = atomic_load(&P.end_run);
	uint64_t n = atomic_load(&P.written), lost = atomic_load(&P.dropped);
	if (err || runs < 1 || n == 0) {
		mmk_log(1, "profiling (%s): %d complete runs, %llu kernels%s; no profile written", why, runs < 0 ? 0 : runs,
			(unsigned long long)n, err ? ", write error" : "");
		unlink(P.tmp);
		return;
	}
	if (rename(P.tmp, P.path) != 0) {
		mmk_log(1, "profiling: rename %s: %s", P.tmp, strerror(errno));
		return;
	}
	mmk_log(1, "profiling (%s): %d runs, %llu kernels (%llu records unmatched) written to %s", why, runs,
		(unsigned long long)n, (unsigned long long)lost, P.path);
}

/* finisher waits for the launch path to end the phase, lets the last
 * run's kernels complete, then finishes off the launch path. */
static void *finisher(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&P.mu);
	while (atomic_load(&P.end_run) == INT32_MAX && !P.finished)
		pthread_cond_wait(&P.cv, &P.mu);
	pthread_mutex_unlock(&P.mu);
	usleep(200 * 1000);
	finish("enough runs");
	return NULL;
}

/* stop marks runs from r on as not to be written and wakes the finisher. */
static void stop(int r)
{
	int want = INT32_MAX;
	if (!atomic_compare_exchange_strong(&P.end_run, &want, r))
		return;
	pthread_mutex_lock(&P.mu);
	pthread_cond_signal(&P.cv);
	pthread_mutex_unlock(&P.mu);
}

static void at_exit(void)
{
	if (getpid() != P.pid)
		return;
	stop(atomic_load(&P.run) - P.skip);
	finish("exit");
}

static void child(void) { atomic_store(&mmk_profiling, 0); }

void mmk_profile_init(void *cupti)
{
	const char *out = getenv("MMK_PROFILE_OUT");
	if (!out || !*out)
		return;
	if (strlen(out) >= sizeof P.path) {
		mmk_log(1, "MMK_PROFILE_OUT is too long; not profiling");
		return;
	}
	register_fn reg = (register_fn)dlsym(cupti, "cuptiActivityRegisterCallbacks");
	P.enable = (kind_fn)dlsym(cupti, "cuptiActivityEnable");
	P.disable = (kind_fn)dlsym(cupti, "cuptiActivityDisable");
	P.next = (next_fn)dlsym(cupti, "cuptiActivityGetNextRecord");
	P.flush = (flush_fn)dlsym(cupti, "cuptiActivityFlushAll");
	P.stamp = (stamp_fn)dlsym(cupti, "cuptiGetTimestamp");
	if (!reg || !P.enable || !P.disable || !P.next || !P.flush || !P.stamp) {
		mmk_log(1, "CUPTI lacks the activity API; not profiling");
		return;
	}
	strcpy(P.path, out);
	snprintf(P.tmp, sizeof P.tmp, "%s.tmp", out);
	P.run_gap = env_u64("MMK_PROFILE_RUN_GAP_US", 1000, 1) * 1000;
	P.skip = (int)env_u64("MMK_PROFILE_SKIP", 10, 0);
	P.runs = (int)env_u64("MMK_PROFILE_RUNS", 50, 1);
	P.min_ns = env_u64("MMK_PROFILE_MIN_S", 2, 0) * 1000000000ull;
	P.max_ns = env_u64("MMK_PROFILE_MAX_S", 60, 1) * 1000000000ull;
	P.corr = calloc(CORR, sizeof *P.corr);
	P.f = fopen(P.tmp, "w");
	if (!P.corr || !P.f) {
		mmk_log(1, "profiling: %s: %s", P.tmp, strerror(errno));
		free(P.corr);
		if (P.f)
			fclose(P.f);
		P.f = NULL;
		return;
	}
	P.pid = getpid();
	atomic_store(&P.run, -1);
	atomic_store(&P.end_run, INT32_MAX);
	if (reg(request, complete) != MMK_CUPTI_SUCCESS || P.enable(MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != MMK_CUPTI_SUCCESS) {
		mmk_log(1, "profiling: CUPTI refused kernel activity records");
		fclose(P.f);
		P.f = NULL;
		unlink(P.tmp);
		return;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, finisher, NULL) != 0) {
		mmk_log(1, "profiling: no finisher thread");
		return;
	}
	pthread_detach(th);
	atexit(at_exit);
	pthread_atfork(NULL, NULL, child);
	atomic_store(&mmk_profiling, 1);
	mmk_log(0, "profiling %d runs (after %d of warm-up) into %s", P.runs, P.skip, P.path);
}

void mmk_profile_launch(const mmk_CUpti_CallbackData *cb, const struct mmk_launch *l, uint32_t name_id)
{
	uint64_t t = 0;
	P.stamp(&t);
	uint64_t prev = atomic_exchange_explicit(&P.last_launch, t, memory_order_relaxed);
	int run;
	if (prev == 0) {
		P.t0 = t;
		atomic_store(&P.run, 0);
		run = 0;
	} else if (t > prev && t - prev >= P.run_gap) {
		run = atomic_fetch_add(&P.run, 1) + 1;
	} else {
		run = atomic_load_explicit(&P.run, memory_order_relaxed);
	}
	int r = run - P.skip;
	uint64_t elapsed = t - P.t0;
	if ((r >= P.runs && elapsed >= P.min_ns) || elapsed >= P.max_ns) {
		stop(r);
		atomic_store(&mmk_profiling, 0);
		return;
	}
	struct corr *c = &P.corr[cb->correlationId & (CORR - 1)];
	c->name_id = name_id;
	c->run = r < 0 ? -1 : r;
	c->api = (uint32_t)l->api;
	c->launch_ns = t;
	atomic_store_explicit(&c->id, cb->correlationId, memory_order_release);
}
