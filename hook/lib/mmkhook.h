/*
 * mmkhook.h: what the hook's C files share. See hook/doc.go and
 * docs/hook.md for the design.
 */
#ifndef MMK_HOOK_H
#define MMK_HOOK_H

#include <stdatomic.h>
#include <stdint.h>

#include "cupti_decls.h"

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

/* One intercepted launch: the kernel scheduler's kernel id (name, grid,
 * block) and where it goes. A graph launch is one unit named "graph". */
struct mmk_launch {
	enum mmk_api api;
	const void *key; /* CUfunction or CUgraphExec: names are cached by it */
	const char *name;
	uint32_t grid[3], block[3];
	uint32_t shared_mem;
	const void *stream;
};

/* mmk_decode fills l from a driver-API callback; it returns 0 for an id
 * that is not a launch. */
int mmk_decode(mmk_CUpti_CallbackId cbid, const mmk_CUpti_CallbackData *cb, struct mmk_launch *l);

/* mmk_name_id returns a small id for the launch's kernel name, the same for
 * every launch of one function (cached by l->key; 0 when the table is full). */
uint32_t mmk_name_id(const struct mmk_launch *l);

/* mmk_name_created is called (names lock held) when an id is first given
 * out. mmk_names_each calls fn for every id given out so far, stopping at
 * the first that returns non-zero (its result), then done, all under the
 * names lock, so that no name is created in between. */
void mmk_name_created(uint32_t id, const char *name);
int mmk_names_each(int (*fn)(uint32_t id, const char *name), void (*done)(void));

/* mmk_client_init connects to the kernel scheduler named by
 * MMK_SCHED_SOCKET, if set; mmk_report tells it of a launch and waits
 * for the grant when the task's launches are held. */
void mmk_client_init(void);
void mmk_report(const struct mmk_launch *l, uint32_t name_id);
/* mmk_report_sync tells the kernel scheduler that a synchronisation starts
 * (enter 1) or returned (enter 0); it never waits. */
void mmk_report_sync(int enter);

/* The profiling phase (profile.c): mmk_profile_init starts it when
 * MMK_PROFILE_OUT is set (cupti: CUPTI's dlopen handle); while
 * mmk_profiling is set, every launch goes to mmk_profile_launch. */
extern _Atomic int mmk_profiling;
void mmk_profile_init(void *cupti);
void mmk_profile_launch(const mmk_CUpti_CallbackData *cb, const struct mmk_launch *l, uint32_t name_id);

/* mmk_api_name names a launch API as the kernel traces do. */
const char *mmk_api_name(enum mmk_api a);

/* mmk_name_of returns the name of an id (NULL if unknown). */
const char *mmk_name_of(uint32_t id);

/* Counters, updated with relaxed atomics from every launching thread. */
struct mmk_stats {
	_Atomic uint64_t by_api[MMK_API_COUNT];
	_Atomic uint64_t unnamed;   /* launches CUPTI gave no symbol name for */
	_Atomic uint64_t held;      /* launches that waited for a grant */
	_Atomic uint64_t fail_open; /* launches let through because the scheduler did not answer */
	_Atomic uint64_t wakes;     /* eventfd writes that woke the scheduler's loop */
	_Atomic uint64_t syncs;     /* synchronisations seen */
};

extern struct mmk_stats mmk_stats;

/* mmk_stats_json writes the counters as one JSON object into buf (at most
 * len bytes, NUL-terminated) and returns its length. */
int mmk_stats_json(char *buf, int len);

/* mmk_hook_launches is the number of launches seen, graphs counted once. */
uint64_t mmk_hook_launches(void);

/* Logging to stderr, prefixed, when MMK_HOOK_LOG=1 (or always for errors). */
void mmk_log(int always, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
