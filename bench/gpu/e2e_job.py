"""A job of mmkd's end-to-end run on a real GPU (bench/gpu/mmkd-e2e.sh).

  python3 e2e_job.py serve --job resnet50_infer --batch 1 --think-ms 2 --seconds 90
  python3 e2e_job.py serve --job resnet50_infer --batch 32 --rate 15 --seconds 60 --seed 1
  python3 e2e_job.py train --job vgg19_train --iters 300

serve answers closed-loop requests (forward + synchronize, then the think
time) for --seconds and prints one JSON line with its latency percentiles
(ms, think time excluded). With --rate R it is a service as the job
simulator models one (sim/jobsim/service.go): requests arrive open loop,
Poisson at R a second (drawn from --seed), and are served first come,
first served, one at a time; a request's latency runs from its arrival to
its end (its wait in the queue included), and the line also holds every
latency (lat_ms), the mean time a request took on the GPU (service_ms)
and the fraction of the window spent serving (busy), from which a
simulator replay takes the service's load. train runs --iters training steps (after 5 of
warm-up, synchronizing every 10) and prints one JSON line with its wall
time. Both print the wall-clock times they started and ended. Models come
from bench/workloads/workload.py (MMK Table III); random weights and
inputs, nothing downloaded. --dry does no GPU work: it sleeps and prints
lines of the same shape (marked "dry"), to test the orchestration without
a GPU.
"""
import argparse
import json
import os
import signal
import sys
import time


def pick(lat, p):
    return lat[min(len(lat) - 1, max(0, int(round(p / 100 * len(lat))) - 1))]


def serve(args, step, sync):
    for _ in range(30):
        step()
    sync()
    lat = []
    t_start = time.time()
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        step()
        sync()
        lat.append((time.perf_counter() - t0) * 1e3)
        time.sleep(args.think_ms / 1e3)
    lat.sort()
    return {"role": "online", "requests": len(lat), "p50_ms": round(pick(lat, 50), 3),
            "p99_ms": round(pick(lat, 99), 3), "mean_ms": round(sum(lat) / len(lat), 3),
            "t_start": t_start, "t_end": time.time()}


def serve_open(args, step, sync):
    """Open loop: Poisson arrivals at --rate, first come first served."""
    import random
    for _ in range(30):
        step()
    sync()
    rng = random.Random(args.seed)
    arrivals, t = [], rng.expovariate(args.rate)
    while t < args.seconds:
        arrivals.append(t)
        t += rng.expovariate(args.rate)
    lat, busy = [], 0.0
    t_start = time.time()
    origin = time.perf_counter()
    for a in arrivals:
        now = time.perf_counter() - origin
        if now < a:
            time.sleep(a - now)
        s = time.perf_counter()
        step()
        sync()
        e = time.perf_counter()
        busy += e - s
        lat.append((e - origin - a) * 1e3)
    window = time.perf_counter() - origin
    done = sorted(lat)
    return {"role": "online", "requests": len(lat), "rate": args.rate, "seed": args.seed,
            "p50_ms": round(pick(done, 50), 3), "p99_ms": round(pick(done, 99), 3),
            "mean_ms": round(sum(lat) / len(lat), 3), "service_ms": round(busy * 1e3 / len(lat), 3),
            "busy": round(busy / window, 4), "lat_ms": [round(v, 2) for v in lat],
            "t_start": t_start, "t_end": time.time()}


def train(args, step, sync):
    """Trains --iters steps. Under mmkd it keeps mmk's checkpoint
    contract: on SIGTERM (a reconfiguration moves it) it saves the steps
    done to $MMK_CHECKPOINT_DIR and exits; started again, it resumes."""
    ckpt = os.path.join(os.environ["MMK_CHECKPOINT_DIR"], "e2e.json") if os.environ.get("MMK_CHECKPOINT_DIR") else ""
    done = 0
    if ckpt and os.path.exists(ckpt):
        done = json.load(open(ckpt))["done"]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    for _ in range(5):
        step()
    sync()
    t_start = time.time()
    first = done
    while done < args.iters:
        step()
        done += 1
        if done % 10 == 0:
            sync()
        if stop:
            sync()
            if ckpt:
                with open(ckpt + ".tmp", "w") as f:
                    json.dump({"done": done}, f)
                os.replace(ckpt + ".tmp", ckpt)
            print(json.dumps({"role": "offline", "checkpoint": done}), flush=True)
            sys.exit(0)
    sync()
    t_end = time.time()
    return {"role": "offline", "iters": args.iters, "resumed_at": first, "wall_s": round(t_end - t_start, 3),
            "it_per_s": round((args.iters - first) / max(t_end - t_start, 1e-9), 3), "t_start": t_start, "t_end": t_end}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["serve", "train"])
    ap.add_argument("--job", required=True)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--think-ms", type=float, default=2)
    ap.add_argument("--rate", type=float, default=0, help="open loop: Poisson requests a second (0: closed loop)")
    ap.add_argument("--seed", type=int, default=1, help="the open loop's arrivals")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    if args.rate < 0 or (args.rate > 0 and args.mode != "serve"):
        ap.error(f"--rate {args.rate}: a rate > 0 is for serve only (0: closed loop)")
    t_launch = time.time()
    if args.dry:
        # The shape of the real thing, with sleeps for GPU work.
        step = lambda: time.sleep(0.003 if args.mode == "serve" else 0.01)
        sync = lambda: None
        batch = args.batch or 1
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "workloads"))
        import torch
        import workload

        model_name, mode, default_batch = workload.JOBS[args.job]
        batch = args.batch or default_batch
        torch.backends.cudnn.benchmark = False
        torch.set_num_threads(2)
        model, make, loss_fn = workload.build(model_name, batch)
        step = workload.make_step(model, make, loss_fn, mode)
        sync = torch.cuda.synchronize
    if args.mode == "train":
        out = train(args, step, sync)
    elif args.rate > 0:
        out = serve_open(args, step, sync)
    else:
        out = serve(args, step, sync)
    out.update({"job": args.job, "batch": batch, "t_launch": t_launch, "dry": args.dry,
                "mmk_job": os.environ.get("MMK_JOB_ID", ""), "mps_pct": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", ""),
                "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", "")})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
