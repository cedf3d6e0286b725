/*
 * client.h: what client.c offers: the hook's end of the kernel scheduler
 * protocol (proto.h). It uses decode (names) and log.
 */
#ifndef MMK_CLIENT_H
#define MMK_CLIENT_H

#include "decode.h"

/* The launch callbacks the server's quiet word asks for (steps 8, 9). */
enum mmk_launch_mode {
	MMK_LAUNCHES_OFF,  /* quiet: no launch callback */
	MMK_LAUNCHES_ON,   /* loud: every launch reported */
	MMK_LAUNCHES_MARK, /* quiet, marking: a request's first launch only */
};

/* What the hook's entry lends the client. observe_init is called once,
 * only when a kernel scheduler is named, and returns what the hook tells
 * it of observed completions (protocol step 7; 0: none). set_launches
 * sets the launch callbacks to a mode for the server's quiet word (steps 8
 * and 9) and returns whether they are on after it; it is called from the
 * client's own thread, never from a callback. */
struct mmk_client_hooks {
	uint32_t (*observe_init)(void);
	int (*set_launches)(enum mmk_launch_mode mode);
};

/* mmk_client_init connects to the kernel scheduler named by
 * MMK_SCHED_SOCKET, if set, and starts the thread that follows its quiet
 * word. mmk_report tells it of a launch and waits for the grant when the
 * task's launches are held; it returns the launch's seq when the launch
 * is to be observed (and sets *gen to the connection's number), else 0. */
void mmk_client_init(const struct mmk_client_hooks *h);
uint64_t mmk_report(const struct mmk_launch *l, uint32_t name_id, uint64_t *gen);
/* mmk_report_done tells the kernel scheduler that the GPU finished the
 * launch seq of connection gen (and every launch before it on its stream)
 * by now; it is dropped if that connection is gone. */
void mmk_report_done(uint64_t gen, uint64_t seq);
/* mmk_report_sync tells the kernel scheduler that a synchronisation starts
 * (enter 1) or returned (enter 0); it never waits. */
void mmk_report_sync(int enter);
/* mmk_mark tells the kernel scheduler that a request begins now if this is
 * the first launch since a synchronisation returned (step 9); else it does
 * nothing. */
void mmk_mark(void);
/* mmk_client_request publishes a request the service measured itself,
 * from start to end (CLOCK_MONOTONIC ns; step 10). It waits only while
 * the ring is full, at most the hook's bound. It returns 0, or -1 without
 * a kernel scheduler or for an end of 0 or before its start. */
int mmk_client_request(uint64_t start_ns, uint64_t end_ns);
/* mmk_tpc_keep is the TPCs the server lets this task's kernels use (0:
 * all; step 11); mmk_tpc_state tells it whether the hook can mask them
 * (MMK_TPC_READY, MMK_TPC_MASKING or MMK_TPC_NONE), now and on every later
 * connection. */
uint32_t mmk_tpc_keep(void);
void mmk_tpc_state(uint32_t state);

#endif
