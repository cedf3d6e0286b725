"""Kernel traces of the co-location pairs' jobs, in the format of trace/data.

  python3 bench/gpu/kernel_trace.py --out DIR [--pairs main,alexnet,keypoint,mask]

For every job of the pairs (bench/gpu/pareto.py's PAIRS: the online job at
its batch, the offline one training or inferring at its batch) one fresh
process builds the model exactly as pareto_worker.py does (same seeds, CPU
threads, cuDNN settings), warms up, times --time-iters iterations without
the profiler (iter_ms), then runs --iters iterations under torch.profiler
with a synchronize after each, inside a record_function("mmk_iter_N")
range. Each kernel becomes one JSON line (iter, name, grid, block, regs,
smem, occ, stream, ts, dur, launch_ts, launch_api; see trace/data/README.md),
sorted by GPU start, in DIR/MODEL_MODE_bsN.jsonl.gz; DIR/summary.txt gets
one line per trace in the format trace.ParseSummary reads. The kernel-level
simulator (go run ./bench/simrank) replays these traces.

--convert CHROME.json converts one exported chrome trace and prints the
lines (no torch needed: the converter's own check).
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


def convert(events):
    """Kernel lines from chrome-trace events: each kernel joined to its
    launch call by correlation id and given the iteration whose
    mmk_iter_N range holds the launch (-1 if none)."""
    iters = []
    launches = {}
    kernels = []
    for e in events:
        cat, name, args = e.get("cat", ""), e.get("name", ""), e.get("args") or {}
        if cat == "user_annotation" and name.startswith("mmk_iter_"):
            iters.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), int(name[len("mmk_iter_"):])))
        elif cat in ("cuda_runtime", "cuda_driver") and any(name.startswith(a) for a in LAUNCH_APIS) and "correlation" in args:
            launches[args["correlation"]] = (float(e["ts"]), name.split("_v")[0] if name.startswith("cu") and not name.startswith("cuda") else name)
        elif cat == "kernel":
            kernels.append(e)
    out = []
    for k in kernels:
        args = k.get("args") or {}
        launch = launches.get(args.get("correlation"))
        lts = launch[0] if launch else None
        it = -1
        if lts is not None:
            for a, b, n in iters:
                if a <= lts <= b:
                    it = n
                    break
        out.append({
            "iter": it,
            "name": k.get("name", ""),
            "grid": list(args.get("grid", [1, 1, 1])),
            "block": list(args.get("block", [1, 1, 1])),
            "regs": int(args.get("registers per thread", 0)),
            "smem": int(args.get("shared memory", 0)),
            "occ": int(round(float(args.get("est. achieved occupancy %", 0)))),
            "stream": int(args.get("stream", 0)),
            "ts": float(k["ts"]),
            "dur": float(k.get("dur", 0)),
            "launch_ts": lts,
            "launch_api": launch[1] if launch else "",
        })
    out = [k for k in out if k["launch_ts"] is not None]
    if out:
        base = min(min(k["ts"], k["launch_ts"]) for k in out)
        for k in out:
            k["ts"] = round(k["ts"] - base, 3)
            k["launch_ts"] = round(k["launch_ts"] - base, 3)
    out.sort(key=lambda k: k["ts"])
    return out


def jobs(pairs):
    from pareto import PAIRS

    seen, out = set(), []
    for p in pairs:
        (hm, hb), (lm, lb, train) = PAIRS[p]
        for job in ((hm, hb, False, "hp"), (lm, lb, train, "lp")):
            key = job[:3]
            if key not in seen:
                seen.add(key)
                out.append(job)
    return out


def one(args):
    """Traces one job in this process; prints its summary line."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    import pareto_worker

    torch.backends.cudnn.benchmark = False
    torch.set_num_threads(1 if args.role == "hp" else 2)
    wargs = argparse.Namespace(model=args.model, batch=args.batch)
    model, make = pareto_worker.build(wargs)
    work = pareto_worker.step_fn(model.cuda(), make(), args.train, args.batch)
    for _ in range(args.warmup):
        work()
        torch.cuda.synchronize()
    ts = []
    for _ in range(args.time_iters):
        t = time.perf_counter()
        work()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) * 1e3)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(args.iters):
            with record_function("mmk_iter_%d" % i):
                work()
                torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        with open(f.name) as fh:
            events = json.load(fh)["traceEvents"]
    lines = convert(events)
    mode = "train" if args.train else "infer"
    name = "%s_%s_bs%d" % (args.model, mode, args.batch)
    with gzip.open(os.path.join(args.out, name + ".jsonl.gz"), "wt") as f:
        for k in lines:
            f.write(json.dumps(k) + "\n")
    # The summary describes iteration 1 (0 if there is only one), as
    # trace/data/summary.txt does.
    it1 = [k for k in lines if k["iter"] == min(1, args.iters - 1)]
    busy = sum(k["dur"] for k in it1)
    span = (max(k["ts"] + k["dur"] for k in it1) - min(k["launch_ts"] for k in it1)) if it1 else 0
    print("%s %s bs=%d iter_ms=%.2f kernels/iter=%d gpu_busy_ms=%.2f span_ms=%.2f busy_frac=%.2f unmatched=%d iter_ms_p10_p90=%.2f-%.2f gpu=%s torch=%s" % (
        args.model, mode, args.batch, statistics.median(ts), len(it1), busy / 1e3, span / 1e3, busy / span if span else 0,
        sum(1 for k in lines if k["iter"] < 0), sorted(ts)[len(ts) // 10], sorted(ts)[len(ts) * 9 // 10],
        torch.cuda.get_device_name().replace(" ", "_"), torch.__version__), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--pairs", default="main,alexnet,keypoint,mask")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--time-iters", type=int, default=30)
    ap.add_argument("--convert", help="a chrome trace to convert and print (a check without torch)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--role", default="hp")
    args = ap.parse_args()
    if args.convert:
        with open(args.convert) as f:
            for k in convert(json.load(f)["traceEvents"]):
                print(json.dumps(k))
        return
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    if args.one:
        one(args)
        return
    with open(os.path.join(args.out, "summary.txt"), "a") as summary:
        for model, batch, train, role in jobs(args.pairs.split(",")):
            cmd = [sys.executable, os.path.abspath(__file__), "--one", "--out", args.out, "--model", model, "--batch", str(batch),
                   "--role", role, "--iters", str(args.iters), "--warmup", str(args.warmup), "--time-iters", str(args.time_iters)]
            if train:
                cmd.append("--train")
            t0 = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.stderr.write(r.stderr[-3000:])
                print("FAILED %s bs=%d rc=%d" % (model, batch, r.returncode), flush=True)
                continue
            line = r.stdout.strip().splitlines()[-1]
            summary.write(line + "\n")
            summary.flush()
            print("%s (%.0f s)" % (line, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
