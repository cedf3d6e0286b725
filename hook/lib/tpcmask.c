/*
 * tpcmask.c: TPC masks on the task's kernels (protocol step 11), so that an
 * offline job's kernels leave part of the GPU to the online ones without a
 * restart. Off unless MMK_TPC_MASK=1: it rests on an undocumented interface
 * of the CUDA driver, the one CUPTI itself subscribes through
 * (cuGetExportTable with the callback table's id), whose pre-upload
 * callback hands over each kernel's task metadata descriptor (TMD/QMD)
 * before the driver sends it to the GPU. The descriptor has a TPC disable
 * mask, as the libsmctrl work (Bakita and Anderson, RTAS 2023) found and
 * documented: from Hopper on (descriptor version 4.0) 128 bits at bytes
 * 304-319 and an enable bit, bit 31 of the first word; Volta to Ada
 * (versions 1.6 to 3.x) 64 bits at bytes 84-91. A set bit disables a TPC.
 *
 * A kept count masks the descriptor's TPC slots keep to 71 on a Hopper,
 * never the bits past them, which cost without taking a TPC away (an
 * exact MMK_TPC_OFF list sets what it names). A slot may be a TPC the
 * part lacks (an H100 has 66 of 72), so N slots kept are N or fewer TPCs.
 *
 * MMK_TPC_KEEP=N masks every kernel to N TPC slots while no kernel scheduler
 * asks otherwise, MMK_TPC_OFF=A-B,C to exactly the TPCs listed off (it
 * wins over KEEP; bench/gpu/tpcmask.py and maskcost.py measure masks
 * that way: on an H100 one TPC off cost a vgg19 trainer 10 %, TPCs 66-71
 * off 19 %, as kernels sized to every SM then run a partial last wave).
 *
 * The driver takes one subscriber to its callbacks, and CUPTI is one
 * (measured on an H200, driver 580: a second subscription is refused with
 * CUDA_ERROR_ALREADY_ACQUIRED, 210). The hook therefore subscribes for
 * masks before CUPTI, and a masked job's launches go unseen (inject.c).
 *
 * Everything fails open: no driver table, a descriptor of another size or
 * version, or a subscription the driver refuses leaves every kernel
 * unmasked, logged once and told to the server (tpc_state). The hook only
 * ever disables more TPCs than the descriptor already does (bits are
 * or-ed in), never fewer, so an MPS share or a mask set by the job stays.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "log.h"
#include "proto.h"
#include "tpcmask.h"

/* The id of the driver's callback table, its subscribe and enable entries,
 * and the domain and id of the descriptor's pre-upload callback. */
static const unsigned char callback_table_id[16] = {0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
						    0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b};
enum { TABLE_SUBSCRIBE = 3, TABLE_ENABLE = 6, QMD_DOMAIN = 0xb, QMD_PRE_UPLOAD = 1 };

typedef int (*export_table_fn)(const void **table, const void *id);
typedef void (*qmd_callback)(void *data, int domain, int cbid, const void *params);
typedef int (*subscribe_fn)(uint32_t *handle, qmd_callback cb, void *data);
typedef int (*enable_fn)(uint32_t enable, uint32_t handle, int domain, int cbid);

static _Atomic int broken; /* 1: stop touching descriptors */
static _Atomic int told;   /* tpc_state told once */
static uint32_t fixed_keep; /* MMK_TPC_KEEP: TPCs kept while no server asks */
static uint32_t fixed_off[4]; /* MMK_TPC_OFF: exactly these TPCs off (measuring) */
/* The TPC slots a Hopper (version 4.x) descriptor's mask addresses: 8
 * GPCs of 9 TPCs on GH100 (H100, H200), whatever of them the part has.
 * Bits past them are no TPC, yet setting them cost on an H100
 * (docs/results/slo-h100-masks.md: bits 72-127 together, 0.818 of a vgg19
 * trainer's speed; slots 50-71 off 0.699, with 72-127 too 0.677), so a
 * mask stops there. A later descriptor version is masked over all 128
 * bits, as before: its slots are not measured. MMK_TPC_SLOTS (1..128)
 * sets the descriptor's slot count (not the part's TPC count) for any
 * version from 4.0 on. */
enum { HOPPER_SLOTS = 72, MASK_BITS = 128 };
static uint32_t slots_env; /* MMK_TPC_SLOTS; 0: by the version */
static int fixed_off_set;

/* give_up stops masking, says why once, and tells the server. */
static void give_up(const char *why, unsigned v)
{
	if (atomic_exchange(&broken, 1))
		return;
	mmk_log(1, "TPC masks off: %s (%u); kernels use every TPC", why, v);
	mmk_tpc_state(MMK_TPC_NONE);
}

/* mask_words sets the disable bits of TPCs keep to slots-1 in a 64-bit
 * mask held as two 32-bit words, from TPC first on. */
static void mask_words(uint32_t *lo, uint32_t *hi, uint32_t keep, uint32_t slots, uint32_t first)
{
	uint64_t m = 0;
	for (uint32_t i = 0; i < 64; i++)
		if (first + i >= keep && first + i < slots)
			m |= 1ull << i;
	*lo |= (uint32_t)m;
	*hi |= (uint32_t)(m >> 32);
}

/* parse_off reads "A-B,C,..." (TPCs 0..127) into the four disable words;
 * it returns 0, with the words cleared, on anything else. */
static int parse_off(const char *s, uint32_t w[4])
{
	memset(w, 0, 4 * sizeof *w);
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s || a < 0 || a > 127)
			goto bad;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b > 127)
				goto bad;
		}
		for (long i = a; i <= b; i++)
			w[i / 32] |= 1u << (i % 32);
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		s = end;
	}
	return 1;
