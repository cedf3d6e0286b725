"""The summary of a tpcmask.py run: python3 tpcmask_report.py OUT.

Per setting, medians over the cycles with their range: the trainer's speed
(it/s, and against its speed alone in the same cycle and segment), the
request loop's p50 and p99 against alone in the same cycle; and the hook's
measure of each window's requests (OUT/requests.jsonl) against the loop's
own: the p50 and p99 error. Writes OUT/summary.md and prints it.
"""
import json
import os
import statistics
import sys


def pick(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v))) - 1))] if v else None


def med(v):
    v = [x for x in v if x is not None]
    if not v:
        return "-"
    m = statistics.median(v)
    return "%.3g [%.3g-%.3g]" % (m, min(v), max(v)) if len(v) > 1 else "%.3g" % m


def main(out):
    wins = [json.loads(l) for l in open(os.path.join(out, "windows.jsonl")) if l.strip()]
    reqs = []
    rp = os.path.join(out, "requests.jsonl")
    if os.path.exists(rp):
        reqs = [json.loads(l) for l in open(rp) if l.strip()]
    lines = ["# TPC masks against MPS shares, and the hook's measure of requests", ""]
    by = {}
    for w in wins:
        by.setdefault((w["segment"], w["setting"]), []).append(w)
    # Per cycle references: trainer alone and loop alone, per segment.
    lp_alone, hp_alone = {}, {}
    for w in wins:
        if w.get("lp_stats") and (w["setting"].startswith("LP alone (") or w["setting"].endswith("TPCs full")):
            lp_alone[(w["segment"], w["cycle"])] = w["lp_stats"]["it_s"]
        if w.get("hp_stats") and w["setting"].startswith("alone"):
            hp_alone[(w["segment"], w["cycle"])] = w["hp_stats"]
    lines += ["| segment | setting | trainer it/s | trainer / alone | loop p50 ms | p50 / alone | loop p99 ms | p99 / alone | hook p50 err | hook p99 err |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    errs50, errs99 = [], []
    for (seg, name), ws in by.items():
        it = [w["lp_stats"]["it_s"] for w in ws if w.get("lp_stats")]
        rel = [w["lp_stats"]["it_s"] / lp_alone[(seg, w["cycle"])] for w in ws if w.get("lp_stats") and lp_alone.get((seg, w["cycle"]))]
        p50 = [w["hp_stats"]["p50_ms"] for w in ws if w.get("hp_stats")]
        p99 = [w["hp_stats"]["p99_ms"] for w in ws if w.get("hp_stats")]
        r50 = [w["hp_stats"]["p50_ms"] / hp_alone[(seg, w["cycle"])]["p50_ms"] for w in ws if w.get("hp_stats") and hp_alone.get((seg, w["cycle"]))]
        r99 = [w["hp_stats"]["p99_ms"] / hp_alone[(seg, w["cycle"])]["p99_ms"] for w in ws if w.get("hp_stats") and hp_alone.get((seg, w["cycle"]))]
        e50, e99 = [], []
        for w in ws:
            if not w.get("hp_stats") or "m0" not in w:
                continue
            hook = [r["lat_ns"] / 1e6 for r in reqs if r["src"] == "hook" and r["name"].endswith("-hp") and w["m0"] <= r["end_ns"] <= w["m1"]]
            if len(hook) >= 20:
                e50.append(pick(hook, 0.5) / w["hp_stats"]["p50_ms"] - 1)
                e99.append(pick(hook, 0.99) / w["hp_stats"]["p99_ms"] - 1)
        errs50 += e50
        errs99 += e99
        pct = lambda v: med([100 * x for x in v]) + " %" if v else "-"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (seg, name, med(it), med(rel), med(p50), med(r50), med(p99), med(r99), pct(e50), pct(e99)))
    lines += [""]
    if errs50:
        a50 = sorted(abs(x) for x in errs50)
        a99 = sorted(abs(x) for x in errs99)
        lines.append("The hook's measure against the loop's own, %d windows: |p50 error| median %.1f %%, max %.1f %%; |p99 error| median %.1f %%, max %.1f %% (goal: 10 %%)." % (
            len(a50), 100 * statistics.median(a50), 100 * a50[-1], 100 * statistics.median(a99), 100 * a99[-1]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1])
