/*
 * client.c: the sharing phase. Each launch is reported to the instance's
 * kernel scheduler through a shared-memory ring and, unless the task's
 * launches are free, waits for its grant. Everything here fails open: no
 * server, a dead one, a full ring or a grant later than the bound lets the
 * launch go. No launch ever waits longer than the bound
 * (MMK_HOOK_TIMEOUT_US), counted from the launch's start: every wait of
 * a launch (for room in the ring, for its grant) ends at that one
 * deadline. A launch never waits on the socket: kernel names go without
 * blocking, in id order, and what a full socket leaves is sent by the
 * client's own thread, which ends the connection of a server that does
 * not take them within the bound. The first connection, at the hook's
 * start, waits at most MMK_HOOK_CONNECT_US for the server's welcome, and
 * every later one is made by the client's own thread, at most once a
 * second.
 *
 * A welcome is checked before it is trusted (handshake.c): the shared
 * memory must be sealed against shrinking and be the size announced, the
 * wake-up descriptor an eventfd.
 *
 * A thread of the client (watcher) follows the server's quiet word
 * (protocol step 8): it turns the launch callbacks off while the server
 * needs none of this task's launches, on again when it does or when the
 * server is gone (it checks the socket five times a second); without a
 * connection it connects again.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "handshake.h"
#include "proto.h"

struct conn {
	uint64_t gen; /* this connection's number: observed completions name it */
	int sock, wake_fd;
	struct mmk_slot *slot;
	_Atomic uint64_t degraded_seq; /* a wait timed out at this seq; 0: none */
	_Atomic uint64_t tail_seen;    /* the server's tail when last read */
	_Atomic uint64_t woke_at;      /* tail + 1 at the last backlog wake-up */
	/* 1: the next launch carries a time stamp even if it goes at once:
	 * the first launch after a synchronisation returned begins a run (an
	 * online job's request), whose latency the server measures. */
	_Atomic uint32_t stamp_next;
	/* Kernel names: the ids below names_sent are sent whole; name_off
	 * bytes of the next one's message are (send_mu). */
	_Atomic uint32_t names_sent;
	uint32_t name_off;
	/* 1 once the server served this connection: freed the task or
	 * granted a launch. A connection dropped unserved backs off the next
	 * attempt (retry_ns). */
	_Atomic uint32_t served;
};

static _Atomic(struct conn *) live;
static pthread_mutex_t connect_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_try_ns;
/* retry_ns is the wait before the next connection attempt: 1 s, doubled
 * after each connection dropped without being served, up to 64 s, and 1
 * s again once one is served. A server that welcomes and never grants
 * otherwise cost one bounded wait of a launch per second (issue 54). */
#define RETRY_MIN_NS 1000000000ull
#define RETRY_MAX_NS (64 * RETRY_MIN_NS)
static _Atomic uint64_t retry_ns = RETRY_MIN_NS;
static uint64_t conns;          /* connections made (connect_mu) */
static uint32_t observe_every;  /* protocol step 7; 0: no events */
static int (*set_launches)(enum mmk_launch_mode mode);
static _Atomic uint32_t tpc_state; /* step 11: what the hook said, for every connection */
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cv = PTHREAD_COND_INITIALIZER;
static int enabled, forked_child;
static uint64_t timeout_ns = 10ull * 1000 * 1000;
/* WAKE_SLACK_NS is the end of a bounded wait that is spun, not slept
 * (mmk_report): a sleeping thread wakes late. EXIT_NS is what a launch
 * that waited its bound out still does before it returns (the server's
 * socket checked, the callback's return: 46-160 us past a wait of
 * exactly 10 ms by the fake job's clock, TestLaunchBoundNeverGranted):
 * the wait ends that much before the bound, so that the launch as a
 * whole keeps it. */
enum { WAKE_SLACK_NS = 1000 * 1000, EXIT_NS = 250 * 1000 };
static struct mmk_hello hello;
static char sock_path[108];

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_timespec(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w, n -= (size_t)w;
	}
	return 0;
}

