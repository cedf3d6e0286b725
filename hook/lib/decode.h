/*
 * decode.h: what decode.c offers: a launch as the kernel scheduler sees it,
 * read from CUPTI's callback data, and small ids for kernel names. It
 * calls no other unit but log; the client reads new names by their count
 * (mmk_names_count), without a lock.
 */
#ifndef MMK_DECODE_H
#define MMK_DECODE_H

#include <stdint.h>

#include "cupti_decls.h"
#include "log.h"

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

/* mmk_names_count is one past the last id given out (1: none). Ids are
 * given out in order and a name never changes once its id is counted:
 * the client sends ids from 1 up to it, never under the names lock. */
uint32_t mmk_names_count(void);

/* mmk_name_of returns the name of an id (NULL if unknown); it takes no
 * lock. */
const char *mmk_name_of(uint32_t id);

#endif
