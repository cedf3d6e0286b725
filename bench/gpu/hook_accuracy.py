"""How far the hook's measure of a request is from a service's own, in a
bench/gpu/slo.py run:

  python3 bench/gpu/hook_accuracy.py OUT [RECORDS.json.gz]

For each service and window where the services' hooks ran (hold, mmk and
the papers' policies: the by-hand settings turn the hooks off), the hook's
requests (OUT/requests.jsonl[.gz], source "hook": first launch after the
service was idle to the synchronisation that ends the request) against
the service's own records (OUT/records-r*-mps.json.gz): its time serving
each request (start to end) and its end-to-end latency (arrival to end,
the wait in its queue included). Prints the p50 and p99 of each and the
errors.
"""
import glob
import gzip
import json
import os
import sys

BY_HAND = ("prio", "prio+70%", "prio+50%", "together", "time slicing")


def pick(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v))) - 1))]


def lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(l) for l in f if l.strip()]


def main(out, records=None):
    path = os.path.join(out, "requests.jsonl")
    reqs = lines(path if os.path.exists(path) else path + ".gz")
    records = records or sorted(glob.glob(os.path.join(out, "records-r*-mps.json.gz")))[-1]
    recs = json.load(gzip.open(records, "rt"))
    wins = [json.loads(l) for l in open(os.path.join(out, "windows.jsonl")) if l.strip()]
    print("| service | setting | phase | requests | hook p50 / p99 ms | service time p50 / p99 | end to end p50 / p99 | hook vs service time p50 / p99 | hook vs end to end p50 / p99 |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for svc in sorted(n for n, r in recs.items() if r.get("role") == "svc"):
        own = recs[svc]["requests"]
        hook = [(x["end_ns"] / 1e9, x["lat_ns"] / 1e6) for x in reqs if x["name"] == svc and x["src"] == "hook"]
        for w in wins:
            if svc not in w.get("services", {}) or w["setting"] in BY_HAND or w["setting"].startswith("alone"):
                continue
            h = [l for e, l in hook if w["m0"] <= e <= w["m1"]]
            st = [(e - s) * 1e3 for a, s, e in own if w["m0"] <= e <= w["m1"]]
            e2e = [(e - a) * 1e3 for a, s, e in own if w["m0"] <= e <= w["m1"]]
            if len(h) < 20 or len(st) < 20:
                continue
            err = [pick(h, .5) / pick(st, .5) - 1, pick(h, .99) / pick(st, .99) - 1, pick(h, .5) / pick(e2e, .5) - 1, pick(h, .99) / pick(e2e, .99) - 1]
            summary.setdefault(svc, []).append(err)
            print("| %s | %s | %s | %d | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %+.1f / %+.1f %% | %+.0f / %+.0f %% |" % (
                svc, w["setting"], w["phase"], len(h), pick(h, .5), pick(h, .99), pick(st, .5), pick(st, .99), pick(e2e, .5), pick(e2e, .99),
                100 * err[0], 100 * err[1], 100 * err[2], 100 * err[3]))
    print()
    for svc, errs in summary.items():
        a = lambda i: sorted(abs(e[i]) for e in errs)
        print("%s, %d windows: against its time serving the request, |p50 error| at most %.1f %% (median %.1f %%), |p99 error| at most %.1f %% (median %.1f %%); "
              "against its end-to-end latency (queue included), |p50 error| up to %.0f %%, |p99 error| up to %.0f %%." % (
                  svc, len(errs), 100 * a(0)[-1], 100 * a(0)[len(errs) // 2], 100 * a(1)[-1], 100 * a(1)[len(errs) // 2], 100 * a(2)[-1], 100 * a(3)[-1]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
