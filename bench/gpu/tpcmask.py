"""TPC masks on a real GPU (issue 34's spike), and the hook's measure of
a request against the service's own.

  python3 bench/gpu/tpcmask.py --out OUT [--cycles 3] [--window 3] [--segments check --variants full,keep=72,off=127,off=0]

Can mmk's hook restrict an offline job's kernels to part of the GPU's TPCs
(hook/lib/tpcmask.c: the driver's kernel-descriptor callback, MMK_TPC_MASK=1),
and what isolation does it give against an MPS share of the same size?

1. check (no kernel scheduler, MMK_TPC_KEEP fixes the mask): a vgg19
   trainer's speed alone with every TPC and with 3/4, 1/2 and 1/4 of them,
   without MPS and under MPS. Masks that work slow it down.
2. isolation (pareto.py's protocol, one MPS daemon, the same processes for
   every setting, cycled in rotated rounds, alone in every round): a
   resnet50 batch-16 request loop (2 ms think, hooked, online) beside the
   vgg19 trainer at MPS client priority 1, the trainer's kernels masked to
   3/4, 1/2, 1/4 of the TPCs by the kernel scheduler (tpcs F on its control
   channel), against the trainer at an MPS active thread percentage of 75,
   50 and 25. Every setting runs the server's fifo policy, so that the
   online job's hook marks its requests (protocol step 9): the server's
   request log (requests.jsonl) is then compared with the job's own
   latencies, window by window.

Output: OUT/windows.jsonl (pareto's window lines plus m0/m1, the windows on
CLOCK_MONOTONIC), OUT/requests.jsonl, OUT/check.jsonl, records, and a
summary (OUT/summary.md) from tpcmask_report.py. No MIG change; the MPS
daemon runs with its pipe directory under /tmp and is quit before the end.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pareto  # noqa: E402

TPCS = 66  # H100 and H200: 132 SMs, two per TPC
KEEPS = [("3/4", 0.75), ("1/2", 0.5), ("1/4", 0.25)]


def parse_variant(v):
    """A --variants entry: full (no mask), keep=N (TPCs 0..N-1 kept, N up
    to 128: the mask names the TPCs from N on, those this GPU does not
    have too) or off=LIST (exactly these TPCs off, ranges joined by +:
    off=0-7+65; MMK_TPC_OFF). Returns its name and the hook's env."""
    if v == "full":
        return ("full", {})
    kind, _, n = v.partition("=")
    if kind == "keep" and n.isdigit() and 1 <= int(n) <= 128:
        return ("keep-" + n, {"MMK_TPC_KEEP": n})
    if kind == "off" and n and all(p.isdigit() or (p.count("-") == 1 and all(q.isdigit() for q in p.split("-"))) for p in n.split("+")):
        return ("off-" + n, {"MMK_TPC_OFF": n.replace("+", ",")})
    raise SystemExit("tpcmask.py: --variants entry %r is not full, keep=N (N in 1..128) or off=A-B+C" % v)


def check(run, mps):
    """Segment 1: the trainer alone under fixed masks, one process each."""
    name = "check-mps" if mps else "check"
    if mps:
        run.mps(True)
    seg = pareto.Segment(run, name, mps)
    seg.hooked = set()
    hook = os.path.join(run.args.bin, "libmmkhook.so")
    variants = [("full", {})] + [(n, {"MMK_TPC_KEEP": str(max(1, round(f * TPCS)))}) for n, f in KEEPS]
    if run.args.variants:
        variants = [parse_variant(v) for v in run.args.variants.split(",")]
    for n, mask in variants:
        env = {"CUDA_INJECTION64_PATH": hook, "MMK_CUPTI_PATH": os.environ.get("MMK_CUPTI_PATH", ""), "MMK_TPC_MASK": "1", "MMK_HOOK_LOG": "1", **mask}
        if mps:
            env["CUDA_MPS_CLIENT_PRIORITY"] = "1"
        seg.worker("lp-" + n, "lp", env)
    names = ["lp-" + n for n, _ in variants]
    seg.go(names)
    settings = [{"name": "trainer alone, TPCs " + n, "lp": "lp-" + n} for n, _ in variants]
    try:
        seg.measure(settings, run.args.cycles)
    finally:
        run.save(name, seg.finish())
        if mps:
            run.mps(False)


