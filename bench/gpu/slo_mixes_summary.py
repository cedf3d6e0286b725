#!/usr/bin/env python3
"""slo_mixes_summary.py: the SLO benchmark's rounds of several mixes
(bench/gpu/slo-mixes.sh), one markdown table per mix, medians over the
mix's rounds of one build.

  python3 bench/gpu/slo_mixes_summary.py three=DIR/slo-r80,DIR/slo-r81 vgg19=DIR/slo-r86 ...

Per setting: the trainers' speed over the run (the mean of the phases'
speed against each trainer alone), the lowest attainment over the
phases and services, the phases in which every service kept 99 % or
more of its requests in time, and the rounds in which it held every
phase; each as the median over the rounds and its range. It reads each
round's windows.jsonl with slo_report.py's own functions.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slo_report import HELD, is_controller, load, round_stats, spread  # noqa: E402

PHASES = ["low", "medium", "high", "low-again"]


def mix_table(name, dirs):
    per = {}  # setting -> list of per-round dicts
    rungs = {}  # controller -> rung -> steps
    for d in dirs:
        wins, tl = load(d)
        st = round_stats(wins)
        settings = sorted({k[0] for k in st})
        best = {p: max((st[(s, p)]["attain"] for s in settings if not is_controller(s) and (s, p) in st), default=None) for p in PHASES}
        for s in settings:
            ph = [st[(s, p)] for p in PHASES if (s, p) in st]
            if len(ph) != len(PHASES):
                continue
            per.setdefault(s, []).append({
                "train": statistics.fmean(m["train"] for m in ph),
                "worst": min(m["attain"] for m in ph),
                "held": sum(m["attain"] >= HELD for m in ph),
                "below": sum(best[p] is not None and st[(s, p)]["attain"] < best[p] - 0.01 for p in PHASES),
            })
        for t in tl:
            r = rungs.setdefault(t["setting"], {})
            r[t["rung"]] = r.get(t["rung"], 0) + 1
    lines = ["Mix %s, %d rounds (%s)" % (name, len(dirs), ", ".join(os.path.basename(d.rstrip("/")) for d in dirs)), "",
             "| setting | trainers over the run, of alone | lowest attainment in a phase | phases held (of %d) | rounds holding every phase | phases more than 1 point below the best static setting's attainment |" % len(PHASES),
             "| --- | --- | --- | --- | --- | --- |"]
    for s in sorted(per, key=lambda s: (is_controller(s), s)):
        rs = per[s]
        lines.append("| %s | %s | %s | %s | %d of %d | %d |" % (
            "**%s**" % s if is_controller(s) else s, spread([r["train"] for r in rs]),
            spread([100 * r["worst"] for r in rs], "%.1f %%"), spread([r["held"] for r in rs], "%d"),
            sum(r["held"] == len(PHASES) for r in rs), len(rs), sum(r["below"] for r in rs)))
    for c, r in sorted(rungs.items()):
        n = sum(r.values())
        lines += ["", "%s's rung over its steps (all rounds): %s." % (c, ", ".join("%s %.0f %%" % (k, 100 * v / n) for k, v in sorted(r.items(), key=lambda kv: -kv[1])))]
    return lines + [""]


def main(args):
    if not args:
        sys.exit(__doc__)
    out = []
    for a in args:
        name, _, dirs = a.partition("=")
        if not name or not dirs:
            sys.exit("%r: want MIX=DIR[,DIR...]" % a)
        out += mix_table(name, dirs.split(","))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
