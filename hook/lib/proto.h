/*
 * proto.h: the hook <-> kernel scheduler protocol, version 5. The Go side
 * is kernelsched/server (its proto.go mirrors these layouts; a test checks
 * the offsets by compiling this header).
 *
 * 1. The hook connects to the server's Unix stream socket
 *    (MMK_SCHED_SOCKET) and sends a struct mmk_hello.
 * 2. The server answers with a struct mmk_welcome and, as SCM_RIGHTS, two
 *    descriptors: a memfd holding the task's struct mmk_slot, and an
 *    eventfd that wakes the server. A welcome whose magic or version
 *    differs, or whose status is not 0, ends the connection: the hook runs
 *    the job unscheduled (fail-open).
 * 3. Each launch takes the next ring entry (seq = ++head, entry
 *    ring[(seq-1) % MMK_RING]), fills it and publishes it by storing the
 *    low 32 bits of seq in its ready word (release). If the server sleeps
 *    (server_sleeping), the hook clears the flag and writes the eventfd.
 *    The server sets server_sleeping only while some task's launches are
 *    held; while every task goes at once it reads the rings every
 *    millisecond or so instead. The hook reads the server's tail only
 *    when the ring may be half full; it then writes the eventfd once per
 *    backlog, and waits (within the bound) only when the ring is full.
 * 4. Unless the slot is free (the policy releases this task's launches at
 *    once), the launch waits until granted >= seq (32-bit wrapping
 *    compare; futex on granted) for at most MMK_HOOK_TIMEOUT_US
 *    (default 10 ms), then goes anyway (fail-open). Until the server
 *    has granted that seq or read the ring up to it, later launches go
 *    without waiting and are published with MMK_ENTRY_WENT (version 2):
 *    the server books a gone launch of a held task as released at once
 *    (kernelsched.Scheduler.Went) instead of queueing it.
 * 5. Kernel names go on the socket before the first entry that uses them:
 *    struct mmk_name_msg followed by len bytes.
 * 6. (Version 2.) A synchronisation (cuCtxSynchronize, cuStreamSynchronize,
 *    cuEventSynchronize) publishes an entry at its start and one at its
 *    return (api MMK_ENTRY_SYNC_ENTER / MMK_ENTRY_SYNC_EXIT, t_ns set, no
 *    kernel). They wait for no grant. While a task is inside one, the GPU
 *    still runs its kernels, whatever their profiled durations predict;
 *    its return says the kernels launched before it have finished.
 * 7. (Version 3.) Observed completions. While the task is held (free is
 *    0), the hook records a CUDA event on the stream of every
 *    observe_every-th launch, after the launch went, and a thread of the
 *    hook publishes an entry with api MMK_ENTRY_DONE when the event has
 *    completed: grid[0] and grid[1] hold the low and high 32 bits of that
 *    launch's seq, t_ns when the hook saw the event complete. It says
 *    that the GPU has finished every kernel of that stream launched up
 *    to that seq. The hook sets observe_every in the slot once, before
 *    its first entry; 0 means it records no events (no CUDA event calls
 *    found, or MMK_OBSERVE_EVERY=0), and the server then goes by
 *    predicted durations.
 * 8. (Version 4.) Quiet tasks. The server sets bit 0 of quiet while its
 *    policy needs none of the task's launches (fifo; fikit and mmk for a
 *    task alone that goes at once), clears it when it does, and counts
 *    each change in the bits above; it wakes futex waiters on quiet
 *    after each change. A thread of the hook waits on that word and
 *    turns the launch callbacks off while bit 0 is set (synchronisations
 *    are still reported) and on when it is clear, then echoes the word
 *    it applied in quiet_ack (a word asking for the callbacks on is
 *    echoed only once they are on). A quiet task's launches cost only
 *    CUPTI's subscription; the server knows nothing of them. Until a
 *    task it turned loud has echoed that word, the server releases no
 *    held launch (for at most 2 ms), so that no policy decides while a
 *    task's new launches go unseen; what the task launched while quiet
 *    stays unknown to it.
 * 9. (Version 5.) Requests of a quiet task. While bits 0 and 1 of quiet
 *    are both set (MMK_QUIET | MMK_QUIET_MARK: a quiet task whose requests
 *    the server measures, an online job's), the hook keeps its launch
 *    callbacks on but reports no launch: the first launch after a
 *    synchronisation returned publishes one MMK_ENTRY_MARK entry, t_ns
 *    its time, which begins a request; the synchronisation that returns
 *    next ends it. A loud task's first launch after a synchronisation
 *    carries its time stamp already (step 3). The change count of quiet
 *    is in its bits above bit 1.
 * 10. (Version 5.) Requests a service reports itself: mmk_report_request
 *    (start, end; CLOCK_MONOTONIC nanoseconds) publishes an
 *    MMK_ENTRY_REQUEST entry: grid[0] and grid[1] the low and high 32
 *    bits of start, t_ns the end (never 0). It waits only for room in a
 *    full ring, within the bound.
 * 11. (Version 5.) TPC masks. While tpc_keep is not 0, every kernel the
 *    task launches may use only the mask's first tpc_keep TPC slots (the
 *    server counts them by the GPU's TPC map where it has one), where the
 *    hook can say so to the driver (MMK_TPC_MASK=1: an undocumented
 *    interface of the driver, off by default). The hook sets tpc_state
 *    once it knows: 1 it masks, 2 it cannot (and lets every kernel use
 *    every TPC).
 * The server ends a task when its socket closes.
 */
