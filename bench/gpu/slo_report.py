"""The report of bench/gpu/slo.py runs: python3 slo_report.py OUT.

Reads OUT/windows.jsonl (every round appended) and OUT/slo.jsonl, writes
OUT/report.md and one plot per round (OUT/round-R.svg), and prints the
report. Per round and load phase: each service's SLO attainment (requests
within its target), p50 and p99 against alone at the same rate (measured
in the same round), the trainers' throughput against alone (mean over
trainers), and STP (trainers' normalised throughput plus the services'
share of requests served). Then the issue's questions: which static
setting holds every target in every phase (the one a user would have to
pick without knowing the load), mmk's trainer throughput against it over
the whole run and against the best static setting of each phase, and the
batch-1 service's p50 under mmk. Across rounds: medians [min-max].

The strongest simple alternative is a setting a user makes by hand
(STATIC: priority, MPS shares, hold, time slicing). A fixed TPC mask
(mask=F) is mmk's mechanism without its controller, which no user sets by
hand: it is reported beside, not chosen as the alternative.
"""
import gzip
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slo_queue  # noqa: E402

STATIC = ["prio", "prio+70%", "prio+50%", "hold", "time slicing"]


def statics(settings):
    """The static settings among settings: STATIC's, then the fixed masks
    (mask=F: mmk's mechanism without its controller) from the largest share."""
    masks = sorted((s for s in settings if s.startswith("mask=")), key=lambda s: -float(s[5:]))
    return [s for s in STATIC if s in settings] + masks


HELD = 0.99


def load(out):
    wins = [json.loads(l) for l in open(os.path.join(out, "windows.jsonl")) if l.strip()]
    tl = []
    p = os.path.join(out, "slo.jsonl")
    if os.path.exists(p):
        tl = [json.loads(l) for l in open(p) if l.strip()]
    return wins, tl


def base(trainer):
    """A trainer process's base name: vgg19-train-70 -> vgg19-train."""
    for suffix in ("-ts", "-70", "-50", "-m"):
        if trainer.endswith(suffix):
            trainer = trainer[: -len(suffix)]
    return trainer


def rate_label(phase):
    return "low" if phase.startswith("low") else phase


def round_stats(ws):
    """Per (setting, phase) of one round: the metrics."""
    alone_svc, alone_lp = {}, {}
    for w in ws:
        if w["setting"].startswith("alone "):
            for n, s in w.get("services", {}).items():
                alone_svc[(n, w["phase"])] = s
            for n, t in w.get("trainers", {}).items():
                alone_lp[n] = t["it_s"]
    out = {}
    for w in ws:
        if w["setting"].startswith("alone "):
            continue
        m = {"services": {}, "trainers": {}}
        for n, s in w.get("services", {}).items():
            a = alone_svc.get((n, rate_label(w["phase"])))
            m["services"][n] = {"attain": 1 - s["late"] / s["n"] if s["n"] else 1, "n": s["n"], "late": s["late"],
                                "p50": s["p50_ms"], "p99": s["p99_ms"], "p50x": s["p50_ms"] / a["p50_ms"] if a else None,
                                "p99x": s["p99_ms"] / a["p99_ms"] if a else None}
        for n, t in w.get("trainers", {}).items():
            a = alone_lp.get(base(n))
            m["trainers"][n] = t["it_s"] / a if a else None
        tr = [v for v in m["trainers"].values() if v is not None]
        m["train"] = statistics.fmean(tr) if tr else 0.0
        m["stp"] = sum(tr) + len(m["services"])
        m["attain"] = min((s["attain"] for s in m["services"].values()), default=1)
        out[(w["setting"], w["phase"])] = m
    return out


def is_controller(setting):
    """Whether a setting runs mmk's controller: mmk, or mmk-aim=F (the
    controller aiming at another share of the budget)."""
    return setting == "mmk" or setting.startswith("mmk-aim=")


def controllers(settings):
    """The controller settings among settings, mmk first."""
    return sorted((s for s in set(settings) if is_controller(s)), key=lambda s: (s != "mmk", s))


