/*
 * cupti_stress.c: drives the fake CUPTI's activity API from several
 * threads at once, as the hook's profiling does (launching threads record
 * kernels while its finisher flushes), and checks that nothing is lost or
 * corrupted: every launch's record comes back exactly once, whole (its
 * kind, name, grid and correlation id as launched), through the
 * completion callback, in buffers each handed back once and within their
 * size. Small buffers make hand-backs frequent.
 *
 *   cupti_stress LIBFAKECUPTI [THREADS [LAUNCHES]]
 *
 * It prints "ok RECORDS BUFFERS" and exits 0, or what went wrong (the
 * first few problems) and exits 1. Built by make hook-fakes, run by
 * kernelsched/server's TestFakeCUPTIConcurrentActivity.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cupti_decls.h"

enum { MAX_THREADS = 64, RECS_PER_BUFFER = 4, MAX_BUFFERS = 1 << 20, HEADER = 64 };

typedef mmk_CUptiResult (*register_fn)(mmk_CUpti_BuffersCallbackRequestFunc, mmk_CUpti_BuffersCallbackCompleteFunc);
typedef mmk_CUptiResult (*kind_fn)(uint32_t kind);
typedef mmk_CUptiResult (*next_fn)(uint8_t *buffer, size_t valid, void **record);
typedef mmk_CUptiResult (*flush_fn)(uint32_t flag);
typedef void (*launch_fn)(const mmk_cuLaunchKernel_params *, const char *, uint64_t);

static next_fn next_record;
static flush_fn flush_all;
static launch_fn launch;

static int threads = 8, launches = 20000;
static char names[MAX_THREADS][16];
/* seen[t * launches + i]: how often launch i of thread t came back;
 * corr_seen[c]: how often correlation id c did. */
static _Atomic unsigned *seen, *corr_seen;
static _Atomic unsigned long problems, records;
static _Atomic int launching;

/* A buffer's header, before what the fake gets: its state (1: with the
 * fake, 2: handed back) and size. Buffers are kept to the end, so a
 * second hand-back is seen, not a use after free. */
struct header {
	_Atomic int state;
	size_t size;
};
static uint8_t *buffers[MAX_BUFFERS];
static _Atomic unsigned nbuffers;

#define PROBLEM(...)                                                                                                             \
	do {                                                                                                                     \
		if (atomic_fetch_add(&problems, 1) < 10)                                                                         \
			fprintf(stderr, __VA_ARGS__);                                                                            \
	} while (0)

static void request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = NULL, *size = 0, *max_records = 0;
	unsigned n = atomic_fetch_add(&nbuffers, 1);
	if (n >= MAX_BUFFERS) {
		PROBLEM("more than %d buffers asked for\n", MAX_BUFFERS);
		return;
	}
	size_t sz = RECS_PER_BUFFER * sizeof(mmk_CUpti_ActivityKernel);
	uint8_t *b = NULL;
	if (posix_memalign((void **)&b, 64, HEADER + sz) != 0) {
		PROBLEM("out of memory\n");
		return;
	}
	struct header *h = (struct header *)b;
	atomic_init(&h->state, 1);
	h->size = sz;
	buffers[n] = b;
	*buffer = b + HEADER, *size = sz;
}

static void check(const mmk_CUpti_ActivityKernel *k)
{
	atomic_fetch_add(&records, 1);
	int t = k->gridX - 1, i = k->gridY - 1;
	if (k->kind != MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || t < 0 || t >= threads || i < 0 || i >= launches) {
		PROBLEM("a corrupt record: kind %u grid %d,%d\n", k->kind, k->gridX, k->gridY);
		return;
	}
	if (k->name != names[t] || k->blockX != 32 || k->gridZ != 1 || k->start > k->end)
		PROBLEM("record of launch %d of thread %d is corrupt: name %p (want %p), block %d, start %llu end %llu\n", i, t,
			(const void *)k->name, (const void *)names[t], k->blockX, (unsigned long long)k->start,
			(unsigned long long)k->end);
	if (atomic_fetch_add(&seen[(size_t)t * (size_t)launches + (size_t)i], 1) != 0)
		PROBLEM("launch %d of thread %d came back twice\n", i, t);
	size_t total = (size_t)threads * (size_t)launches;
	if (k->correlationId == 0 || k->correlationId > total)
		PROBLEM("correlation id %u out of 1..%zu\n", k->correlationId, total);
	else if (atomic_fetch_add(&corr_seen[k->correlationId], 1) != 0)
		PROBLEM("correlation id %u came back twice\n", k->correlationId);
}

