"""Which of a GPU's TPC mask slots are TPCs: the slot map of one GPU.

  python3 bench/gpu/tpcmap.py --out OUT [--bin DIR] [--slots 72]

A Hopper kernel descriptor's TPC mask numbers 72 slots (8 GPCs of 9 TPCs
on GH100) where an H100 or H200 has 66 TPCs: six slots are holes, and
which ones differs from die to die (the TPCs fused off at manufacture).
A rung that keeps "the first N slots" therefore keeps N or fewer TPCs,
and without the map no rung keeps a known share of the GPU.

This finds the map without reading any driver state: a kernel whose
blocks spin 50 us and record %smid runs once with no mask and once with
each slot alone masked (MMK_TPC_OFF=S, hook/lib/tpcmask.c), one process
each, eight at a time (no PyTorch: ctypes on the driver API and a PTX kernel the driver
compiles). A slot whose mask takes SMs away is a TPC, and the SMs it took
are that TPC's; one that takes none is a hole.

Output: OUT/tpcmap.json ({"gpu", "uuid", "slots", "sms", "tpcs":
{slot: [sm, sm]}, "holes": [...]}) and the same on stdout; it maps
CUDA's device 0 (CUDA_VISIBLE_DEVICES=UUID picks another), and fails
where no slot's mask took any SM (the hook masked nothing). No MPS, no
kernel scheduler, no change to the GPU's state.
"""
import argparse
import concurrent.futures
import ctypes
import json
import os
import subprocess
import sys

PTX = rb"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry smid(.param .u64 out, .param .u64 spin)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<9>;
  mov.u64 %rd4, %globaltimer;
  ld.param.u64 %rd5, [spin];
  add.u64 %rd6, %rd4, %rd5;
WAIT:
  mov.u64 %rd7, %globaltimer;
  setp.lt.u64 %p1, %rd7, %rd6;
  @%p1 bra WAIT;
  mov.u32 %r3, %tid.x;
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra DONE;
  mov.u32 %r1, %smid;
  mov.u32 %r2, %ctaid.x;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
DONE:
  ret;
}
"""


def check(r, what):
    if r != 0:
        raise SystemExit("tpcmap.py: %s: CUDA error %d" % (what, r))


def probe():
    """In this process: the SM ids the kernel's blocks ran on, as JSON."""
    cuda = ctypes.CDLL("libcuda.so.1")
    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    sms = ctypes.c_int()
    check(cuda.cuDeviceGetAttribute(ctypes.byref(sms), 16, dev), "SM count")  # MULTIPROCESSOR_COUNT
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    mod = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    fn = ctypes.c_void_p()
    check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"smid"), "cuModuleGetFunction")
    blocks = sms.value * 16
    buf = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(buf), blocks * 4), "cuMemAlloc")
    seen = set()
    for _ in range(3):
        check(cuda.cuMemsetD32_v2(buf, 0xFFFFFFFF, blocks), "cuMemset")
        out, spin = ctypes.c_uint64(buf.value), ctypes.c_uint64(50000)
        params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(out), ctypes.c_void_p), ctypes.cast(ctypes.byref(spin), ctypes.c_void_p))
        check(cuda.cuLaunchKernel(fn, blocks, 1, 1, 32, 1, 1, 0, None, params, None), "cuLaunchKernel")
        check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
        host = (ctypes.c_uint32 * blocks)()
        check(cuda.cuMemcpyDtoH_v2(host, buf, blocks * 4), "cuMemcpyDtoH")
        seen |= {v for v in host if v != 0xFFFFFFFF}
    name = ctypes.create_string_buffer(256)
    check(cuda.cuDeviceGetName(name, 256, dev), "cuDeviceGetName")
    uuid = (ctypes.c_ubyte * 16)()
    check(cuda.cuDeviceGetUuid_v2(uuid, dev), "cuDeviceGetUuid")
    h = bytes(uuid).hex()
    gpu_uuid = "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
    print(json.dumps({"sms": sms.value, "seen": sorted(seen), "gpu": name.value.decode(), "uuid": gpu_uuid}), flush=True)


def run(hook, off):
    env = {**os.environ, "TPCMAP_CHILD": "1"}
    if off is not None:
        env.update({"CUDA_INJECTION64_PATH": hook, "MMK_TPC_MASK": "1", "MMK_TPC_OFF": str(off)})
    p = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit("tpcmap.py: probe (slot %s) failed: %s" % (off, p.stderr[-2000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bin", default=os.environ.get("MMK_BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin")))
    ap.add_argument("--slots", type=int, default=72, help="the descriptor's TPC mask slots to scan (72 on Hopper)")
    ap.add_argument("--jobs", type=int, default=8, help="probe processes at once (they time-share the GPU; each kernel's mask is its own)")
    a = ap.parse_args()
    hook = os.path.abspath(os.path.join(a.bin, "libmmkhook.so"))
    if not os.path.exists(hook):
        raise SystemExit("tpcmap.py: no hook at %s (--bin)" % hook)
    os.makedirs(a.out, exist_ok=True)
    full = run(hook, None)
    every = set(full["seen"])
    if len(every) != full["sms"]:
        print("tpcmap.py: the unmasked kernel ran on %d SMs of %d" % (len(every), full["sms"]), file=sys.stderr)
    tpcs, holes = {}, []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        seen = list(pool.map(lambda s: run(hook, s)["seen"], range(a.slots)))
    for s in range(a.slots):
        got = set(seen[s])
        gone = sorted(every - got)
        extra = sorted(got - every)
        if extra:
            print("tpcmap.py: slot %d: SMs %s ran masked but not unmasked" % (s, extra), file=sys.stderr)
        if gone:
            tpcs[s] = gone
        else:
            holes.append(s)
        print("slot %d: %s" % (s, gone or "hole"), file=sys.stderr, flush=True)
    if not tpcs:
        raise SystemExit("tpcmap.py: no slot's mask took any SM: the hook masked nothing (see its log with MMK_HOOK_LOG=1)")
    # The GPU the probes ran on (CUDA's device 0, as CUDA_VISIBLE_DEVICES
    # picks it), not nvidia-smi's 0.
    res = {"gpu": full["gpu"], "uuid": full["uuid"], "slots": a.slots, "sms": full["sms"], "tpcs": tpcs, "holes": holes}
    with open(os.path.join(a.out, "tpcmap.json"), "w") as f:
        json.dump(res, f)
    print(json.dumps(res))


if __name__ == "__main__":
    if os.environ.get("TPCMAP_CHILD"):
        probe()
    else:
        main()
