"""Tables of bench/gpu/hook-colocate.sh's results.

  python3 colocate_report.py OUTDIR

Reads OUTDIR/hp.jsonl and lp.jsonl (one line per process, tagged with its
"setting") and OUTDIR/servers.jsonl (the kernel scheduler's counters).
For each setting: the high-priority job's latency p50/p99 and their ratio
to the same job alone; the low-priority job's throughput over the
high-priority job's measuring window (cut from its timeline) and its ratio
to the same pair under default sharing. Settings named "A+B POLICY" (the
FIKIT pairs) also get the HP speedup over "A+B default".
"""
import json
import os
import sys


def load(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip().startswith("{")]


def rate_in(ticks, t0, t1):
    """Iterations per second between wall times t0 and t1, from the
    (time, iterations) timeline, interpolated linearly."""
    def at(t):
        if t <= ticks[0][0]:
            return ticks[0][1]
        for (ta, na), (tb, nb) in zip(ticks, ticks[1:]):
            if ta <= t <= tb:
                return na + (nb - na) * (t - ta) / max(tb - ta, 1e-9)
        return ticks[-1][1]
    lo, hi = max(t0, ticks[0][0]), min(t1, ticks[-1][0])
    if hi <= lo:
        return None
    return (at(hi) - at(lo)) / (hi - lo)


def main():
    out = sys.argv[1]
    hp = {r["setting"]: r for r in load(os.path.join(out, "hp.jsonl"))}
    lp = {r["setting"]: r for r in load(os.path.join(out, "lp.jsonl"))}
    servers = {r["setting"]: r for r in load(os.path.join(out, "servers.jsonl"))}

    def alone_of(setting):
        model = hp[setting]["model"]
        for name in ("alone", f"{model} alone"):
            if name in hp and hp[name]["model"] == model:
                return hp[name]
        return None

    def lp_rate(setting):
        h, l = hp.get(setting), lp.get(setting)
        if not h or not l or "ticks" not in l:
            return None
        return rate_in(l["ticks"], h["t_start"], h["t_end"])

    def default_of(setting):
        pair = setting.split(" ")[0] + " default"
        return pair if pair in hp else "default"

    print("| setting | HP requests | HP p50 | HP p99 | p50 / alone | p99 / alone | LP it/s (HP window) | LP / default | HP speedup over default (p50) | kernels | held | filled | fail-opens | went | unprofiled |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s, h in hp.items():
        a = alone_of(s)
        rate = lp_rate(s)
        base = default_of(s)
        base_rate = lp_rate(base)
        r50 = f"{h['p50_ms'] / a['p50_ms']:.2f}x" if a else "-"
        r99 = f"{h['p99_ms'] / a['p99_ms']:.2f}x" if a else "-"
        lps = f"{rate:.2f}" if rate is not None else "-"
        lpr = f"{rate / base_rate * 100:.0f} %" if rate is not None and base_rate else "-"
        sp = f"{hp[base]['p50_ms'] / h['p50_ms']:.2f}x" if base in hp and s != base and rate is not None else "-"
        c = servers.get(s, {})
        cols = [str(c.get(k, "-")) for k in ("kernels", "held", "filled", "fail_opens", "went", "unprofiled")]
        print(f"| {s} | {h['requests']} | {h['p50_ms']:.2f} ms | {h['p99_ms']:.2f} ms | {r50} | {r99} | {lps} | {lpr} | {sp} | " + " | ".join(cols) + " |")
    alone_lp = [(s, l) for s, l in lp.items() if s not in hp]
    if alone_lp:
        print()
        print("| LP run without HP | it/s |")
        print("| --- | --- |")
        for s, l in alone_lp:
            print(f"| {l.get('model', '?')} {s} | {l['it_per_s']:.2f} |")

    hookstats(out)
    failopen(out)


def hookstats(out):
    """The hooks' own counters per setting and task (hookstats.jsonl)."""
    path = os.path.join(out, "hookstats.jsonl")
    if not os.path.exists(path):
        return
    print()
    print("| setting | task | launches | held | fail-opens | synchronisations |")
    print("| --- | --- | --- | --- | --- | --- |")
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        print(f"| {r['setting']} | {r['key']} | {r['launches']} | {r['held']} | {r['fail_open']} | {r.get('syncs', '-')} |")


def failopen(out):
    """The time from the server's kill to each job's hook noticing it
    (its "is gone" log line), and whether both jobs ran to the end."""
    kill = os.path.join(out, "failopen-kill.txt")
    if not os.path.exists(kill):
        return
    lines = open(kill).read().split("\n")
    t_kill = float(lines[0])
    print()
    print("| job | server killed at | hook fell open after | rest of the log |")
    print("| --- | --- | --- | --- |")
    for job in ("hp", "lp"):
        p = os.path.join(out, f"failopen-{job}.err")
        gone = [l for l in open(p) if "is gone" in l] if os.path.exists(p) else []
        if not gone:
            print(f"| {job} | {t_kill:.3f} | never | |")
            continue
        t = float(gone[0].split("]")[1].split(":")[0])
        print(f"| {job} | {t_kill:.3f} | {(t - t_kill) * 1e3:.1f} ms | {len(gone)} gone line(s) |")
    print()
    print("```")
    print("\n".join(l for l in lines[1:] if l))
    print("```")


if __name__ == "__main__":
    main()