#ifndef MMK_PROTO_H
#define MMK_PROTO_H

#include <stdatomic.h>
#include <stdint.h>

#define MMK_PROTO_MAGIC 0x484b4d4du /* "MMKH" little endian */
#define MMK_PROTO_VERSION 5
#define MMK_RING 4096 /* entries, power of two */
#define MMK_ENTRY_WENT 0x80000000u /* in api: the launch went without waiting (free) */
#define MMK_ENTRY_SYNC 0x40000000u /* in api: no launch but a synchronisation: */
#define MMK_ENTRY_SYNC_ENTER (MMK_ENTRY_SYNC | 1u) /* it starts */
#define MMK_ENTRY_SYNC_EXIT (MMK_ENTRY_SYNC | 2u)  /* it returned */
#define MMK_ENTRY_DONE 0x20000000u /* in api (version 3): an observed completion (step 7) */
#define MMK_ENTRY_MARK 0x10000000u /* in api (version 5): a request began (step 9) */
#define MMK_ENTRY_REQUEST 0x08000000u /* in api (version 5): a request the service reported (step 10) */
#define MMK_QUIET 1u      /* quiet, bit 0: the policy needs none of the task's launches (step 8) */
#define MMK_QUIET_MARK 2u /* quiet, bit 1: mark the start of each request (step 9) */
#define MMK_QUIET_COUNT 4u /* quiet: the change count's unit */
#define MMK_TPC_MASKING 1u /* tpc_state: the hook masks TPCs (step 11) */
#define MMK_TPC_NONE 2u    /* tpc_state: it cannot */
#define MMK_TPC_READY 3u   /* tpc_state: it can, and masked nothing yet */

struct mmk_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t size; /* sizeof(struct mmk_hello) */
	int32_t pid;
	int32_t priority;    /* 0 (highest) .. 9 */
	int32_t online;      /* 1: latency-critical */
	int32_t mps_percent; /* 0: 100 */
	char task_key[128];  /* selects the kernel profile */
	char name[64];
};

struct mmk_welcome {
	uint32_t magic;
	uint16_t version;
	uint16_t status; /* 0 ok, else refused (see the server's log) */
	uint32_t slot_bytes;
	uint32_t ring;
};

struct mmk_name_msg {
	uint32_t id;
	uint32_t len;
};

struct mmk_entry {
	_Atomic uint32_t ready; /* low 32 bits of seq once published */
	uint32_t name_id;
	uint64_t seq;
	uint64_t t_ns; /* CLOCK_MONOTONIC at the launch call */
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t shared_mem;
	uint32_t api;
}; /* 56 bytes */

struct mmk_slot {
	/* Written by the server. */
	_Atomic uint32_t granted; /* futex word */
	_Atomic uint32_t free;
	_Atomic uint32_t server_sleeping;
	_Atomic uint32_t quiet; /* version 4: step 8; futex word */
	_Atomic uint32_t tpc_keep; /* version 5: step 11; 0: every TPC */
	char pad1[44];
	/* Written by the hook. */
	_Atomic uint64_t head;
	_Atomic uint64_t fail_open; /* launches let go unscheduled */
	_Atomic uint32_t observe_every; /* version 3: step 7 */
	_Atomic uint32_t quiet_ack;     /* version 4: step 8 */
	_Atomic uint32_t tpc_state;     /* version 5: step 11 */
	char pad2[36];
	/* Written by the server: entries before tail were read. */
	_Atomic uint64_t tail;
	char pad3[56];
	struct mmk_entry ring[MMK_RING];
};

#endif
