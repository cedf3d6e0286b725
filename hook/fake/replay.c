/*
 * replay.c: a job for CI without a GPU. It plays the CUDA driver's part:
 * opens the fake CUPTI (MMK_CUPTI_PATH) and the hook named by
 * CUDA_INJECTION64_PATH, calls InitializeInjection as the driver does at
 * cuInit, then replays a kernel trace from a file, one line per launch or
 * synchronisation:
 *
 *   name gridX gridY gridZ blockX blockY blockZ dur_us gap_us
 *   sync think_us
 *
 * A launch line calls the launch callbacks (cuLaunchKernel), runs the
 * kernel for dur_us on the fake GPU (fakecupti.c) and waits gap_us before
 * the next launch call. A sync line waits for the job's kernels, which ends
 * an iteration, then thinks think_us. It plays the file LOOPS times (0: no
 * limit) for at most SECONDS (0: no limit) and prints one JSON line:
 * launches, the time launch calls spent waiting for grants, iteration
 * latencies (first launch to the end of its sync), the hook's counters and
 * the kernels the fake GPU ran under a TPC mask. With MMK_FAKE_REPORT=1
 * it reports each iteration as a request of its own (mmk_report_request),
 * as a service that measures itself does. MMK_FAKE_GATE holds gates,
 * "N:WHAT" separated by commas, taken in order: after its Nth launch it
 * waits until WHAT holds, at most 20 s: "quiet" (its hook went quiet,
 * mmk_hook_quiet), "loud" (it turned loud again) or a path (that file
 * exists); ">PATH" makes the file instead, to tell a test. A test then
 * knows which launches the hook saw, whatever the machine's load; a gate
 * that timed out is counted ("gate_timeouts"). With MMK_FAKE_LIE=US it
 * plays a liar: it launches nothing, and at each sync line reports a
 * request of US microseconds ending then (mmk_report_request).
 *
 *   replay TRACE [LOOPS [SECONDS]]
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

/* wait_us waits like a busy launching thread: short gaps (the host work
 * between launches of a launch-bound job) spin, longer ones sleep. */
static void wait_us(unsigned us)
{
	if (!us)
		return;
	if (us < 200) {
		double end = now_us() + us;
		while (now_us() < end)
			;
		return;
	}
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

struct rec {
	char name[256];
	int sync;
	mmk_cuLaunchKernel_params p;
	unsigned dur_us, gap_us;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static struct rec *load(const char *path, size_t *count)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return NULL;
	}
	struct rec *recs = NULL, r;
	size_t n = 0, cap = 0;
	char line[1024];
	int lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		memset(&r, 0, sizeof r);
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (sscanf(line, "sync %u", &r.gap_us) == 1) {
			r.sync = 1;
		} else if (sscanf(line, "%255s %u %u %u %u %u %u %u %u", r.name, &r.p.gridDimX, &r.p.gridDimY, &r.p.gridDimZ,
				  &r.p.blockDimX, &r.p.blockDimY, &r.p.blockDimZ, &r.dur_us, &r.gap_us) != 9) {
			fprintf(stderr, "replay: %s line %d: want 'name gx gy gz bx by bz dur_us gap_us' or 'sync think_us'\n", path, lineno);
			free(recs);
			fclose(f);
			return NULL;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			struct rec *m = realloc(recs, cap * sizeof *recs);
			if (!m) {
				free(recs);
				fclose(f);
				return NULL;
			}
			recs = m;
		}
		recs[n++] = r;
	}
	fclose(f);
	*count = n;
	return recs;
}

/* A gate: after the launch numbered after, wait until what holds. */
#define MAX_GATES 8
struct gate {
	long after;
	char what[256];
};

/* parse_gates reads "N:WHAT,..." into g; -1 if it cannot. */
static int parse_gates(const char *spec, struct gate *g)
{
	int n = 0;
	while (spec && *spec) {
		char *end;
		long after = strtol(spec, &end, 10);
		if (n == MAX_GATES || end == spec || *end != ':' || after < 1) {
			fprintf(stderr, "replay: MMK_FAKE_GATE %s: want N:quiet, N:loud, N:PATH or N:>PATH, at most %d\n", spec, MAX_GATES);
			return -1;
		}
		const char *what = end + 1, *comma = strchr(what, ',');
		size_t len = comma ? (size_t)(comma - what) : strlen(what);
		if (len == 0 || len >= sizeof g[n].what) {
			fprintf(stderr, "replay: MMK_FAKE_GATE: a gate's condition is empty or too long\n");
			return -1;
		}
		g[n].after = after;
		memcpy(g[n].what, what, len);
		g[n].what[len] = 0;
		n++;
		spec = comma ? comma + 1 : NULL;
	}
	return n;
}

/* pass_gate waits until g's condition holds, at most 20 s; 0 if it never
 * did. */
