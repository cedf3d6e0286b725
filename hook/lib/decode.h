/*
 * decode.h: what decode.c offers: a launch as the kernel scheduler sees it,
 * read from CUPTI's callback data, and small ids for kernel names. It
 * calls no other unit but log; it tells of new names through the callback
 * registered with mmk_names_notify.
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

/* mmk_names_notify registers fn, called (names lock held) when an id is
 * first given out. mmk_names_each calls fn for every id given out so far,
 * stopping at the first that returns non-zero (its result), then done, all
 * under the names lock, so that no name is created in between. */
void mmk_names_notify(void (*fn)(uint32_t id, const char *name));
int mmk_names_each(int (*fn)(uint32_t id, const char *name), void (*done)(void));

/* mmk_name_of returns the name of an id (NULL if unknown). */
const char *mmk_name_of(uint32_t id);

#endif
