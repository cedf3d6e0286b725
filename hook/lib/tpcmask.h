/*
 * tpcmask.h: what tpcmask.c offers: TPC masks on the task's kernels
 * (protocol step 11). It uses client (the server's tpc_keep) and log.
 */
#ifndef MMK_TPCMASK_H
#define MMK_TPCMASK_H

/* mmk_tpcmask_init installs the mask where MMK_TPC_MASK=1 and the driver
 * lets it, and says in the protocol's tpc_state whether it could. It
 * returns 1 when it holds the driver's callbacks (then CUPTI cannot have
 * them), else 0. */
int mmk_tpcmask_init(void);

#endif