def isolation(run):
    """Segment 2: the request loop beside the trainer, masks against MPS shares."""
    run.mps(True)
    seg = pareto.Segment(run, "mps", True)
    seg.masks = True
    seg.hooked = {"hp", "lp1"}
    seg.start_server()
    prio = lambda p, pct=100: {"CUDA_MPS_CLIENT_PRIORITY": str(p), **({"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(pct)} if pct != 100 else {})}
    seg.worker("hp", "hp", prio(0), hooked=("b16-hp", 0, True))
    seg.worker("lp1", "lp", {**prio(1), "MMK_TPC_MASK": "1"}, hooked=("b16-lp", 5, False))
    for pct in (75, 50, 25):
        seg.worker("lp%d" % pct, "lp", prio(1, pct))
    seg.go(["hp", "lp1", "lp75", "lp50", "lp25"])
    fifo = lambda name, lp=None, **kw: {"name": name, "hp": "hp", "lp": lp, "policy": "fifo", **kw}
    settings = [
        fifo("alone (MPS)"),
        {"name": "LP alone (MPS)", "lp": "lp1", "policy": "fifo"},
        {"name": "LP alone, TPCs 1/2", "lp": "lp1", "policy": "fifo", "tpcs": 0.5},
        fifo("prio 1", "lp1"),
    ]
    settings += [fifo("prio 1, TPCs " + n, "lp1", tpcs=f) for n, f in KEEPS]
    settings += [fifo("prio 1, MPS %d %%" % pct, "lp%d" % pct) for pct in (75, 50, 25)]
    try:
        seg.measure(settings, run.args.cycles)
        stats = seg.control("stats")
        print("server: %s" % json.dumps(stats.get("counters")), flush=True)
    finally:
        run.save("mps", seg.finish())
        run.mps(False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--window", type=float, default=3.0)
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--segments", default="check,check-mps,isolation")
    ap.add_argument("--variants", default="", help="the check's masks, comma-separated: full, keep=N, off=A-B+C (default full and 3/4, 1/2, 1/4 of the TPCs kept)")
    ap.add_argument("--bin", default=os.environ.get("MMK_BIN", os.path.join(HERE, "..", "..", "bin")))
    ap.add_argument("--fake", action="store_true", help="no GPU: sleeping workers, no MPS, no hooks")
    a = ap.parse_args()
    # pareto.Run takes pareto's arguments: the pair, pinning, spinning.
    args = argparse.Namespace(out=a.out, pair="b16", cycles=a.cycles, window=a.window, settle=a.settle, policy_settle=a.settle,
                              think_ms=2.0, host_spin=1, pin=1, segments="", settings="", mmkctl=os.path.join(a.bin, "mmkctl"),
                              fake=a.fake, bin=a.bin, variants=a.variants)
    run = pareto.Run(args)
    run.server_args = ["--requests", os.path.join(a.out, "requests.jsonl")]
    t = time.time()
    try:
        for seg in a.segments.split(","):
            print("tpcmask: segment %s" % seg, flush=True)
            {"check": lambda: check(run, False), "check-mps": lambda: check(run, True), "isolation": lambda: isolation(run)}[seg]()
    finally:
        run.mps(False)
        run.finish()
    print("tpcmask: %d windows in %.0f s" % (len(run.windows), time.time() - t), flush=True)
    report = os.path.join(HERE, "tpcmask_report.py")
    subprocess.run([sys.executable, report, a.out], check=False)


if __name__ == "__main__":
    main()
