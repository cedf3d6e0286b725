#!/usr/bin/env python3
"""slo_recording.py: a round of the SLO benchmark as a replay recording
for the slo package's tests (slo/testdata/b32-phases-*.json).

    python3 bench/gpu/slo_recording.py OUTDIR ROUND SERVICE > recording.json

From OUTDIR/windows.jsonl and OUTDIR/records-rROUND-mps.json.gz: the
service's request latencies (ms, by arrival in each window) per static
setting and load phase, its rates, and the trainers' speed against alone
per setting and phase. The services alone ("alone SERVICE") stand for the
top rung (key "together", trainers at 0). For the queue model of the
replay (slo/queue_replay_test.go) also each request's service time (ms,
its start to its end: the service serves one request at a time, first
come first served) and its arrival (s after the window began), in the
same order ("service", "arrivals").
"""
import gzip
import json
import os
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: slo_recording.py OUTDIR ROUND SERVICE")
    out, rnd, svc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with gzip.open(os.path.join(out, "records-r%d-mps.json.gz" % rnd), "rt") as f:
        records = json.load(f)
    if svc not in records:
        sys.exit("slo_recording.py: no service %r in round %d (have %s)" % (svc, rnd, ", ".join(sorted(records))))
    windows = [json.loads(line) for line in open(os.path.join(out, "windows.jsonl"))]
    windows = [w for w in windows if w["round"] == rnd and w["segment"] == "mps"]
    alone = {}
    for w in windows:
        for name, t in w.get("trainers", {}).items():
            if w["setting"].startswith("alone "):
                alone[name] = t["it_s"]
    rec = {"rates": {}, "latency": {}, "trainers": {}, "service": {}, "arrivals": {}}
    for w in windows:
        setting = w["setting"]
        if setting.startswith("alone "):
            if setting != "alone " + svc:
                continue
            setting = "together"
        reqs = [r for r in records[svc]["requests"] if w["m0"] <= r[0] <= w["m1"]]
        if not reqs:
            continue
        lat = [round((e - a) * 1e3, 3) for a, _, e in reqs]
        phases = [w["phase"]] + (["low-again"] if setting == "together" and w["phase"] == "low" else [])
        for phase in phases:
            rec["latency"].setdefault(setting, {})[phase] = lat
            rec["service"].setdefault(setting, {})[phase] = [round((e - st) * 1e3, 3) for _, st, e in reqs]
            rec["arrivals"].setdefault(setting, {})[phase] = [round(a - w["m0"], 6) for a, _, _ in reqs]
            rate = (w.get("rates") or {}).get(svc)
            if rate and setting != "together":
                rec["rates"][phase] = rate
            speeds = [t["it_s"] / alone[_base(n)] for n, t in w.get("trainers", {}).items() if alone.get(_base(n))]
            rec["trainers"].setdefault(setting, {})[phase] = round(sum(speeds) / len(speeds), 4) if speeds else 0.0
    json.dump(rec, sys.stdout)
    sys.stdout.write("\n")


def _base(name):
    """A trainer's name without its setting's suffix (-70, -50, -m)."""
    for suf in ("-70", "-50", "-m"):
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


if __name__ == "__main__":
    main()