def verdict(st, phases, ctl="mmk"):
    """The issue's comparisons for one round, of the controller setting ctl."""
    v = {"phases": phases}
    settings = sorted({s for s, _ in st})
    whole = {s: statistics.fmean(st[(s, p)]["train"] for p in phases) for s in settings if all((s, p) in st for p in phases)}
    holds = {s: all(st[(s, p)]["attain"] >= HELD for p in phases) for s in whole}
    static = [s for s in statics(settings) if not s.startswith("mask=")]
    static_ok = [s for s in static if holds.get(s)]
    masks = [s for s in statics(settings) if s.startswith("mask=")]
    v["masks"] = {s: holds.get(s) for s in masks if s in whole}
    v["whole"] = whole
    v["holds"] = holds
    if ctl in whole:
        if static_ok:
            best = max(static_ok, key=lambda s: whole[s])
            v["best"], v["best_static"] = best, best
            v["mmk_over_best"] = whole[ctl] / whole[best] if whole[best] > 0 else None
        else:
            att = {s: min(st[(s, p)]["attain"] for p in phases) for s in static if s in whole}
            if att:
                best = max(att, key=lambda s: (att[s], whole[s]))
                v["best"], v["best_static"] = best, best + " (highest attainment; no by-hand setting holds every phase)"
                v["mmk_over_best"] = whole[ctl] / whole[best] if whole[best] > 0 else None
                # The other half of this case: mmk's attainment at
                # least that setting's (each in its worst phase).
                v["worst_attain"] = (min(st[(ctl, p)]["attain"] for p in phases), att[best])
        def fastest_held(cands, p):
            """The setting of cands with the fastest trainers that held
            phase p (None: none held it)."""
            ok = [s for s in cands if (s, p) in st and st[(s, p)]["attain"] >= HELD]
            return max(ok, key=lambda s: st[(s, p)]["train"], default=None)

        per = {}
        for p in phases:
            mm = st.get((ctl, p))
            if not mm:
                continue
            row = {"mmk_attain": mm["attain"], "mmk_train": mm["train"]}
            b = fastest_held(static, p)
            if b:
                row.update(best=b, best_train=st[(b, p)]["train"], ratio=mm["train"] / st[(b, p)]["train"] if st[(b, p)]["train"] else None,
                           held=mm["attain"] >= HELD)
            b = fastest_held(masks, p)
            if b:
                row.update(best_mask=b, best_mask_train=st[(b, p)]["train"])
            per[p] = row
        v["per_phase"] = per
        b1 = [st[(ctl, p)]["services"].get("svc-b1", {}).get("p50x") for p in phases if (ctl, p) in st]
        v["b1_p50x"] = [x for x in b1 if x is not None]
    return v


def summary(per_round, rounds, ctl="mmk"):
    """The issue's questions across rounds for the controller setting ctl:
    medians [min-max] of each round's answer, each round against its own
    strongest by-hand setting."""
    vs = [per_round[r][1][ctl] for r in rounds if ctl in per_round[r][1] and ctl in per_round[r][1][ctl]["whole"]]
    if not vs:
        return []
    lines = ["## The issue's questions across %d rounds, %s (medians [min-max])" % (len(vs), ctl), ""]
    best = [v.get("best_static", "-") for v in vs]
    lines.append("- The strongest simple alternative per round: %s." % ", ".join(best))
    lines.append("- Whole run, %s's trainers against it: %sx (goal 1.15x); rounds in which %s held every phase: %d of %d." % (
        ctl, spread([v.get("mmk_over_best") for v in vs]), ctl, sum(1 for v in vs if v["holds"].get(ctl)), len(vs)))
    for p in vs[0]["phases"]:
        rows = [v.get("per_phase", {}).get(p) for v in vs]
        rows = [r for r in rows if r]
        held = [r for r in rows if "best" in r]
        lines.append("- %s: %s's attainment %s (goal 99 %% where a by-hand setting held: %d of %d rounds, held in %d); trainers against the phase's best by-hand setting %sx (goal 0.9x)." % (
            p, ctl, spread([100 * r["mmk_attain"] for r in rows], "%.1f%%"), len(held), len(rows), sum(1 for r in held if r["held"]),
            spread([r.get("ratio") for r in held])))
    b1 = list(zip(*[v["b1_p50x"] for v in vs if v.get("b1_p50x")]))
    if b1:
        lines.append("- batch-1 service under %s, p50 against alone per phase: %s (goal at most 1.10x)." % (ctl, ", ".join(spread(list(x)) for x in b1)))
    lines.append("")
    return lines


def fmt(x, f="%.2f"):
    return "-" if x is None else f % x


def spread(v, f="%.2f"):
    v = [x for x in v if x is not None]
    if not v:
        return "-"
    if len(v) == 1:
        return f % v[0]
    return (f + " [" + f + "-" + f + "]") % (statistics.median(v), min(v), max(v))