/* send_names sends the kernel names the server has not had yet, in id
 * order (struct mmk_name_msg and the name), never blocking: where the
 * socket is full it waits for room until deadline_ns (0: not at all). A
 * message cut short is finished by the next call, so the stream stays
 * whole. The caller holds send_mu (or made c and has not published it).
 * It returns 0 when every name is sent,
 * 1 when some wait for room, -1 when the socket failed. */
static int send_names(struct conn *c, uint64_t deadline_ns)
{
	uint32_t id = atomic_load_explicit(&c->names_sent, memory_order_relaxed);
	while (id < mmk_names_count()) {
		const char *name = mmk_name_of(id);
		struct mmk_name_msg m = {id, (uint32_t)strlen(name)};
		size_t off = c->name_off, total = sizeof m + m.len;
		struct iovec iov[2];
		int n = 0;
		if (off < sizeof m)
			iov[n++] = (struct iovec){(char *)&m + off, sizeof m - off};
		iov[n++] = (struct iovec){(char *)name + (off > sizeof m ? off - sizeof m : 0), m.len - (off > sizeof m ? off - sizeof m : 0)};
		struct msghdr h = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->sock, &h, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -1;
			uint64_t t = now_ns();
			if (t >= deadline_ns)
				return 1;
			struct pollfd p = {.fd = c->sock, .events = POLLOUT};
			struct timespec ts = ns_timespec(deadline_ns - t);
			ppoll(&p, 1, &ts, NULL);
			continue;
		}
		off += (size_t)w;
		if (off < total) {
			c->name_off = (uint32_t)off;
			continue;
		}
		c->name_off = 0;
		atomic_store_explicit(&c->names_sent, ++id, memory_order_relaxed);
	}
	return 0;
}

/* drop_broken ends a connection whose byte stream can no longer be
 * trusted (a name message half sent): the server sees the socket close
 * and forgets the task; the watcher connects again. */
static void drop(struct conn *c);
static void drop_broken(struct conn *c)
{
	shutdown(c->sock, SHUT_RDWR);
	drop(c);
}

/* names_pending reports whether kernel names wait to be sent. */
static inline int names_pending(struct conn *c)
{
	return mmk_names_count() > atomic_load_explicit(&c->names_sent, memory_order_relaxed);
}

/* launch_names sends new kernel names from a launching thread, without
 * waiting for the socket or for another sender; what is left, the
 * watcher sends (woken on the quiet word, which it waits on). */
