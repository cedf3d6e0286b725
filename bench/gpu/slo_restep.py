#!/usr/bin/env python3
"""slo_restep.py: the SLO benchmark's trainer speeds measured again from a
round's own records, by pareto.step_rate (steps a second over the whole
window), where slo.py measured them before over the span from a
trainer's first step in the window to its last: a trainer the
controller suspended for part of a window read as if it had run all of
it.

  python3 bench/gpu/slo_restep.py DIR [DIR...]            # what changes
  python3 bench/gpu/slo_restep.py --write DIR [DIR...]    # and rewrite

DIR holds a round's windows.jsonl and its records-rR-SEGMENT.json.gz.
It prints each window whose trainer speed moves by more than 2 %; with
--write it rewrites windows.jsonl (the old one kept as
windows-span.jsonl) and makes report.md again (slo_report.py).
"""
import argparse
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pareto import trainer_window  # noqa: E402
from slo_report import controllers, round_stats, verdict  # noqa: E402

PHASES = ["low", "medium", "high", "low-again"]


def whole_run(windows):
    """Per round and controller: its trainers over the run against the
    strongest simple alternative's (slo_report.verdict), and which."""
    out = {}
    for r in sorted({w.get("round") for w in windows}):
        st = round_stats([w for w in windows if w.get("round") == r])
        phases = [p for p in PHASES if any(k[1] == p for k in st)]
        for c in controllers({k[0] for k in st}):
            v = verdict(st, phases, c)
            if v.get("mmk_over_best") is not None:
                out[(r, c)] = (v["mmk_over_best"], v["best"])
    return out


def restep(d, write):
    path = os.path.join(d, "windows.jsonl")
    windows = [json.loads(line) for line in open(path)]
    before = whole_run(windows)
    records = {}
    for f in glob.glob(os.path.join(d, "records-r*-*.json.gz")):
        m = re.match(r"records-r(\d+)-(.+)\.json\.gz$", os.path.basename(f))
        with gzip.open(f, "rt") as fh:
            records[(int(m.group(1)), m.group(2))] = json.load(fh)
    changed = 0
    for w in windows:
        rec = records.get((w.get("round"), w.get("segment")))
        if not rec or not w.get("trainers"):
            continue
        for n, old in list(w["trainers"].items()):
            r = rec.get(n)
            if not r:
                continue
            new = trainer_window(r.get("steps", []), w["t0"], w["t1"])
            a, b = old.get("it_s") or 0, new["it_s"]
            if abs(b - a) > 0.02 * max(a, b, 1e-9):
                changed += 1
                print("%s: round %s %s %s %s: %.3f -> %.3f it/s" % (d, w.get("round"), w["setting"], w["phase"], n, a, b))
            w["trainers"][n] = new
    for k, (a, best) in sorted(before.items()):
        b = whole_run(windows).get(k, (None,))[0]
        if b is not None and abs(b - a) > 0.005:
            print("%s: round %s, %s's trainers over the run against %s's: %.2fx -> %.2fx" % (d, k[0], k[1], best, a, b))
    if write:
        shutil.copyfile(path, os.path.join(d, "windows-span.jsonl"))
        with open(path, "w") as f:
            for w in windows:
                f.write(json.dumps(w) + "\n")
        subprocess.run([sys.executable, os.path.join(HERE, "slo_report.py"), d], check=True, stdout=subprocess.DEVNULL)
    return changed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    total = sum(restep(d, a.write) for d in a.dirs)
    print("slo_restep: %d trainer windows moved by more than 2 %%" % total)


if __name__ == "__main__":
    main()