def svg(path, rnd, st, phases, tl):
    """Per setting and phase: the trainers' throughput (bar) and the lowest
    attainment (dot); below, mmk's rung over time."""
    present = {s for s, _ in st}
    masks = [s for s in statics(present) if s.startswith("mask=")]
    ctls = controllers(present)
    settings = [s for s in ["together", "prio", "prio+70%", "prio+50%", "hold"] + masks + ctls + ["mmk-off", "time slicing"] if any((s, p) in st for p in phases)]
    W, H, left, top = 880, 360, 60, 30
    cw = (W - left - 20) / max(len(settings), 1)
    bw = cw / (len(phases) + 1)
    g = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H + 170),
         '<text x="%d" y="16" font-size="13">SLO benchmark, round %d: trainers\' throughput against alone (bars, left), lowest SLO attainment (dots, right; 99 %% dashed)</text>' % (left, rnd)]
    y = lambda v: top + (1 - v) * (H - top - 40)
    # Attainment on its own scale, 90 to 100 %, below 90 % at the bottom.
    ya = lambda a: y(min(max((a - 0.9) / 0.1, 0), 1))
    g.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c00" stroke-dasharray="4"/>' % (left, ya(HELD), W - 20, ya(HELD)))
    for k in (0, 0.5, 1):
        g.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 4, y(k) + 4, k))
    for a in (0.9, 0.95, 1.0):
        g.append('<text x="%d" y="%.1f" font-size="9">%d %%</text>' % (W - 26, ya(a) + 3, round(100 * a)))
    colors = ["#4c78a8", "#f58518", "#54a24b", "#b279a2"]
    for i, s in enumerate(settings):
        x0 = left + i * cw
        g.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x0 + cw / 2, H - 10, s))
        for j, p in enumerate(phases):
            m = st.get((s, p))
            if not m:
                continue
            x = x0 + (j + 0.5) * bw
            t = min(m["train"], 1.2)
            g.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: trainers %.2f, attainment %.3f</title></rect>' % (
                x, y(t), bw * 0.8, y(0) - y(t), colors[j % 4], s, p, m["train"], m["attain"]))
            g.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="#000"><title>lowest attainment %.1f %%</title></circle>' % (x + bw * 0.4, ya(m["attain"]), 100 * m["attain"]))
    for j, p in enumerate(phases):
        g.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>' % (left + j * 110, H + 2, colors[j % 4], left + j * 110 + 14, H + 11, p))
    pts = [t for t in tl if t.get("round") == rnd and t.get("level") is not None]
    if pts:
        # Each controller setting's rung, one run after the other (lines
        # written before settings were named are mmk's).
        t0, t1 = pts[0]["t"], pts[-1]["t"]
        top2, h2 = H + 40, 100
        levels = max(t["level"] for t in pts) + 1
        names = ", ".join(ctls) or "mmk"
        g.append('<text x="%d" y="%d" font-size="13">%s: the controller\'s rung over the run (0: priority alone)</text>' % (left, top2 - 8, names))
        xs = lambda t: left + (t - t0) / max(t1 - t0, 1e-9) * (W - left - 20)
        ys = lambda l: top2 + h2 - l / max(levels - 1, 1) * h2
        for k, c in enumerate(ctls or ["mmk"]):
            run = [t for t in pts if t.get("setting", "mmk") == c]
            if not run:
                continue
            path_d = " ".join(("M" if i == 0 else "L") + "%.1f %.1f" % (xs(t["t"]), ys(t["level"])) for i, t in enumerate(run))
            color = ["#333", "#c00", "#06c"][k % 3]
            g.append('<path d="%s" fill="none" stroke="%s" stroke-width="1.5"><title>%s</title></path>' % (path_d, color, c))
            g.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - 200, top2 + 12 * k, color, c))
        last = None
        for t in pts:
            if (t.get("setting", "mmk"), t["phase"]) != last:
                g.append('<text x="%.1f" y="%d">%s</text>' % (xs(t["t"]), top2 + h2 + 14, t["phase"]))
                last = (t.get("setting", "mmk"), t["phase"])
        for l in range(levels):
            name = next((t["rung"] for t in pts if t["level"] == l), "")
            g.append('<text x="%d" y="%.1f" text-anchor="end" font-size="9">%s</text>' % (left - 4, ys(l) + 3, name))
    g.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(g) + "\n")


def median_stats(sts):
    """Per (setting, phase), the medians over rounds' stats sts of the
    worst service's attainment, the trainers' speed and each service's
    p50 against alone: a campaign judged on medians, as the queue model's
    score judges one (slo/queue_score_test.go)."""
    keys = {k for st in sts for k in st}
    out = {}
    for k in keys:
        ms = [st[k] for st in sts if k in st]
        services = {}
        for n in {n for m in ms for n in m["services"]}:
            x = [m["services"][n]["p50x"] for m in ms if n in m["services"] and m["services"][n]["p50x"] is not None]
            services[n] = {"p50x": statistics.median(x) if x else None}
        out[k] = {"attain": statistics.median(m["attain"] for m in ms), "train": statistics.median(m["train"] for m in ms), "services": services}
    return out


