/*
 * tpcprobe.c: mmk-tpcprobe, the probe mmkd maps a GPU's TPC mask slots
 * with (issue 53; bench/gpu/tpcmap.py did it by hand). It runs one kernel
 * whose blocks spin 50 us and record the SM they ran on (%smid), 16
 * blocks per SM, three times, on CUDA's device 0 (CUDA_VISIBLE_DEVICES
 * picks the GPU), and prints one JSON line:
 *
 *   {"gpu":"NVIDIA H200","uuid":"GPU-...","sms":132,"seen":[0,1,...]}
 *
 * It masks nothing itself: mmkd runs it with the hook injected
 * (CUDA_INJECTION64_PATH, MMK_TPC_MASK=1) and MMK_TPC_OFF=S or
 * MMK_TPC_KEEP=N, so that the SMs a mask took away are those missing
 * from "seen" (internal/tpcprobe builds the map from them). No MPS, no
 * kernel scheduler, no change to the GPU's state. The driver is loaded
 * with dlopen, as the hook loads it: the probe builds without the CUDA
 * toolkit, and the driver compiles the PTX. On any CUDA error it says
 * which call failed on stderr and exits 1.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ptx[] = ".version 7.0\n"
			  ".target sm_70\n"
			  ".address_size 64\n"
			  ".visible .entry smid(.param .u64 out, .param .u64 spin)\n"
			  "{\n"
			  "  .reg .pred %p<3>;\n"
			  "  .reg .b32 %r<4>;\n"
			  "  .reg .b64 %rd<9>;\n"
			  "  mov.u64 %rd4, %globaltimer;\n"
			  "  ld.param.u64 %rd5, [spin];\n"
			  "  add.u64 %rd6, %rd4, %rd5;\n"
			  "WAIT:\n"
			  "  mov.u64 %rd7, %globaltimer;\n"
			  "  setp.lt.u64 %p1, %rd7, %rd6;\n"
			  "  @%p1 bra WAIT;\n"
			  "  mov.u32 %r3, %tid.x;\n"
			  "  setp.ne.u32 %p2, %r3, 0;\n"
			  "  @%p2 bra DONE;\n"
			  "  mov.u32 %r1, %smid;\n"
			  "  mov.u32 %r2, %ctaid.x;\n"
			  "  ld.param.u64 %rd1, [out];\n"
			  "  cvta.to.global.u64 %rd1, %rd1;\n"
			  "  mul.wide.u32 %rd2, %r2, 4;\n"
			  "  add.s64 %rd3, %rd1, %rd2;\n"
			  "  st.global.u32 [%rd3], %r1;\n"
			  "DONE:\n"
			  "  ret;\n"
			  "}\n";

enum { ATTR_SM_COUNT = 16, MAX_SMS = 4096, LAUNCHES = 3 };

typedef int (*fn_int)(int);
typedef int (*fn_dev_get)(int *, int);
typedef int (*fn_attr)(int *, int, int);
typedef int (*fn_ctx_retain)(void **, int);
typedef int (*fn_ptr)(void *);
typedef int (*fn_mod_load)(void **, const void *);
typedef int (*fn_mod_fn)(void **, void *, const char *);
typedef int (*fn_alloc)(uint64_t *, size_t);
typedef int (*fn_memset)(uint64_t, unsigned, size_t);
typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
typedef int (*fn_void)(void);
typedef int (*fn_dtoh)(void *, uint64_t, size_t);
typedef int (*fn_name)(char *, int, int);
typedef int (*fn_uuid)(unsigned char *, int);

static void *cuda;

/* sym is the driver's entry name; it exits where the driver lacks it. */
static void *sym(const char *name)
{
	void *p = dlsym(cuda, name);
	if (!p) {
		fprintf(stderr, "mmk-tpcprobe: the CUDA driver has no %s\n", name);
		exit(1);
	}
	return p;
}

/* check exits, naming the call, where r is a CUDA error. */
static void check(int r, const char *what)
{
	if (r != 0) {
		fprintf(stderr, "mmk-tpcprobe: %s: CUDA error %d\n", what, r);
		exit(1);
	}
}

/* json_string prints s as a JSON string. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

int main(void)
{
	cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		fprintf(stderr, "mmk-tpcprobe: no CUDA driver: %s\n", dlerror());
		return 1;
	}
	check(((fn_int)sym("cuInit"))(0), "cuInit");
	int dev = 0, sms = 0;
	check(((fn_dev_get)sym("cuDeviceGet"))(&dev, 0), "cuDeviceGet");
	check(((fn_attr)sym("cuDeviceGetAttribute"))(&sms, ATTR_SM_COUNT, dev), "cuDeviceGetAttribute(SM count)");
	if (sms < 1 || sms > MAX_SMS) {
		fprintf(stderr, "mmk-tpcprobe: the GPU says it has %d SMs\n", sms);
		return 1;
	}
	void *ctx = NULL, *mod = NULL, *fn = NULL;
	check(((fn_ctx_retain)sym("cuDevicePrimaryCtxRetain"))(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(((fn_ptr)sym("cuCtxSetCurrent"))(ctx), "cuCtxSetCurrent");
	check(((fn_mod_load)sym("cuModuleLoadData"))(&mod, ptx), "cuModuleLoadData");
	check(((fn_mod_fn)sym("cuModuleGetFunction"))(&fn, mod, "smid"), "cuModuleGetFunction");
	unsigned blocks = (unsigned)sms * 16;
	uint64_t buf = 0;
	check(((fn_alloc)sym("cuMemAlloc_v2"))(&buf, blocks * sizeof(uint32_t)), "cuMemAlloc");
	uint32_t *host = calloc(blocks, sizeof *host);
	unsigned char *seen = calloc(MAX_SMS, 1);
	if (!host || !seen) {
		fprintf(stderr, "mmk-tpcprobe: out of memory\n");
		return 1;
	}
	for (int i = 0; i < LAUNCHES; i++) {
		check(((fn_memset)sym("cuMemsetD32_v2"))(buf, 0xFFFFFFFFu, blocks), "cuMemsetD32");
		uint64_t out = buf, spin = 50000;
		void *params[] = {&out, &spin};
		check(((fn_launch)sym("cuLaunchKernel"))(fn, blocks, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
		check(((fn_void)sym("cuCtxSynchronize"))(), "cuCtxSynchronize");
		check(((fn_dtoh)sym("cuMemcpyDtoH_v2"))(host, buf, blocks * sizeof *host), "cuMemcpyDtoH");
		for (unsigned b = 0; b < blocks; b++)
			if (host[b] < MAX_SMS)
				seen[host[b]] = 1;
	}
	char name[256] = "";
	check(((fn_name)sym("cuDeviceGetName"))(name, sizeof name, dev), "cuDeviceGetName");
	unsigned char u[16];
	fn_uuid get_uuid = (fn_uuid)dlsym(cuda, "cuDeviceGetUuid_v2");
	if (!get_uuid)
		get_uuid = (fn_uuid)sym("cuDeviceGetUuid");
	check(get_uuid(u, dev), "cuDeviceGetUuid");
	printf("{\"gpu\":");
	json_string(name);
	printf(",\"uuid\":\"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\",\"sms\":%d,\"seen\":[", u[0], u[1], u[2], u[3], u[4],
	       u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15], sms);
	for (int s = 0, first = 1; s < MAX_SMS; s++) {
		if (!seen[s])
			continue;
		printf(first ? "%d" : ",%d", s);
		first = 0;
	}
	printf("]}\n");
	return fflush(stdout) == 0 ? 0 : 1;
}
