"""Kernel counts and iteration times of one workload, for the hook's
coverage and overhead measurements (bench/gpu/hook-measure.sh).

  python3 hook_workload.py --job resnet50_infer --batch 1 --mode count|profile|time [--iters N]

Builds the model of bench/workloads/workload.py, warms up, then:
  count    runs --iters iterations and prints the kernels the hook saw over
           them (mmk_hook_count before and after, through ctypes; the hook
           is loaded by the driver from CUDA_INJECTION64_PATH).
  profile  runs the same iterations under torch.profiler and prints its
           kernel count (trace events of category "kernel").
  time     runs --iters iterations and prints per-iteration times.
  toggle   the hook's cost inside one process: --blocks blocks of --iters
           iterations, the hook's launch callbacks on and off in the order
           on, off, off, on, ... (mmk_hook_set_active), so that drifts fall
           on both; prints the median iteration time of each side and their
           ratio. Process-to-process spread (CPU placement, memory layout)
           stays out of it.
Each prints one JSON line. Iterations end with torch.cuda.synchronize().
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "workloads"))
import torch  # noqa: E402
import workload  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True, choices=sorted(workload.JOBS))
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--mode", required=True, choices=["count", "profile", "time", "toggle"])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=40, help="toggle: blocks of --iters iterations")
    args = ap.parse_args()
    model_name, mode, default_batch = workload.JOBS[args.job]
    batch = args.batch or default_batch
    torch.backends.cudnn.benchmark = False
    torch.set_num_threads(2)
    model, make, loss_fn = workload.build(model_name, batch)
    step = workload.make_step(model, make, loss_fn, mode)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    out = {"job": args.job, "batch": batch, "mode": args.mode, "iters": args.iters}
    if args.mode == "count":
        lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
        lib.mmk_hook_count.restype = ctypes.c_ulonglong
        n0 = lib.mmk_hook_count()
        for _ in range(args.iters):
            step()
            torch.cuda.synchronize()
        out["kernels"] = lib.mmk_hook_count() - n0
        buf = ctypes.create_string_buffer(2048)
        lib.mmk_hook_stats_json(buf, len(buf))
        out["stats"] = json.loads(buf.value.decode())
    elif args.mode == "profile":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.iters):
                step()
                torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            events = json.load(open(f.name))["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        out["kernels"] = len(kernels)
        out["cats"] = sorted({e.get("cat", "") for e in events})
    elif args.mode == "toggle":
        lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
        lib.mmk_hook_count.restype = ctypes.c_ulonglong
        side = {1: [], 0: []}
        blocks = {1: [], 0: []}
        seen = {1: 0, 0: 0}
        for b in range(args.blocks):
            on = 1 if b % 4 in (0, 3) else 0
            if lib.mmk_hook_set_active(on) != 0:
                raise SystemExit("mmk_hook_set_active failed: the hook is not in place")
            n0 = lib.mmk_hook_count()
            ts = []
            for _ in range(args.iters):
                t = time.perf_counter()
                step()
                torch.cuda.synchronize()
                ts.append((time.perf_counter() - t) * 1e3)
            seen[on] += lib.mmk_hook_count() - n0
            side[on] += ts
            blocks[on].append(statistics.median(ts))
        lib.mmk_hook_set_active(1)
        for on, name in ((1, "on"), (0, "off")):
            out[f"iter_ms_p50_{name}"] = statistics.median(side[on])
            out[f"iter_ms_mean_{name}"] = statistics.fmean(side[on])
            out[f"block_p50s_{name}"] = [round(x, 4) for x in blocks[on]]
            out[f"kernels_seen_{name}"] = seen[on]
        out["ratio_p50"] = out["iter_ms_p50_on"] / out["iter_ms_p50_off"]
        out["ratio_mean"] = out["iter_ms_mean_on"] / out["iter_ms_mean_off"]
        pairs = [a / b for a, b in zip(blocks[1], blocks[0])]
        out["block_ratio_median"] = statistics.median(pairs)
        buf = ctypes.create_string_buffer(2048)
        lib.mmk_hook_stats_json(buf, len(buf))
        out["stats"] = json.loads(buf.value.decode())
    else:
        times = []
        for _ in range(args.iters):
            t = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) * 1e3)
        out["iter_ms_mean"] = statistics.fmean(times)
        out["iter_ms_p50"] = statistics.median(times)
        out["iter_ms_min"] = min(times)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
