/*
 * replay.c: a job for CI without a GPU. It plays the CUDA driver's part:
 * opens the fake CUPTI and the hook named by CUDA_INJECTION64_PATH, calls
 * InitializeInjection as the driver does at cuInit, then replays a kernel
 * trace from a file, one line per launch:
 *
 *   name gridX gridY gridZ blockX blockY blockZ gap_us
 *
 * calling the launch callbacks for each (cuLaunchKernel) and sleeping the
 * gap after it, --loops times. It prints one JSON line: launches, the time
 * launch calls spent waiting for grants, and the hook's counters.
 *
 *   replay TRACE [LOOPS]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/cupti_decls.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

struct rec {
	char name[256];
	mmk_cuLaunchKernel_params p;
	unsigned gap_us;
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: replay TRACE [LOOPS]\n");
		return 2;
	}
	int loops = argc > 2 ? atoi(argv[2]) : 1;
	void *cupti = dlopen(getenv("MMK_CUPTI_PATH"), RTLD_NOW | RTLD_GLOBAL);
	void *hook = dlopen(getenv("CUDA_INJECTION64_PATH"), RTLD_NOW);
	if (!cupti || !hook) {
		fprintf(stderr, "replay: %s\n", dlerror());
		return 1;
	}
	int (*call)(uint32_t, const void *, const char *) = (int (*)(uint32_t, const void *, const char *))dlsym(cupti, "fake_api_call");
	int (*init)(void) = (int (*)(void))dlsym(hook, "InitializeInjection");
	int (*stats)(char *, int) = (int (*)(char *, int))dlsym(hook, "mmk_hook_stats_json");
	if (!call || !init || !stats) {
		fprintf(stderr, "replay: missing symbols\n");
		return 1;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	struct rec *recs = NULL;
	size_t n = 0, cap = 0;
	struct rec r;
	memset(&r, 0, sizeof r);
	while (fscanf(f, "%255s %u %u %u %u %u %u %u", r.name, &r.p.gridDimX, &r.p.gridDimY, &r.p.gridDimZ,
		      &r.p.blockDimX, &r.p.blockDimY, &r.p.blockDimZ, &r.gap_us) == 8) {
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			recs = realloc(recs, cap * sizeof *recs);
			if (!recs)
				return 1;
		}
		recs[n++] = r;
	}
	fclose(f);
	int hooked = init();
	double waited = 0, worst = 0, t0 = now_us();
	size_t launches = 0;
	for (int l = 0; l < loops; l++) {
		for (size_t i = 0; i < n; i++) {
			recs[i].p.f = &recs[i]; /* one function per distinct line */
			double t = now_us();
			call(MMK_CBID_cuLaunchKernel, &recs[i].p, recs[i].name);
			double w = now_us() - t;
			waited += w;
			if (w > worst)
				worst = w;
			launches++;
			if (recs[i].gap_us)
				usleep(recs[i].gap_us);
		}
	}
	char buf[2048];
	stats(buf, sizeof buf);
	printf("{\"hooked\":%d,\"launches\":%zu,\"wall_us\":%.0f,\"waited_us\":%.0f,\"max_wait_us\":%.0f,\"hook\":%s}\n",
	       hooked, launches, now_us() - t0, waited, worst, buf);
	return 0;
}
