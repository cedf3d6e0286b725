/*
 * log.h: what log.c offers every unit of the hook: logging, the launch
 * APIs the hook tells apart, and the counters its stats report.
 *
 * The units call one way: decode (names and launch parameters) -> client
 * (the kernel scheduler's protocol) -> observe (completions seen through
 * CUDA events) -> inject (the entry, CUPTI's callbacks); profile (the
 * profiling phase) sits beside client and uses decode; every unit may use
 * log. A lower unit learns of a higher one's needs only through a
 * callback it registers.
 */
#ifndef MMK_LOG_H
#define MMK_LOG_H

#include <stdatomic.h>
#include <stdint.h>

/* The launch APIs the hook tells apart (index into the counters). */
enum mmk_api {
	MMK_API_LAUNCH_KERNEL,      /* cuLaunchKernel (runtime launches land here) */
	MMK_API_LAUNCH_KERNEL_PTSZ, /* per-thread default stream */
	MMK_API_LAUNCH_KERNEL_EX,
	MMK_API_LAUNCH_KERNEL_EX_PTSZ,
	MMK_API_COOPERATIVE,
	MMK_API_COOPERATIVE_PTSZ,
	MMK_API_COOPERATIVE_MULTI,
	MMK_API_GRAPH,
	MMK_API_GRAPH_PTSZ,
	MMK_API_LEGACY, /* cuLaunch, cuLaunchGrid, cuLaunchGridAsync */
	MMK_API_COUNT
};

/* mmk_api_name names a launch API as the kernel traces do. */
const char *mmk_api_name(enum mmk_api a);

/* Counters, updated with relaxed atomics from every launching thread. */
struct mmk_stats {
	_Atomic uint64_t by_api[MMK_API_COUNT];
	_Atomic uint64_t unnamed;   /* launches CUPTI gave no symbol name for */
	_Atomic uint64_t held;      /* launches that waited for a grant */
	_Atomic uint64_t fail_open; /* launches let through because the scheduler did not answer */
	_Atomic uint64_t wakes;     /* eventfd writes that woke the scheduler's loop */
	_Atomic uint64_t syncs;     /* synchronisations seen */
	_Atomic uint64_t observed;  /* completions seen through recorded events */
	_Atomic uint64_t unobserved; /* launches to observe that got no event (pool full or an error) */
	_Atomic uint64_t masked;    /* kernels whose TPC mask the hook set (protocol step 11) */
	_Atomic uint64_t max_wait_ns; /* the longest a launch waited in the client, from its start */
};

extern struct mmk_stats mmk_stats;

/* mmk_stats_json writes the counters as one JSON object into buf (at most
 * len bytes, NUL-terminated) and returns its length. */
int mmk_stats_json(char *buf, int len);

/* mmk_hook_launches is the number of launches seen, graphs counted once. */
uint64_t mmk_hook_launches(void);

/* mmk_log_init reads MMK_HOOK_LOG; mmk_log writes to stderr, prefixed,
 * when MMK_HOOK_LOG=1 (or always for errors). */
void mmk_log_init(void);
void mmk_log(int always, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* mmk_cuda is the CUDA driver library the process has loaded
 * (MMK_CUDA_PATH, else libcuda.so.1, opened with RTLD_NOLOAD: the hook
 * links against no CUDA library), or NULL; why names what was tried. */
void *mmk_cuda(const char **why);

/* mmk_thread starts fn on a detached thread of the hook's own; it returns
 * 0, or -1 (logged, naming what) when the thread could not be made. */
int mmk_thread(void *(*fn)(void *), const char *what);

#endif
