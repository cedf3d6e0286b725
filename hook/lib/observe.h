/*
 * observe.h: what observe.c offers: completions seen on the GPU through
 * CUDA events (protocol step 7). It uses client (to publish them) and log.
 */
#ifndef MMK_OBSERVE_H
#define MMK_OBSERVE_H

#include <stdint.h>

/* mmk_observe_init finds the CUDA event calls and reads
 * MMK_OBSERVE_EVERY (default 1: every launch of a held task); it returns
 * the launches between two events, 0 when the hook cannot or must not
 * observe. */
uint32_t mmk_observe_init(void);

/* mmk_observe_launch records an event on stream (ptsz: the per-thread
 * default stream's variant) right after launch seq of connection gen went,
 * in context ctx; the hook's observer thread publishes its completion. An
 * event that cannot be recorded (all in use, or an error) is counted as
 * unobserved. */
void mmk_observe_launch(void *ctx, const void *stream, int ptsz, uint64_t gen, uint64_t seq);

#endif