def met_whole(v, ctl):
    """Whether a verdict meets the issue's acceptance whole: every phase
    a by-hand setting held, held at 0.9x its trainers or better; the
    batch-1 service's p50 at most 1.10x of alone in every phase; and, where
    one held every phase, 1.15x it over the run."""
    per = v.get("per_phase", {}).values()
    ok = all(r["held"] and r["ratio"] is not None and r["ratio"] >= 0.9 for r in per if "best" in r)
    ok = ok and all(x <= 1.10 for x in v.get("b1_p50x", []))  # batch-1 services do not regress
    if "worst_attain" in v:
        m, b = v["worst_attain"]
        return ok and m >= b and (v.get("mmk_over_best") or 0) >= 1.15
    return ok and (v.get("mmk_over_best") or 0) >= 1.15


def questions(ctl, v):
    """The issue's questions of one round (verdict v) for the controller
    setting ctl, as report lines."""
    out = []
    if "mmk_over_best" in v:
        out.append("- Whole run: %s's trainers at %s of alone against %s for %s (the strongest simple alternative): %sx (goal 1.15x); it holds every phase: %s." % (
            ctl, fmt(v["whole"].get(ctl)), fmt(v["whole"].get(v["best"])), v["best_static"], fmt(v["mmk_over_best"]), v["holds"].get(ctl)))
        if "worst_attain" in v:
            m, b = v["worst_attain"]
            out.append("- Attainment in the worst phase: %s %.1f %% against %.1f %% for %s (goal: at least as high)." % (
                ctl, 100 * m, 100 * b, v["best"]))
    for m, held in v.get("masks", {}).items():
        out.append("- mmk's fixed mask %s (its mechanism without the controller, not a by-hand setting): trainers %s of alone over the run, every phase held: %s; %s %sx it." % (
            m, fmt(v["whole"].get(m)), held, ctl, fmt(v["whole"][ctl] / v["whole"][m] if v["whole"].get(m) and ctl in v["whole"] else None)))
    for p, row in v.get("per_phase", {}).items():
        if "best" in row:
            out.append("- %s: best by-hand setting %s (trainers %.2f); %s %.2f (%sx, goal 0.9x), attainment %.1f %% (goal 99 %%)%s." % (
                p, row["best"], row["best_train"], ctl, row["mmk_train"], fmt(row["ratio"]), 100 * row["mmk_attain"],
                "; best fixed mask that held it %s (trainers %.2f)" % (row["best_mask"], row["best_mask_train"]) if "best_mask" in row else ""))
        else:
            out.append("- %s: no by-hand setting held every target; %s's lowest attainment %.1f %%, trainers %.2f%s." % (
                p, ctl, 100 * row["mmk_attain"], row["mmk_train"],
                "; fixed mask %s held it (trainers %.2f)" % (row["best_mask"], row["best_mask_train"]) if "best_mask" in row else ""))
    if v.get("b1_p50x"):
        out.append("- batch-1 service under %s: p50 %s of alone (goal at most 1.10x)." % (ctl, ", ".join("%.2fx" % x for x in v["b1_p50x"])))
    return out


def spread_lines(out, rnd, wins, phases, ctls, best, draws=200):
    """The queue model's spread of a round's shares in time: per load
    phase, for the controllers and the strongest simple alternative, each
    service's share within its bound on the GPU against the shares of its
    requests served again on their recorded arrivals with their service
    times drawn again (slo_queue.on_recorded): what the order of the
    service times alone moves. Every setting of a round meets the same
    arrivals (slo_worker.py), so a gap inside that spread ranks nothing.
    No lines without the round's records."""
    path = os.path.join(out, "records-r%d-mps.json.gz" % rnd)
    if not os.path.exists(path):
        return []
    with gzip.open(path, "rt") as f:
        records = json.load(f)
    settings = list(ctls) + ([best] if best else [])
    lines = ["Round %d, the queue model's spread (docs/slo.md): each service's share in time on the GPU, and served again on its "
             "recorded arrivals with its service times drawn again %d times: median [middle 90 %%]." % (rnd, draws), "",
             "| phase | setting | service | GPU | model |", "|---|---|---|---|---|"]
    for p in phases:
        for s in settings:
            for w in wins:
                if w["round"] != rnd or w["setting"] != s or w["phase"] != p:
                    continue
                for n, sv in sorted(w.get("services", {}).items()):
                    reqs = [r for r in records.get(n, {}).get("requests", []) if w["m0"] <= r[0] <= w["m1"]]
                    bound = sv.get("bound_ms")
                    if len(reqs) < 20 or not bound:
                        continue
                    gpu = slo_queue.share([(e - a) * 1e3 for a, _, e in reqs], bound)
                    med, lo, hi, _, _ = slo_queue.band(slo_queue.on_recorded(reqs, bound, random.Random("%d/%s/%s/%s" % (rnd, s, p, n)), draws))
                    lines.append("| %s | %s | %s | %.1f %% | %.1f %% [%.1f-%.1f %%] |" % (p, s, n, 100 * gpu, 100 * med, 100 * lo, 100 * hi))
    return lines + [""]


