#!/usr/bin/env python3
"""slo_queue.py: how much of a round's share in time is the luck of its
arrivals, by the queue model (docs/slo.md, "Replay through a queue model").

    python3 bench/gpu/slo_queue.py OUTDIR ROUND SERVICE BOUND_MS [PHASE]

For each window of the round (each setting and load phase; PHASE: only
that one) it serves the service's requests first come, first served, one
at a time, as slo_worker.py does, with service times drawn again (with
replacement) from the window's own (start to end), DRAWS times:

- on the window's recorded arrivals: what the order of the service times
  alone moves;
- on fresh Poisson arrivals at the window's rate, as long as the window:
  what the arrivals move besides.

It prints the GPU's share of requests within BOUND_MS and the model's
median, middle 90 % and range for both. Seeded: the same numbers each run.
"""
import gzip
import json
import os
import random
import sys

DRAWS = 400


def served(arrivals, services):
    """Latencies (ms) of requests arriving at arrivals (ms), served in turn."""
    free, lat = 0.0, []
    for a, s in zip(arrivals, services):
        free = max(free, a) + s
        lat.append(free - a)
    return lat


def share(lat, bound):
    return sum(1 for x in lat if x <= bound) / len(lat) if lat else 1.0


def band(xs):
    """The median, the middle 90 % and the range of xs."""
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2], xs[n * 5 // 100], xs[n * 95 // 100 - 1], xs[0], xs[-1]


def on_recorded(reqs, bound, rng, draws=DRAWS):
    """The shares within bound (ms) of requests (arrival, start, end; s)
    served again on their recorded arrivals, service times drawn again
    from their own, draws times."""
    arr = [a * 1e3 for a, _, _ in reqs]
    svc_ms = [(e - s) * 1e3 for _, s, e in reqs]
    return [share(served(arr, rng.choices(svc_ms, k=len(arr))), bound) for _ in range(draws)]


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: slo_queue.py OUTDIR ROUND SERVICE BOUND_MS [PHASE]")
    out, rnd, svc, bound = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    only = sys.argv[5] if len(sys.argv) == 6 else None
    with gzip.open(os.path.join(out, "records-r%d-mps.json.gz" % rnd), "rt") as f:
        records = json.load(f)
    if svc not in records:
        sys.exit("slo_queue.py: no service %r in round %d (have %s)" % (svc, rnd, ", ".join(sorted(records))))
    windows = [json.loads(line) for line in open(os.path.join(out, "windows.jsonl"))]
    windows = [w for w in windows if w["round"] == rnd and w["segment"] == "mps" and svc in (w.get("rates") or {})]
    print("| setting | phase | requests | GPU | recorded arrivals: median [middle 90 %] (range) | Poisson arrivals: median [middle 90 %] (range) |")
    print("|---|---|---|---|---|---|")
    for w in windows:
        if only and w["phase"] != only:
            continue
        reqs = [r for r in records[svc]["requests"] if w["m0"] <= r[0] <= w["m1"]]
        if len(reqs) < 20:
            continue
        rng = random.Random("%d/%s/%s" % (rnd, w["setting"], w["phase"]))
        svc_ms = [(e - s) * 1e3 for _, s, e in reqs]
        gpu = share([(e - a) * 1e3 for a, _, e in reqs], bound)
        rec = on_recorded(reqs, bound, rng)
        rate, span = w["rates"][svc] / 1e3, (w["m1"] - w["m0"]) * 1e3
        fresh = []
        for _ in range(DRAWS):
            a, t = [], rng.expovariate(rate)
            while t < span:
                a.append(t)
                t += rng.expovariate(rate)
            fresh.append(share(served(a, rng.choices(svc_ms, k=len(a))), bound))
        cell = lambda b: "%.1f %% [%.1f-%.1f %%] (%.1f-%.1f %%)" % tuple(100 * x for x in b)
        print("| %s | %s | %d | %.1f %% | %s | %s |" % (w["setting"], w["phase"], len(reqs), 100 * gpu, cell(band(rec)), cell(band(fresh))))


if __name__ == "__main__":
    main()
