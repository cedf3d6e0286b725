/*
 * decode.c: a driver-API launch callback turned into the kernel scheduler's
 * kernel id (name + grid + block), and kernel names cached by function.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

static void dims(struct mmk_launch *l, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz)
{
	l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
	l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
}

int mmk_decode(mmk_CUpti_CallbackId cbid, const mmk_CUpti_CallbackData *cb, struct mmk_launch *l)
{
	memset(l, 0, sizeof *l);
	l->name = cb->symbolName;
	switch (cbid) {
	case MMK_CBID_cuLaunchKernel:
	case MMK_CBID_cuLaunchKernel_ptsz: {
		const mmk_cuLaunchKernel_params *p = cb->functionParams;
		l->api = cbid == MMK_CBID_cuLaunchKernel ? MMK_API_LAUNCH_KERNEL : MMK_API_LAUNCH_KERNEL_PTSZ;
		l->key = p->f;
		dims(l, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ);
		l->shared_mem = p->sharedMemBytes;
		l->stream = p->hStream;
		return 1;
	}
	case MMK_CBID_cuLaunchKernelEx:
	case MMK_CBID_cuLaunchKernelEx_ptsz: {
		const mmk_cuLaunchKernelEx_params *p = cb->functionParams;
		l->api = cbid == MMK_CBID_cuLaunchKernelEx ? MMK_API_LAUNCH_KERNEL_EX : MMK_API_LAUNCH_KERNEL_EX_PTSZ;
		l->key = p->f;
		if (p->config) {
			const mmk_CUlaunchConfig *c = p->config;
			dims(l, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ);
			l->shared_mem = c->sharedMemBytes;
			l->stream = c->hStream;
		}
		return 1;
	}
	case MMK_CBID_cuLaunchCooperativeKernel:
	case MMK_CBID_cuLaunchCooperativeKernel_ptsz: {
		const mmk_cuLaunchCooperativeKernel_params *p = cb->functionParams;
		l->api = cbid == MMK_CBID_cuLaunchCooperativeKernel ? MMK_API_COOPERATIVE : MMK_API_COOPERATIVE_PTSZ;
		l->key = p->f;
		dims(l, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ);
		l->shared_mem = p->sharedMemBytes;
		l->stream = p->hStream;
		return 1;
	}
	case MMK_CBID_cuLaunchCooperativeKernelMultiDevice:
		l->api = MMK_API_COOPERATIVE_MULTI;
		l->key = cb->functionParams;
		dims(l, 1, 1, 1, 1, 1, 1);
		return 1;
	case MMK_CBID_cuGraphLaunch:
	case MMK_CBID_cuGraphLaunch_ptsz: {
		const mmk_cuGraphLaunch_params *p = cb->functionParams;
		l->api = cbid == MMK_CBID_cuGraphLaunch ? MMK_API_GRAPH : MMK_API_GRAPH_PTSZ;
		l->key = p->hGraph;
		l->name = "graph";
		dims(l, 1, 1, 1, 1, 1, 1);
		l->stream = p->hStream;
		return 1;
	}
	case MMK_CBID_cuLaunch:
	case MMK_CBID_cuLaunchGrid:
	case MMK_CBID_cuLaunchGridAsync: {
		/* Legacy launches: the block shape was set earlier with
		 * cuFuncSetBlockShape and is not in the parameters. */
		const mmk_cuLaunch_params *p = cb->functionParams;
		l->api = MMK_API_LEGACY;
		l->key = p->f;
		dims(l, 1, 1, 1, 1, 1, 1);
		if (cbid != MMK_CBID_cuLaunch) {
			const mmk_cuLaunchGrid_params *g = cb->functionParams;
			l->grid[0] = (uint32_t)g->grid_width, l->grid[1] = (uint32_t)g->grid_height;
		}
		return 1;
	}
	}
	return 0;
}

/* The name table: open addressing by function pointer, read without a lock
 * (keys are published with release stores), written under a mutex. */
#define NAME_SLOTS 16384 /* power of two */
#define NAME_IDS 8192

struct name_slot {
	_Atomic(const void *) key;
	_Atomic uint32_t id;
};

static struct name_slot slots[NAME_SLOTS];
static char *_Atomic names[NAME_IDS];
/* next_id is written under names_mu, after the name it counts (release),
 * and read without it. */
static _Atomic uint32_t next_id = 1;
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t slot_of(const void *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 40) & (NAME_SLOTS - 1);
}

uint32_t mmk_name_id(const struct mmk_launch *l)
{
	if (!l->key)
		return 0;
	uint32_t i = slot_of(l->key);
	for (uint32_t n = 0; n < NAME_SLOTS; n++, i = (i + 1) & (NAME_SLOTS - 1)) {
		const void *k = atomic_load_explicit(&slots[i].key, memory_order_acquire);
		if (k == l->key) {
			uint32_t id = atomic_load_explicit(&slots[i].id, memory_order_acquire);
			if (id)
				return id;
			break; /* being inserted: take the slow path */
		}
		if (!k)
			break;
	}
	pthread_mutex_lock(&names_mu);
	uint32_t id = 0;
	i = slot_of(l->key);
	for (uint32_t n = 0; n < NAME_SLOTS; n++, i = (i + 1) & (NAME_SLOTS - 1)) {
		const void *k = atomic_load_explicit(&slots[i].key, memory_order_relaxed);
		if (k == l->key) {
			id = atomic_load_explicit(&slots[i].id, memory_order_relaxed);
			break;
		}
		if (!k) {
			uint32_t next = atomic_load_explicit(&next_id, memory_order_relaxed);
			if (next >= NAME_IDS)
				break; /* full: the launch goes unnamed to the scheduler */
			char *copy = strdup(l->name ? l->name : "?");
			if (!copy)
				break;
			id = next;
			atomic_store_explicit(&names[id], copy, memory_order_relaxed);
			atomic_store_explicit(&next_id, id + 1, memory_order_release);
			atomic_store_explicit(&slots[i].id, id, memory_order_release);
			atomic_store_explicit(&slots[i].key, l->key, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&names_mu);
	return id;
}

uint32_t mmk_names_count(void) { return atomic_load_explicit(&next_id, memory_order_acquire); }

const char *mmk_name_of(uint32_t id)
{
	if (id == 0 || id >= mmk_names_count())
		return NULL;
	return atomic_load_explicit(&names[id], memory_order_relaxed);
}
