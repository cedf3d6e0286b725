/*
 * handshake.h: what handshake.c offers client.c: the checks of a kernel
 * scheduler's welcome (protocol step 2) before the hook trusts it. The
 * server is named by the job's environment (MMK_SCHED_SOCKET): what
 * answers there may be a server that died and left its socket to another
 * process, a server of another version, or a hostile one. Mapping a
 * shared memory the other side can shrink would kill the job with
 * SIGBUS at its next launch; writing wake-ups into a descriptor that is
 * not an eventfd would feed whatever it is. Pure but for fstat, fcntl
 * and readlink on the descriptors it is given; no logging, so that a
 * fuzz test can drive it (hook/handshake).
 */
#ifndef MMK_HANDSHAKE_H
#define MMK_HANDSHAKE_H

#include <stddef.h>

#include "proto.h"

/* MMK_SLOT_MAX bounds the shared memory a welcome may announce. */
#define MMK_SLOT_MAX (64u << 20)

/* mmk_check_welcome checks a welcome of n bytes and the two descriptors
 * that came with it: the welcome's magic, version, status, ring and
 * slot size; memfd is a regular file of exactly slot_bytes bytes sealed
 * against shrinking and growing (F_SEAL_SHRINK | F_SEAL_GROW: seals are
 * never removed, so the mapping stays whole for as long as it lives); and
 * wakefd is an eventfd. It returns NULL when all hold, else why not (a
 * static string). */
const char *mmk_check_welcome(const struct mmk_welcome *w, size_t n, int memfd, int wakefd);

#endif