def main(out):
    wins, tl = load(out)
    rounds = sorted({w["round"] for w in wins})
    phases = []
    for w in wins:
        if w["setting"] == "prio" and w["phase"] not in phases:
            phases.append(w["phase"])
    lines = ["# SLO benchmark", "", "Raw lines: windows.jsonl (one per setting and phase), slo.jsonl (the controllers' rungs); plots: round-R.svg.", ""]
    per_round = {}
    for r in rounds:
        st = round_stats([w for w in wins if w["round"] == r])
        per_round[r] = (st, {c: verdict(st, phases, c) for c in controllers(s for s, _ in st) or ["mmk"]})
        svg(os.path.join(out, "round-%d.svg" % r), r, st, phases, tl)
    settings = []
    for w in wins:
        if not w["setting"].startswith("alone ") and w["setting"] not in settings:
            settings.append(w["setting"])
    services = sorted({n for st, _ in per_round.values() for m in st.values() for n in m["services"]})
    for p in phases:
        rows = [s for s in settings if any((s, p) in st for st, _ in per_round.values())]
        lines += ["## Phase %s (%d rounds; medians [min-max])" % (p, len(rounds)), "",
                  "| setting | " + " | ".join("%s attainment | %s p50/alone | %s p99/alone" % (n, n, n) for n in services) + " | trainers / alone | STP |",
                  "|---|" + "---|" * (3 * len(services) + 2)]
        for s in rows:
            cells = []
            for n in services:
                vals = [st[(s, p)]["services"].get(n) for st, _ in per_round.values() if (s, p) in st]
                vals = [v for v in vals if v]
                cells += [spread([100 * v["attain"] for v in vals], "%.1f%%"), spread([v["p50x"] for v in vals]), spread([v["p99x"] for v in vals])]
            tr = [st[(s, p)]["train"] for st, _ in per_round.values() if (s, p) in st]
            stp = [st[(s, p)]["stp"] for st, _ in per_round.values() if (s, p) in st]
            name = "**%s**" % s if is_controller(s) else s
            lines.append("| %s | %s | %s | %s |" % (name, " | ".join(cells), spread(tr), spread(stp)))
        lines.append("")
    lines += ["## The issue's questions, per round", ""]
    for r in rounds:
        st, vc = per_round[r]
        v0 = next(iter(vc.values()))
        held = [s for s in statics(v0["holds"]) if v0["holds"].get(s)]
        lines.append("Round %d: by-hand settings holding every target in every phase: %s; fixed masks: %s." % (
            r, ", ".join(s for s in held if not s.startswith("mask=")) or "none", ", ".join(s for s in held if s.startswith("mask=")) or "none"))
        for ctl, v in vc.items():
            lines += questions(ctl, v)
        lines.append("")
        lines += spread_lines(out, r, wins, phases, [c for c in vc if c in {s for s, _ in st}], v0.get("best"))
    if len(rounds) > 1:
        for ctl in dict.fromkeys(c for r in rounds for c in per_round[r][1]):
            lines += summary(per_round, rounds, ctl)
        med = median_stats([per_round[r][0] for r in rounds])
        lines += ["## The issue's questions on the medians of %d rounds" % len(rounds), "",
                  "Each setting's attainment and trainer speed per phase, the medians over the rounds, judged as one round (as the queue model judges a campaign).", ""]
        for ctl in controllers(s for s, _ in med) or ["mmk"]:
            v = verdict(med, phases, ctl)
            held = [s for s in statics(v["holds"]) if v["holds"].get(s) and not s.startswith("mask=")]
            lines.append("By-hand settings holding every target in every phase (medians): %s." % (", ".join(held) or "none"))
            lines += questions(ctl, v)
            lines += ["- %s meets the acceptance whole on the medians: %s." % (ctl, "yes" if met_whole(v, ctl) else "no"), ""]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1])