static int launch_names(struct conn *c)
{
	int r = 1;
	if (pthread_mutex_trylock(&send_mu) == 0) {
		r = send_names(c, 0);
		pthread_mutex_unlock(&send_mu);
	}
	if (r < 0) {
		mmk_log(1, "kernel scheduler at %s does not take kernel names (%s); connecting again", sock_path, strerror(errno));
		drop_broken(c);
	} else if (r > 0) {
		syscall(SYS_futex, &c->slot->quiet, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	return r;
}

/* note_wait keeps the longest wait of a launch in the client, from its
 * start t0 (mmk_stats.max_wait_ns). */
static void note_wait(uint64_t t0)
{
	uint64_t w = now_ns() - t0, m = atomic_load_explicit(&mmk_stats.max_wait_ns, memory_order_relaxed);
	while (w > m && !atomic_compare_exchange_weak_explicit(&mmk_stats.max_wait_ns, &m, w, memory_order_relaxed, memory_order_relaxed))
		;
}

/* set_timeout sets a socket option of timeval type to ns. */
static void set_timeout(int s, int opt, uint64_t ns)
{
	struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_usec = (suseconds_t)(ns % 1000000000ull / 1000)};
	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1;
	setsockopt(s, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* received_fds collects the descriptors of every SCM_RIGHTS message in
 * m into fds (at most max; any more are closed) and returns how many. */
static int received_fds(struct msghdr *m, int *fds, int max)
{
	int n = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* try_connect makes one connection attempt and publishes it; the caller
 * holds connect_mu. The server's welcome, and its taking the names given
 * out so far, are awaited at most welcome_ns; sends wait at most the
 * bound. */
static struct conn *try_connect(uint64_t welcome_ns)
{
	uint64_t start = now_ns();
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return NULL;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, sock_path, sizeof a.sun_path - 1);
	set_timeout(s, SO_RCVTIMEO, welcome_ns);
	/* connect too: a full backlog makes it wait the send timeout. */
	set_timeout(s, SO_SNDTIMEO, timeout_ns);
	if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		mmk_log(0, "connect %s: %s", sock_path, strerror(errno));
		close(s);
		return NULL;
	}
	hello.pid = getpid();
	if (write_all(s, &hello, sizeof hello) < 0)
		goto fail;
	struct mmk_welcome w;
	memset(&w, 0, sizeof w);
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {&w, sizeof w};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
	ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
	int fds[2] = {-1, -1};
	int nfds = n > 0 ? received_fds(&m, fds, 2) : 0;
	const char *why = n < 0 ? "no welcome in time" : mmk_check_welcome(&w, (size_t)n, nfds == 2 ? fds[0] : -1, nfds == 2 ? fds[1] : -1);
	if (why) {
		mmk_log(1, "kernel scheduler at %s: %s (protocol %u, hook speaks %u; status %u); launches go unscheduled",
			sock_path, why, w.version, MMK_PROTO_VERSION, w.status);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		goto fail;
	}
	void *p = mmap(NULL, w.slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	if (p == MAP_FAILED) {
		close(fds[1]);
		goto fail;
	}
	struct conn *c = calloc(1, sizeof *c);
	if (!c) {
		munmap(p, w.slot_bytes);
		close(fds[1]);
		goto fail;
	}
	c->sock = s, c->wake_fd = fds[1], c->slot = p;
	c->gen = ++conns;
	atomic_store(&c->stamp_next, 1); /* the first launch begins a run */
	atomic_store(&c->slot->observe_every, observe_every);
	atomic_store(&c->slot->tpc_state, atomic_load(&tpc_state));
	atomic_store(&c->names_sent, 1);
	if (send_names(c, start + welcome_ns) != 0) {
		mmk_log(1, "kernel scheduler at %s does not take kernel names; launches go unscheduled", sock_path);
		munmap(p, w.slot_bytes);
		close(fds[1]);
		free(c);
		goto fail;
	}
	/* Names given out from here on are sent by the launch that finds
	 * them pending, or the watcher. */
	pthread_mutex_lock(&send_mu);
	atomic_store(&live, c);
	pthread_mutex_unlock(&send_mu);
	pthread_mutex_lock(&watch_mu);
	pthread_cond_signal(&watch_cv);
	pthread_mutex_unlock(&watch_mu);
	mmk_log(0, "connected to the kernel scheduler at %s", sock_path);
	return c;
fail:
	close(s);
	return NULL;
}

/* drop forgets a dead connection. Other threads may still be using the
 * shared memory, so it stays mapped (one slot, once per server death). */
static void drop(struct conn *c)
{
	struct conn *want = c;
	if (atomic_compare_exchange_strong(&live, &want, NULL)) {
		uint64_t r = RETRY_MIN_NS;
		if (!atomic_load_explicit(&c->served, memory_order_relaxed)) {
			r = atomic_load(&retry_ns) * 2;
			if (r > RETRY_MAX_NS)
				r = RETRY_MAX_NS;
		}
		atomic_store(&retry_ns, r);
		mmk_log(1, "kernel scheduler at %s is gone; launches go unscheduled until it is back (next try in %llu s)", sock_path,
			(unsigned long long)(r / RETRY_MIN_NS));
		atomic_store(&next_try_ns, now_ns() + r);
	}
}

/* reconnect_wait bounds the wait for a welcome on the watcher thread,
 * where no launch waits on it. */
static const uint64_t reconnect_wait_ns = 1000000000ull;

/* maybe_connect makes a connection attempt if none was made in the last
 * second, waiting at most welcome_ns for the welcome. */
static void maybe_connect(uint64_t welcome_ns)
{
	if (!enabled || forked_child)
		return;
	uint64_t t = now_ns();
	if (t < atomic_load_explicit(&next_try_ns, memory_order_relaxed))
		return;
	if (pthread_mutex_trylock(&connect_mu) != 0)
		return;
	if (!atomic_load(&live)) {
		atomic_store(&next_try_ns, t + atomic_load(&retry_ns));
		try_connect(welcome_ns);
	}
	pthread_mutex_unlock(&connect_mu);
}

static void after_fork_child(void)
{
	/* CUDA cannot be used in a forked child; never report from one. */
	forked_child = 1;
	struct conn *c = atomic_exchange(&live, NULL);
	if (c) {
		close(c->sock);
		close(c->wake_fd);
	}
}

static int futex_wait(_Atomic uint32_t *addr, uint32_t val, uint64_t ns);
static int server_alive(struct conn *c);

/* apply sets the launch callbacks for the server's quiet word (bit 0:
 * off, unless bit 1 asks for request marks; without a connection, on) and
 * echoes the word in quiet_ack once applied: a word asking for them on
 * only once they are on. */
static void apply(struct conn *c, uint32_t word)
{
	enum mmk_launch_mode mode = MMK_LAUNCHES_ON;
	if (word & MMK_QUIET)
		mode = (word & MMK_QUIET_MARK) ? MMK_LAUNCHES_MARK : MMK_LAUNCHES_OFF;
	int now_on = set_launches(mode);
	if (c && (mode == MMK_LAUNCHES_OFF || now_on) && atomic_load_explicit(&c->slot->quiet_ack, memory_order_relaxed) != word)
		atomic_store_explicit(&c->slot->quiet_ack, word, memory_order_release);
}

/* watcher follows the server's quiet word (protocol step 8). Without a
 * connection the launch callbacks are on, and it connects again, once a
 * second: a launch never does. */
static void *watcher(void *arg)
{
	(void)arg;
	for (;;) {
		struct conn *c = atomic_load(&live);
		if (!c || forked_child) {
			apply(NULL, 0);
			maybe_connect(reconnect_wait_ns);
			pthread_mutex_lock(&watch_mu);
			if (!atomic_load(&live)) {
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec++;
				pthread_cond_timedwait(&watch_cv, &watch_mu, &ts);
			}
			pthread_mutex_unlock(&watch_mu);
			continue;
		}
		uint32_t q = atomic_load_explicit(&c->slot->quiet, memory_order_acquire);
		apply(c, q);
		if (!names_pending(c))
			futex_wait(&c->slot->quiet, q, 200ull * 1000 * 1000);
		if (names_pending(c)) {
			/* Names a launch could not send: the server has the bound
			 * to take them. */
			pthread_mutex_lock(&send_mu);
			int r = atomic_load(&live) == c ? send_names(c, now_ns() + timeout_ns) : 0;
			pthread_mutex_unlock(&send_mu);
			if (r != 0) {
				mmk_log(1, "kernel scheduler at %s does not take kernel names within the bound; connecting again", sock_path);
				drop_broken(c);
				continue;
			}
		}
		if (atomic_load(&live) == c && !server_alive(c))
			drop(c);
	}
	return NULL;
}

void mmk_client_init(const struct mmk_client_hooks *h)
{
	const char *p = getenv("MMK_SCHED_SOCKET");
	if (!p || !*p)
		return;
	observe_every = h->observe_init();
	set_launches = h->set_launches;
	if (strlen(p) >= sizeof sock_path) {
		mmk_log(1, "MMK_SCHED_SOCKET %s is longer than %zu bytes; launches go unscheduled", p, sizeof sock_path - 1);
		return;
	}
	strcpy(sock_path, p);
	hello.magic = MMK_PROTO_MAGIC;
	hello.version = MMK_PROTO_VERSION;
	hello.size = sizeof hello;
	const char *v = getenv("MMK_PRIORITY");
	hello.priority = v ? atoi(v) : 0;
	v = getenv("MMK_ONLINE");
	hello.online = v && *v == '1';
	v = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	hello.mps_percent = v ? atoi(v) : 0;
	v = getenv("MMK_TASK_KEY");
	snprintf(hello.task_key, sizeof hello.task_key, "%s", v ? v : "");
	v = getenv("MMK_TASK_NAME");
	snprintf(hello.name, sizeof hello.name, "%s", v ? v : "");
	v = getenv("MMK_HOOK_TIMEOUT_US");
	if (v && atoll(v) > 0)
		timeout_ns = (uint64_t)atoll(v) * 1000;
	pthread_atfork(NULL, NULL, after_fork_child);
	enabled = 1;
	/* The first connection, before the job's first launch, so that the
	 * server sees the job's launches from the start: a server that does
	 * not answer holds CUDA's initialisation at most connect_ns, once. */
	uint64_t connect_ns = 1000000000ull;
	v = getenv("MMK_HOOK_CONNECT_US");
	if (v && atoll(v) > 0)
		connect_ns = (uint64_t)atoll(v) * 1000;
	maybe_connect(connect_ns);
	mmk_thread(watcher, "watcher thread: the launch callbacks stay on whatever the server needs, and no reconnection is made");
}

static int futex_wait(_Atomic uint32_t *addr, uint32_t val, uint64_t ns)
{
	struct timespec ts = ns_timespec(ns);
	return (int)syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void wake_server(struct conn *c)
{
	uint64_t one = 1;
	atomic_fetch_add_explicit(&mmk_stats.wakes, 1, memory_order_relaxed);
	(void)!write(c->wake_fd, &one, sizeof one);
}

/* make_room rereads the server's tail when the ring may be half full. A
 * server that polls (every task goes at once, so it does not spin) is
 * woken once per backlog, unless its socket is closed (it died: the
 * connection is dropped, -1); a full ring waits for it within the bound,
 * else the launch goes and the connection is dropped (-1). */
static int server_alive(struct conn *c);

static int make_room(struct conn *c, uint64_t seq, uint64_t t0)
{
	struct mmk_slot *s = c->slot;
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
	if (seq - tail > MMK_RING / 2 && atomic_exchange_explicit(&c->woke_at, tail + 1, memory_order_relaxed) != tail + 1) {
		/* A backlog of half a ring: a dead server is noticed here, before
		 * a launch has to wait for a full ring. */
		if (!server_alive(c)) {
			atomic_fetch_add_explicit(&mmk_stats.fail_open, 1, memory_order_relaxed);
			drop(c);
			return -1;
		}
		wake_server(c);
	}
	/* A free launch carries no time stamp (t0 0): its wait starts here. */
	if (seq - tail > MMK_RING && !t0)
		t0 = now_ns();
	int waited = 0;
	while (seq - tail > MMK_RING) {
		waited = 1;
		if (now_ns() - t0 >= timeout_ns) {
			atomic_fetch_add_explicit(&mmk_stats.fail_open, 1, memory_order_relaxed);
			note_wait(t0);
			drop(c);
			return -1;
		}
		sched_yield();
		tail = atomic_load_explicit(&s->tail, memory_order_acquire);
	}
	if (waited)
		note_wait(t0);
	atomic_store_explicit(&c->tail_seen, tail, memory_order_relaxed);
	return 0;
}

static inline int granted(struct mmk_slot *s, uint64_t seq)
{
	return (int32_t)(atomic_load_explicit(&s->granted, memory_order_acquire) - (uint32_t)seq) >= 0;
}

/* server_alive checks the socket after a wait timed out. */
static int server_alive(struct conn *c)
{
	struct pollfd p = {.fd = c->sock, .events = POLLIN};
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN))) {
		char b;
		if (recv(c->sock, &b, 1, MSG_DONTWAIT | MSG_PEEK) <= 0)
			return 0;
	}
	return 1;
}

/* put_entry takes the next ring entry, fills it and publishes it; it returns
 * its seq, or 0 when the ring stayed full (the connection is dropped). */
static uint64_t put_entry(struct conn *c, const struct mmk_launch *l, uint32_t name_id, uint32_t api, uint64_t t0)
{
	struct mmk_slot *s = c->slot;
	uint64_t seq = atomic_fetch_add_explicit(&s->head, 1, memory_order_relaxed) + 1;
	/* The server's tail is read only when the ring may be half full, so
	 * that a launch touches no line the server writes. */
	uint64_t tail = atomic_load_explicit(&c->tail_seen, memory_order_relaxed);
	if (seq - tail > MMK_RING / 2 && make_room(c, seq, t0) < 0)
		return 0;
	struct mmk_entry *e = &s->ring[(seq - 1) & (MMK_RING - 1)];
	e->name_id = name_id;
	e->seq = seq;
	e->t_ns = t0;
	if (l) {
		memcpy(e->grid, l->grid, sizeof e->grid);
		memcpy(e->block, l->block, sizeof e->block);
		e->shared_mem = l->shared_mem;
	} else {
		memset(e->grid, 0, sizeof e->grid);
		memset(e->block, 0, sizeof e->block);
		e->shared_mem = 0;
	}
	e->api = api;
	atomic_store_explicit(&e->ready, (uint32_t)seq, memory_order_release);
	if (atomic_load_explicit(&s->server_sleeping, memory_order_acquire) &&
	    atomic_exchange_explicit(&s->server_sleeping, 0, memory_order_acq_rel))
		wake_server(c);
	return seq;
}

void mmk_report_sync(int enter)
{
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	if (!c)
		return;
	put_entry(c, NULL, 0, enter ? MMK_ENTRY_SYNC_ENTER : MMK_ENTRY_SYNC_EXIT, now_ns());
	if (!enter)
		atomic_store_explicit(&c->stamp_next, 1, memory_order_relaxed);
}

void mmk_mark(void)
{
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	if (!c || !atomic_load_explicit(&c->stamp_next, memory_order_relaxed) ||
	    !atomic_exchange_explicit(&c->stamp_next, 0, memory_order_relaxed))
		return;
	put_entry(c, NULL, 0, MMK_ENTRY_MARK, now_ns());
}

int mmk_client_request(uint64_t start_ns, uint64_t end_ns)
{
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	if (!c || !end_ns || end_ns < start_ns || forked_child)
		return -1;
	struct mmk_launch l = {.grid = {(uint32_t)start_ns, (uint32_t)(start_ns >> 32), 0}};
	return put_entry(c, &l, 0, MMK_ENTRY_REQUEST, end_ns) ? 0 : -1;
}

uint32_t mmk_tpc_keep(void)
{
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	return c ? atomic_load_explicit(&c->slot->tpc_keep, memory_order_relaxed) : 0;
}

void mmk_tpc_state(uint32_t state)
{
	atomic_store(&tpc_state, state);
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	if (c)
		atomic_store(&c->slot->tpc_state, state);
}

void mmk_report_done(uint64_t gen, uint64_t seq)
{
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	if (!c || c->gen != gen)
		return; /* a launch of an earlier connection: the server forgot it */
	struct mmk_launch l = {.grid = {(uint32_t)seq, (uint32_t)(seq >> 32), 0}};
	put_entry(c, &l, 0, MMK_ENTRY_DONE, now_ns());
}

uint64_t mmk_report(const struct mmk_launch *l, uint32_t name_id, uint64_t *gen)
{
	struct conn *c = atomic_load_explicit(&live, memory_order_acquire);
	if (!c)
		return 0; /* the watcher connects again */
	/* New kernel names go first, never waiting (launch_names); a launch
	 * that sends them starts its bound before (start), so that the bound
	 * covers the sending too. */
	uint64_t start = 0;
	if (names_pending(c)) {
		start = now_ns();
		if (launch_names(c) < 0)
			return 0;
	}
	struct mmk_slot *s = c->slot;
	/* A launch that goes at once needs no time stamp: the server, which
	 * reads the rings at once whenever another task waits, takes its own
	 * clock (it saves a clock read per launch). */
	uint32_t go = atomic_load_explicit(&s->free, memory_order_acquire);
	uint64_t t0 = 0;
	if (!go || (atomic_load_explicit(&c->stamp_next, memory_order_relaxed) &&
		    atomic_exchange_explicit(&c->stamp_next, 0, memory_order_relaxed)))
		t0 = now_ns();
	/* After a wait timed out (at seq d), launches go without waiting until
	 * the server shows it is there: it granted d, or it has read the ring
	 * up to d (it is alive, merely holding this task). They are published
	 * as gone, so that the server books them as released instead of
	 * queueing them. A hung server thus costs one bounded wait, not one
	 * per launch, and a live one keeps holding the task. */
	uint64_t d = go ? 0 : atomic_load_explicit(&c->degraded_seq, memory_order_relaxed);
	if (d) {
		if (!granted(s, d) && atomic_load_explicit(&s->tail, memory_order_acquire) < d)
			go = 1;
		else
			atomic_store_explicit(&c->degraded_seq, 0, memory_order_relaxed);
	}
	uint64_t seq = put_entry(c, l, name_id, (uint32_t)l->api | (go ? MMK_ENTRY_WENT : 0), t0);
	if (!seq)
		return 0;
	/* A held task's launches are observed: the server counts them
	 * finished when the GPU says so (protocol step 7). */
	uint64_t observe = 0;
	if (observe_every && !atomic_load_explicit(&s->free, memory_order_relaxed) && seq % observe_every == 0) {
		observe = seq;
		*gen = c->gen;
	}
	if (go || granted(s, seq)) {
		if (!d && !atomic_load_explicit(&c->served, memory_order_relaxed))
			atomic_store_explicit(&c->served, 1, memory_order_relaxed);
		return observe;
	}
	atomic_fetch_add_explicit(&mmk_stats.held, 1, memory_order_relaxed);
	if (!start)
		start = t0;
	uint64_t bound = timeout_ns > 4 * EXIT_NS ? timeout_ns - EXIT_NS : timeout_ns;
	for (int spin = 0; spin < 200; spin++) {
		if (granted(s, seq)) {
			atomic_store_explicit(&c->served, 1, memory_order_relaxed);
			return observe;
		}
		__builtin_ia32_pause();
	}
	/* Every wait ends at the launch's deadline, start and the bound. The
	 * futex sleeps until WAKE_SLACK_NS before it and the rest is spun: a
	 * thread woken from a timed futex wait runs again 0.1-0.8 ms past
	 * its timeout on the 2-core build machine (the kernel's timer slack
	 * and scheduling), which a launch whose grant never came spent past
	 * the bound (TestLaunchBoundNeverGranted: the hook's count 10.1-10.8
	 * ms against 10). The spin costs a wait that reaches its end at most
	 * WAKE_SLACK_NS of CPU: once per hung server (degraded_seq), and once
	 * per launch a live server holds past the bound; with a bound of
	 * WAKE_SLACK_NS or less the whole wait is spun. */
	for (;;) {
		uint32_t g = atomic_load_explicit(&s->granted, memory_order_acquire);
		if ((int32_t)(g - (uint32_t)seq) >= 0) {
			atomic_store_explicit(&c->served, 1, memory_order_relaxed);
			note_wait(start);
			return observe;
		}
		uint64_t waited = now_ns() - start;
		if (waited >= bound)
			break;
		if (bound - waited > WAKE_SLACK_NS)
			futex_wait(&s->granted, g, bound - waited - WAKE_SLACK_NS);
		else
			__builtin_ia32_pause();
	}
	note_wait(start);
	atomic_fetch_add_explicit(&mmk_stats.fail_open, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->fail_open, 1, memory_order_relaxed);
	atomic_store_explicit(&c->degraded_seq, seq, memory_order_relaxed);
	if (!server_alive(c))
		drop(c);
	return observe;
}
