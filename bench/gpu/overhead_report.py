"""The table of bench/gpu/hook-overhead.sh's results.

  python3 overhead_report.py OUTDIR/overhead.jsonl

For each batch size and variant: the median over rounds of each process's
median iteration time, and the median over rounds of the paired ratio to
the plain process of the same round (interleaved, so drifts cancel).
"""
import json
import statistics
import sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    by = {}
    for r in rows:
        by.setdefault((r["batch"], r["variant"]), {})[r["round"]] = r
    print("| batch | variant | processes | iteration p50 (median of processes) | fastest iteration | change vs plain (median of paired rounds) | paired range |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for b in sorted({k[0] for k in by}):
        plain = by.get((b, "plain"), {})
        for v in ("plain", "sharing", "profiling"):
            runs = by.get((b, v), {})
            if not runs:
                continue
            p50 = statistics.median(r["iter_ms_p50"] for r in runs.values())
            fastest = min(r["iter_ms_min"] for r in runs.values())
            ratios = [runs[k]["iter_ms_p50"] / plain[k]["iter_ms_p50"] - 1 for k in runs if k in plain]
            change = "-" if v == "plain" else f"{statistics.median(ratios) * 100:+.1f} %"
            rng = "-" if v == "plain" else f"{min(ratios) * 100:+.1f} .. {max(ratios) * 100:+.1f} %"
            print(f"| {b} | {v} | {len(runs)} | {p50:.3f} ms | {fastest:.3f} ms | {change} | {rng} |")


if __name__ == "__main__":
    main()
