/*
 * profile.h: what profile.c offers: the profiling phase. It uses decode
 * (names) and log, and no other unit.
 */
#ifndef MMK_PROFILE_H
#define MMK_PROFILE_H

#include <stdatomic.h>

#include "decode.h"

/* mmk_profile_init starts the phase when MMK_PROFILE_OUT is set (cupti:
 * CUPTI's dlopen handle); while mmk_profiling is set, every launch goes to
 * mmk_profile_launch. */
extern _Atomic int mmk_profiling;
void mmk_profile_init(void *cupti);
void mmk_profile_launch(const mmk_CUpti_CallbackData *cb, const struct mmk_launch *l, uint32_t name_id);

#endif