bad:
	memset(w, 0, 4 * sizeof *w);
	return 0;
}

/* on_descriptor is the driver's pre-upload callback: it masks the
 * kernel's descriptor while the server asks for it. */
static void on_descriptor(void *data, int domain, int cbid, const void *params)
{
	(void)data;
	if (domain != QMD_DOMAIN || cbid != QMD_PRE_UPLOAD || atomic_load_explicit(&broken, memory_order_relaxed))
		return;
	uint32_t keep = mmk_tpc_keep();
	int exact = !keep && fixed_off_set;
	if (!keep)
		keep = fixed_keep;
	if (!keep && !exact)
		return;
	if (!params || *(const uint32_t *)params < 5 * sizeof(void *)) {
		give_up("the driver's descriptor callback parameters are smaller than expected", params ? *(const uint32_t *)params : 0);
		return;
	}
	unsigned char *tmd = *((void *const *)params + 4);
	if (!tmd) {
		give_up("the driver's descriptor callback has no descriptor", 0);
		return;
	}
	uint8_t version = tmd[72];
	uint32_t w[4];
	if (version >= 0x40) {
		memcpy(w, tmd + 304, sizeof w);
		if (exact) {
			for (int i = 0; i < 4; i++)
				w[i] |= fixed_off[i];
		} else {
			uint32_t slots = slots_env ? slots_env : version >> 4 == 4 ? HOPPER_SLOTS : MASK_BITS;
			if (keep >= slots)
				return; /* every slot kept: no mask */
			mask_words(&w[0], &w[1], keep, slots, 0);
			mask_words(&w[2], &w[3], keep, slots, 64);
		}
		memcpy(tmd + 304, w, sizeof w);
		uint32_t first;
		memcpy(&first, tmd, sizeof first);
		first |= 0x80000000u;
		memcpy(tmd, &first, sizeof first);
	} else if (version >= 0x16) {
		memcpy(w, tmd + 84, 2 * sizeof *w);
		if (exact) {
			w[0] |= fixed_off[0];
			w[1] |= fixed_off[1];
		} else {
			if (keep >= 64)
				return; /* every TPC kept: no mask */
			mask_words(&w[0], &w[1], keep, 64, 0);
		}
		memcpy(tmd + 84, w, 2 * sizeof *w);
	} else {
		give_up("the kernel descriptor's version has no TPC mask", version);
		return;
	}
	atomic_fetch_add_explicit(&mmk_stats.masked, 1, memory_order_relaxed);
	if (!atomic_exchange_explicit(&told, 1, memory_order_relaxed))
		mmk_tpc_state(MMK_TPC_MASKING);
}

/* env_count reads the environment variable name as a number of TPC
 * slots in min..128 into *out, leaving it as it is (logged) when it is
 * anything else, and when it is unset or empty. */
static void env_count(const char *name, long min, uint32_t *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return;
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || n < min || n > 128)
		mmk_log(1, "%s=%s is not a number of TPC slots in %ld..128; ignored", name, v, min);
	else
		*out = (uint32_t)n;
}

int mmk_tpcmask_init(void)
{
	const char *v = getenv("MMK_TPC_MASK");
	if (!v || strcmp(v, "1") != 0)
		return 0;
	/* MMK_TPC_KEEP fixes the TPC slots kept while no kernel scheduler
	 * asks for a mask: for measuring masks without one. */
	env_count("MMK_TPC_KEEP", 0, &fixed_keep);
	/* MMK_TPC_OFF=A-B,C,...: exactly these TPCs (0..127) off while no
	 * kernel scheduler asks for a mask, for measuring what a mask costs
	 * by the TPCs it names (docs/results/slo-h100-tpcs.md). */
	const char *off = getenv("MMK_TPC_OFF");
	if (off && *off) {
		if (parse_off(off, fixed_off))
			fixed_off_set = 1;
		else
			mmk_log(1, "MMK_TPC_OFF=%s is not a list of TPCs or ranges in 0..127 (e.g. 0-7,65); ignored", off);
	}
	env_count("MMK_TPC_SLOTS", 1, &slots_env);
	const char *why = NULL;
	void *cuda = mmk_cuda(&why);
	export_table_fn get = cuda ? (export_table_fn)dlsym(cuda, "cuGetExportTable") : NULL;
	if (!get) {
		give_up(cuda ? "the CUDA driver has no cuGetExportTable" : "no CUDA driver loaded", 0);
		return 0;
	}
	const void *const *table = NULL;
	int r = get((const void **)&table, callback_table_id);
	if (r || !table || !table[TABLE_SUBSCRIBE] || !table[TABLE_ENABLE]) {
		give_up("the CUDA driver has no callback table", (unsigned)r);
		return 0;
	}
	subscribe_fn subscribe = (subscribe_fn)(uintptr_t)table[TABLE_SUBSCRIBE];
	enable_fn enable = (enable_fn)(uintptr_t)table[TABLE_ENABLE];
	uint32_t handle = 0;
	if ((r = subscribe(&handle, on_descriptor, NULL)) != 0) {
		give_up("the CUDA driver refused the descriptor callback's subscription", (unsigned)r);
		return 0;
	}
	if ((r = enable(1, handle, QMD_DOMAIN, QMD_PRE_UPLOAD)) != 0) {
		/* Subscribed: the driver's callbacks stay ours, CUPTI's are gone. */
		give_up("the CUDA driver refused to enable the descriptor callback", (unsigned)r);
		return 1;
	}
	mmk_log(0, "TPC masks ready (MMK_TPC_MASK=1)");
	mmk_tpc_state(MMK_TPC_READY);
	return 1;
}
