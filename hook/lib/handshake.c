/*
 * handshake.c: the checks of a kernel scheduler's welcome (handshake.h).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handshake.h"

#ifndef F_GET_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#endif

/* is_eventfd reports whether fd is an eventfd: the kernel names its
 * anonymous inode so in /proc/self/fd. */
static int is_eventfd(int fd)
{
	char path[64], target[64];
	int n = 0;
	/* "/proc/self/fd/" and the number, without printf's locale. */
	const char *prefix = "/proc/self/fd/";
	size_t p = strlen(prefix);
	memcpy(path, prefix, p);
	char digits[16];
	unsigned v = (unsigned)fd;
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < (int)sizeof digits);
	while (n > 0)
		path[p++] = digits[--n];
	path[p] = 0;
	ssize_t len = readlink(path, target, sizeof target - 1);
	if (len < 0)
		return 0;
	target[len] = 0;
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

const char *mmk_check_welcome(const struct mmk_welcome *w, size_t n, int memfd, int wakefd)
{
	if (n != sizeof *w || w->magic != MMK_PROTO_MAGIC)
		return "no valid welcome";
	if (w->version != MMK_PROTO_VERSION)
		return "the server speaks another protocol version";
	if (w->status != 0)
		return "the server refused the task";
	if (w->ring != MMK_RING)
		return "the server's ring is not the hook's";
	if (w->slot_bytes < sizeof(struct mmk_slot) || w->slot_bytes > MMK_SLOT_MAX)
		return "the announced shared memory does not hold a slot";
	if (memfd < 0 || wakefd < 0)
		return "the server sent no shared memory";
	struct stat st;
	if (fstat(memfd, &st) != 0 || !S_ISREG(st.st_mode))
		return "the shared memory is not a memory file";
	if (st.st_size != (off_t)w->slot_bytes)
		return "the shared memory is not the size announced";
	int seals = fcntl(memfd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return "the shared memory is not sealed against shrinking and growing";
	if (!is_eventfd(wakefd))
		return "the wake-up descriptor is not an eventfd";
	return NULL;
}
