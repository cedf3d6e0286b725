"""The table of bench/gpu/mmkd-e2e.sh: per job and phase, online latency
(p50, p99) or offline JCT (from the phase's start to the job's end, so
that the time a job waited for a place counts), and each phase's
makespan (start to the last offline job's end).

  python3 e2e_report.py OUTDIR
"""
import json
import os
import sys


def main():
    out = sys.argv[1]
    rows = [json.loads(line) for line in open(os.path.join(out, "e2e.jsonl")) if line.strip()]
    phases = ["baseline", "mmk"]
    by = {(r["phase"], r["name"]): r for r in rows}
    names = []
    for r in rows:
        if r["name"] not in names:
            names.append(r["name"])
    print("| job | kind | baseline | mmk | mmk placement |")
    print("| --- | --- | --- | --- | --- |")
    span = {p: [None, None] for p in phases}
    for name in names:
        cells, kind, place = [], "", "-"
        for p in phases:
            r = by.get((p, name))
            if r is None:
                cells.append("-")
                continue
            kind, rep = r["kind"], r["report"]
            if rep.get("unfinished"):
                cells.append("unfinished")
                continue
            if kind == "online":
                cells.append(f"p50 {rep['p50_ms']:.2f} ms, p99 {rep['p99_ms']:.2f} ms ({rep['requests']} requests)")
            else:
                jct = rep["t_end"] - r["t0"]
                cells.append(f"JCT {jct:.1f} s ({rep['it_per_s']:.2f} it/s running)")
                lo, hi = span[p]
                span[p] = [r["t0"] if lo is None else lo, rep["t_end"] if hi is None else max(hi, rep["t_end"])]
            if p == "mmk":
                j = r.get("job", {})
                pl = j.get("placement") or {}
                if pl:
                    place = f"GPU {pl.get('gpu')} {pl.get('profile') or 'whole'}, MPS {pl.get('mpsPercent')} %, restarts {j.get('restarts', 0)}"
        print(f"| {name} | {kind} | {cells[0]} | {cells[1]} | {place} |")
    print()
    for p in phases:
        lo, hi = span[p]
        print(f"{p} makespan (offline): " + (f"{hi - lo:.1f} s" if lo is not None else "-"))


if __name__ == "__main__":
    main()
