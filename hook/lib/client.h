/*
 * client.h: what client.c offers: the hook's end of the kernel scheduler
 * protocol (proto.h). It uses decode (names) and log.
 */
#ifndef MMK_CLIENT_H
#define MMK_CLIENT_H

#include "decode.h"

/* mmk_client_init connects to the kernel scheduler named by
 * MMK_SCHED_SOCKET, if set; mmk_report tells it of a launch and waits
 * for the grant when the task's launches are held. */
void mmk_client_init(void);
void mmk_report(const struct mmk_launch *l, uint32_t name_id);
/* mmk_report_sync tells the kernel scheduler that a synchronisation starts
 * (enter 1) or returned (enter 0); it never waits. */
void mmk_report_sync(int enter);

#endif
