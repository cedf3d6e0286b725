"""A service of the SLO benchmark (bench/gpu/slo.py), driven over stdin.

  python3 slo_worker.py --model resnet50 --batch 32 --seed 1 [--report]

An open-loop service: requests arrive Poisson at the rate in force
(command "rate R", requests a second) and are served first come, first
served, one at a time (forward, synchronize). A request's latency runs
from its arrival to its end, its wait in the queue included. The process
lives through every setting of the benchmark; commands, one per line:

  go        move to the GPU and warm up; then {"event": "ready"} (paused)
  run       serve; arrivals start now at the rate in force
  pause     stop taking arrivals, finish the queue, synchronize
  rate R [S] the arrival rate from now on (0: none); with S (a word),
            the gaps from now on are drawn from the stream S of --seed
  hook 0|1  turn the mmk hook's callbacks off or on (between requests)
  lat T0 T1 the latencies (ms) of the requests that arrived between T0
            and T1 (time.monotonic()), as {"event": "lat", "ms": [...]}
  quit      print the records and exit

With --report every request is also reported to mmk through the hook
(mmk_report_request: arrival to end, CLOCK_MONOTONIC), so that mmk judges
the service's target by what it really saw. Records: per request its
arrival, start and end (time.monotonic(), seconds). The arrivals are
drawn from --seed; a rate command that names a stream (slo.py names the
load phase and the round) restarts the gaps from that stream, timed from
the command, so every setting of a round sees the same arrivals in the
same phase and settings compare on the same bursts. --fake sleeps
instead of using the GPU (a dry run of the driver).
"""
import argparse
import collections
import ctypes
import gc
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pareto_worker  # noqa: E402
from pareto_worker import Hook, build, out, step_fn  # noqa: E402


class Control(pareto_worker.Control):
    """pareto_worker's commands, and the rate, the latencies asked for, and
    an epoch that each run, pause or rate change bumps."""

    def __init__(self):
        self.rate = 0.0
        self.stream = None  # the stream the last rate command named
        self.streams = 0  # bumped at each rate command that names one
        self.epoch = 0  # bumped at each run, rate change or pause
        self.epoch_at = 0.0  # when it was last bumped (time.monotonic())
        self.records = []  # the serving loop's, appended as requests end
        super().__init__()

    def command(self, cmd):
        if cmd[0] in ("run", "pause"):
            self.epoch += 1
            self.epoch_at = time.monotonic()
        if cmd[0] == "rate" and len(cmd) in (2, 3):
            try:
                self.rate = max(float(cmd[1]), 0.0)
                if len(cmd) == 3:
                    self.stream = cmd[2]
                    self.streams += 1
                self.epoch += 1
                self.epoch_at = time.monotonic()
            except ValueError:
                out({"event": "error", "error": "rate %r is not a number" % cmd[1]})
            return True
        if cmd[0] == "lat" and len(cmd) == 3:
            t0, t1 = float(cmd[1]), float(cmd[2])
            out({"event": "lat", "ms": [round((e - a) * 1e3, 3) for a, _, e in list(self.records) if t0 <= a <= t1]})
            return True
        return super().command(cmd)


def serve(args, ctl, hook, work, sync):
    """The serving loop: arrivals drawn at the rate in force, FCFS."""
    rng = random.Random(args.seed)
    report = None
    if args.report and hook.lib is not None:
        report = hook.lib.mmk_report_request
        report.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
        report.restype = ctypes.c_int
    records, queue = ctl.records, collections.deque()
    epoch, streams, next_arrival, reported = -1, 0, None, 0
    while True:
        with ctl.cv:
            if ctl.quit:
                break
            if ctl.epoch != epoch:
                epoch = ctl.epoch
                if ctl.streams != streams:
                    streams = ctl.streams
                    rng = random.Random("%d/%s" % (args.seed, ctl.stream))
                # A new run, rate or pause: the next arrival is drawn anew
                # from when the command came (the queue, if any, is still
                # served), not from when this loop, busy with a request,
                # saw it: a phase's arrivals start at its command under
                # every setting.
                next_arrival = None
                if ctl.running and ctl.rate > 0:
                    next_arrival = ctl.epoch_at + rng.expovariate(ctl.rate)
            running, rate = ctl.running, ctl.rate
            h, ctl.hook = ctl.hook, None
        if h is not None:
            sync()
            hook.set(h)
        now = time.monotonic()
        while next_arrival is not None and next_arrival <= now:
            queue.append(next_arrival)
            next_arrival += rng.expovariate(rate)
        if not queue:
            if not running:
                with ctl.cv:
                    ctl.cv.wait_for(lambda: ctl.epoch != epoch or ctl.quit or ctl.hook is not None)
                continue
            wait = (next_arrival - now) if next_arrival is not None else 0.05
            # On the condition, not time.sleep: a command (a phase's rate)
            # wakes the loop at once. Asleep through it, a phase whose
            # first arrival came within the sleep started it up to 50 ms
            # late under every setting (rounds 42 and 43: one late request
            # at each phase's start, 22-24 ms waited with the GPU idle).
            with ctl.cv:
                ctl.cv.wait_for(lambda: ctl.epoch != epoch or ctl.quit or ctl.hook is not None, timeout=min(max(wait, 0), 0.05))
            continue
        arrival = queue.popleft()
        start = time.monotonic()
        work()
        sync()
        end = time.monotonic()
        records.append((round(arrival, 6), round(start, 6), round(end, 6)))
        if report is not None and report(int(arrival * 1e9), int(end * 1e9)) == 0:
            reported += 1
    return records, reported


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--report", action="store_true", help="report every request to mmk (mmk_report_request)")
    ap.add_argument("--fake", action="store_true", help="no torch: a request sleeps 4 ms")
    args = ap.parse_args()
    ctl, hook = Control(), Hook()
    if not args.fake:
        import torch

        torch.backends.cudnn.benchmark = False
        torch.set_num_threads(1)
        model, make = build(argparse.Namespace(model=args.model, batch=args.batch))
    out({"event": "loaded"})
    with ctl.cv:
        ctl.cv.wait_for(lambda: ctl.go or ctl.quit)
    if args.fake:
        work, sync = (lambda: time.sleep(0.004)), (lambda: None)
    else:
        model = model.cuda()
        work = step_fn(model, make(), False, args.batch)
        sync = torch.cuda.synchronize
        for _ in range(args.warmup):
            work()
            sync()
    # A full collection walks every object torch made (some 60 ms on the
    # H100 host: 1 % of a 100/s service's requests late, alone too); a
    # serving process freezes them after warm-up, as production Python
    # servers do, so that p99 measures the GPU, not the collector.
    gc.collect()
    gc.freeze()
    out({"event": "ready"})
    records, reported = serve(args, ctl, hook, work, sync)
    out({"event": "records", "role": "svc", "model": args.model, "batch": args.batch, "requests": records,
         "reported": reported, "hook": hook.stats(), "pid": os.getpid()})


if __name__ == "__main__":
    main()
