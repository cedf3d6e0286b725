/*
 * client.h: what client.c offers: the hook's end of the kernel scheduler
 * protocol (proto.h). It uses decode (names) and log.
 */
#ifndef MMK_CLIENT_H
#define MMK_CLIENT_H

#include "decode.h"

/* What the hook's entry lends the client. observe_init is called once,
 * only when a kernel scheduler is named, and returns what the hook tells
 * it of observed completions (protocol step 7; 0: none). set_launches
 * turns the launch callbacks on (1) or off (0) for the server's quiet word
 * (step 8) and returns whether they are on after it; it is called from the
 * client's own thread, never from a callback. */
struct mmk_client_hooks {
	uint32_t (*observe_init)(void);
	int (*set_launches)(int on);
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

#endif