static int pass_gate(const struct gate *g, int (*quiet)(void))
{
	if (g->what[0] == '>') {
		FILE *f = fopen(g->what + 1, "w");
		return f && fclose(f) == 0;
	}
	double until = now_us() + 20e6;
	for (;;) {
		int ok;
		if (strcmp(g->what, "quiet") == 0)
			ok = quiet();
		else if (strcmp(g->what, "loud") == 0)
			ok = !quiet();
		else
			ok = access(g->what, F_OK) == 0;
		if (ok)
			return 1;
		if (now_us() >= until)
			return 0;
		usleep(100);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: replay TRACE [LOOPS [SECONDS]]\n");
		return 2;
	}
	long loops = argc > 2 ? atol(argv[2]) : 1;
	double limit_us = argc > 3 ? atof(argv[3]) * 1e6 : 0;
	void *cupti = dlopen(getenv("MMK_CUPTI_PATH"), RTLD_NOW | RTLD_GLOBAL);
	void *hook = dlopen(getenv("CUDA_INJECTION64_PATH"), RTLD_NOW);
	if (!cupti || !hook) {
		fprintf(stderr, "replay: %s\n", dlerror());
		return 1;
	}
	void (*launch)(const mmk_cuLaunchKernel_params *, const char *, uint64_t) =
		(void (*)(const mmk_cuLaunchKernel_params *, const char *, uint64_t))dlsym(cupti, "fake_launch");
	void (*sync)(void) = (void (*)(void))dlsym(cupti, "fake_sync");
	int (*init)(void) = (int (*)(void))dlsym(hook, "InitializeInjection");
	int (*stats)(char *, int) = (int (*)(char *, int))dlsym(hook, "mmk_hook_stats_json");
	int (*report)(unsigned long long, unsigned long long) =
		(int (*)(unsigned long long, unsigned long long))dlsym(hook, "mmk_report_request");
	void (*tpc_stats)(uint64_t *, uint32_t *, uint64_t *) =
		(void (*)(uint64_t *, uint32_t *, uint64_t *))dlsym(cupti, "fake_tpc_stats");
	const char *rep = getenv("MMK_FAKE_REPORT");
	int reporting = rep && strcmp(rep, "1") == 0;
	int reported = 0;
	const char *lie_env = getenv("MMK_FAKE_LIE");
	double lie_us = lie_env && *lie_env ? atof(lie_env) : 0;
	struct gate gates[MAX_GATES];
	int ngates = parse_gates(getenv("MMK_FAKE_GATE"), gates);
	int gate_timeouts = 0;
	int (*quiet)(void) = (int (*)(void))dlsym(hook, "mmk_hook_quiet");
	if (!launch || !sync || !init || !stats || !report || !tpc_stats || !quiet || ngates < 0) {
		fprintf(stderr, "replay: missing symbols\n");
		return 1;
	}
	size_t n = 0;
	struct rec *recs = load(argv[1], &n);
	if (!recs)
		return 1;
	int hooked = init();
	double waited = 0, worst = 0, t0 = now_us(), iter_start = -1;
	size_t launches = 0, iters = 0, cap = 1024;
	double *lat = malloc(cap * sizeof *lat);
	if (!lat)
		return 1;
	for (long l = 0; loops == 0 || l < loops; l++) {
		if (limit_us > 0 && now_us() - t0 >= limit_us)
			break;
		for (size_t i = 0; i < n; i++) {
			struct rec *r = &recs[i];
			if (lie_us > 0) {
				/* The liar: no kernel, a late request at each sync line. */
				if (r->sync) {
					double end = now_us();
					if (report((unsigned long long)((end - lie_us) * 1e3), (unsigned long long)(end * 1e3)) == 0)
						reported++;
				}
				wait_us(r->gap_us);
				continue;
			}
			if (r->sync) {
				sync();
				if (iter_start >= 0) {
					if (iters == cap) {
						cap *= 2;
						double *m = realloc(lat, cap * sizeof *lat);
						if (!m)
							return 1;
						lat = m;
					}
					double end = now_us();
					lat[iters++] = end - iter_start;
					if (reporting && report((unsigned long long)(iter_start * 1e3), (unsigned long long)(end * 1e3)) == 0)
						reported++;
				}
				iter_start = -1;
				wait_us(r->gap_us);
				continue;
			}
			r->p.f = r; /* one function per distinct line */
			double t = now_us();
			if (iter_start < 0)
				iter_start = t;
			launch(&r->p, r->name, (uint64_t)r->dur_us * 1000);
			double w = now_us() - t;
			waited += w;
			if (w > worst)
				worst = w;
			launches++;
			for (int g = 0; g < ngates; g++)
				if ((size_t)gates[g].after == launches && !pass_gate(&gates[g], quiet))
					gate_timeouts++;
			wait_us(r->gap_us);
		}
	}
	sync();
	qsort(lat, iters, sizeof *lat, cmp_double);
	double p50 = iters ? lat[iters / 2] : 0, p99 = iters ? lat[(iters * 99) / 100 < iters ? (iters * 99) / 100 : iters - 1] : 0;
	char buf[2048];
	stats(buf, sizeof buf);
	uint64_t masked = 0, past = 0;
	uint32_t keep = 0;
	tpc_stats(&masked, &keep, &past);
	printf("{\"hooked\":%d,\"launches\":%zu,\"wall_us\":%.0f,\"waited_us\":%.0f,\"max_wait_us\":%.0f,"
	       "\"iters\":%zu,\"iter_p50_us\":%.0f,\"iter_p99_us\":%.0f,\"reported\":%d,\"tpc_masked\":%llu,\"tpc_last_keep\":%u,\"tpc_past\":%llu,\"gate_timeouts\":%d,\"hook\":%s}\n",
	       hooked, launches, now_us() - t0, waited, worst, iters, p50, p99, reported, (unsigned long long)masked, keep, (unsigned long long)past, gate_timeouts, buf);
	return 0;
}