static void complete(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)ctx, (void)stream;
	if (!buffer) {
		PROBLEM("a NULL buffer handed back\n");
		return;
	}
	struct header *h = (struct header *)(buffer - HEADER);
	int want = 1;
	if (!atomic_compare_exchange_strong(&h->state, &want, 2)) {
		PROBLEM("a buffer handed back twice (state %d)\n", want);
		return;
	}
	if (size != h->size || valid > size || valid % sizeof(mmk_CUpti_ActivityKernel) != 0) {
		PROBLEM("a buffer of size %zu handed back as size %zu with %zu valid bytes\n", h->size, size, valid);
		return;
	}
	void *rec = NULL;
	while (next_record(buffer, valid, &rec) == MMK_CUPTI_SUCCESS)
		check(rec);
}

static void *launcher(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < launches; i++) {
		mmk_cuLaunchKernel_params p;
		memset(&p, 0, sizeof p);
		p.gridDimX = (unsigned)t + 1, p.gridDimY = (unsigned)i + 1, p.gridDimZ = 1;
		p.blockDimX = 32, p.blockDimY = 1, p.blockDimZ = 1;
		launch(&p, names[t], 0);
	}
	return NULL;
}

/* flusher flushes while launches run, as the hook's finisher does. */
static void *flusher(void *arg)
{
	(void)arg;
	while (atomic_load(&launching)) {
		flush_all(MMK_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cupti_stress LIBFAKECUPTI [THREADS [LAUNCHES]]\n");
		return 2;
	}
	if (argc > 2)
		threads = atoi(argv[2]);
	if (argc > 3)
		launches = atoi(argv[3]);
	if (threads < 1 || threads > MAX_THREADS || launches < 1) {
		fprintf(stderr, "THREADS is 1 to %d, LAUNCHES at least 1\n", MAX_THREADS);
		return 2;
	}
	void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!cupti) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 2;
	}
	register_fn reg = (register_fn)dlsym(cupti, "cuptiActivityRegisterCallbacks");
	kind_fn enable = (kind_fn)dlsym(cupti, "cuptiActivityEnable");
	next_record = (next_fn)dlsym(cupti, "cuptiActivityGetNextRecord");
	flush_all = (flush_fn)dlsym(cupti, "cuptiActivityFlushAll");
	launch = (launch_fn)dlsym(cupti, "fake_launch");
	if (!reg || !enable || !next_record || !flush_all || !launch) {
		fprintf(stderr, "%s lacks the activity API or fake_launch\n", argv[1]);
		return 2;
	}
	size_t total = (size_t)threads * (size_t)launches;
	seen = calloc(total, sizeof *seen);
	corr_seen = calloc(total + 1, sizeof *corr_seen);
	if (!seen || !corr_seen) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	for (int t = 0; t < threads; t++)
		snprintf(names[t], sizeof names[t], "k%d", t);
	if (reg(request, complete) != MMK_CUPTI_SUCCESS || enable(MMK_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != MMK_CUPTI_SUCCESS) {
		fprintf(stderr, "cannot turn on kernel records\n");
		return 2;
	}
	atomic_store(&launching, 1);
	pthread_t fl, th[MAX_THREADS];
	if (pthread_create(&fl, NULL, flusher, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 2;
	}
	for (int t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, launcher, (void *)(intptr_t)t) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 2;
		}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	atomic_store(&launching, 0);
	pthread_join(fl, NULL);
	flush_all(MMK_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

	unsigned long lost = 0;
	for (size_t i = 0; i < total; i++)
		if (atomic_load(&seen[i]) == 0)
			lost++;
	if (lost)
		PROBLEM("%lu of %zu launches' records lost\n", lost, total);
	unsigned n = atomic_load(&nbuffers), kept = 0;
	for (unsigned i = 0; i < n && i < MAX_BUFFERS; i++)
		if (buffers[i] && atomic_load(&((struct header *)buffers[i])->state) != 2)
			kept++;
	if (kept)
		PROBLEM("%u of %u buffers never handed back after the last flush\n", kept, n);
	unsigned long bad = atomic_load(&problems);
	if (bad) {
		fprintf(stderr, "%lu problems (%lu records, %u buffers)\n", bad, atomic_load(&records), n);
		return 1;
	}
	printf("ok %lu %u\n", atomic_load(&records), n);
	return 0;
}
