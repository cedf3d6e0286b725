/*
 * log.c: the bottom of the hook, which every other unit may use: logging
 * to stderr, the counters of launches, by launch API, that the hook's
 * stats report, and the hook's own threads.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

struct mmk_stats mmk_stats;

static int log_on;

void mmk_log_init(void)
{
	const char *v = getenv("MMK_HOOK_LOG");
	log_on = v && *v == '1';
}

void mmk_log(int always, const char *fmt, ...)
{
	if (!always && !log_on)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	char line[640];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int m = snprintf(line, sizeof line, "mmkhook[%d] %lld.%06ld: %.*s", (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec / 1000, n, buf);
	if (m > 0)
		(void)!write(2, line, (size_t)(m < (int)sizeof line ? m : (int)sizeof line - 1));
}

static const char *const api_names[MMK_API_COUNT] = {
	"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
	"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuLaunchCooperativeKernelMultiDevice",
	"cuGraphLaunch", "cuGraphLaunch_ptsz", "legacy",
};

const char *mmk_api_name(enum mmk_api a)
{
	return a < MMK_API_COUNT ? api_names[a] : "?";
}

uint64_t mmk_hook_launches(void)
{
	uint64_t n = 0;
	for (int i = 0; i < MMK_API_COUNT; i++)
		n += atomic_load_explicit(&mmk_stats.by_api[i], memory_order_relaxed);
	return n;
}

int mmk_stats_json(char *buf, int len)
{
	if (len <= 0)
		return 0;
	int n = snprintf(buf, (size_t)len, "{\"pid\":%d,\"launches\":%llu,\"unnamed\":%llu,\"held\":%llu,\"fail_open\":%llu,\"wakes\":%llu,\"syncs\":%llu,\"observed\":%llu,\"unobserved\":%llu,\"masked\":%llu,\"max_wait_us\":%llu,\"by_api\":{",
			 (int)getpid(), (unsigned long long)mmk_hook_launches(),
			 (unsigned long long)atomic_load(&mmk_stats.unnamed), (unsigned long long)atomic_load(&mmk_stats.held),
			 (unsigned long long)atomic_load(&mmk_stats.fail_open), (unsigned long long)atomic_load(&mmk_stats.wakes),
			 (unsigned long long)atomic_load(&mmk_stats.syncs), (unsigned long long)atomic_load(&mmk_stats.observed),
			 (unsigned long long)atomic_load(&mmk_stats.unobserved), (unsigned long long)atomic_load(&mmk_stats.masked),
			 (unsigned long long)(atomic_load(&mmk_stats.max_wait_ns) / 1000));
	for (int i = 0; i < MMK_API_COUNT && n < len; i++)
		n += snprintf(buf + n, (size_t)(len - n), "%s\"%s\":%llu", i ? "," : "", api_names[i],
			      (unsigned long long)atomic_load(&mmk_stats.by_api[i]));
	if (n < len)
		n += snprintf(buf + n, (size_t)(len - n), "}}");
	return n < len ? n : len - 1;
}

int mmk_thread(void *(*fn)(void *), const char *what)
{
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int r = pthread_create(&t, &a, fn, NULL) == 0 ? 0 : -1;
	pthread_attr_destroy(&a);
	if (r < 0)
		mmk_log(1, "no %s", what);
	return r;
}

void *mmk_cuda(const char **why)
{
	const char *path = getenv("MMK_CUDA_PATH");
	void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h && why)
		*why = dlerror();
	return h;
}
