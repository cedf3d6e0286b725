"""The SLO benchmark on a real GPU (issue 34): online services with
time-varying Poisson load and declared latency targets beside trainers,
every setting side by side in the same processes.

  python3 bench/gpu/slo.py --out OUT [--round R] [--phase-s 12] [--timeslice]

Services (open loop, FCFS, slo_worker.py; each reports its own latencies
to mmk): resnet50 at batch 1 and at batch 32. Trainers (pareto_worker.py):
vgg19 and resnet50, batch 32. The load profile is four phases (low,
medium, high, low), each --phase-s seconds; every setting runs the whole
profile without a break, so that a controller meets its changes as they
come. Under one MPS daemon, in a rotated order per round:

  together    the services alone together (no trainer): how much they
              slow each other at equal priority
  prio        by hand: trainers at MPS client priority 1 (no hook)
  prio+70%    by hand: and an active thread percentage of 70
  prio+50%    by hand: and 50
  hold        guard holding every trainer launch while a request runs
  mmk         mmk's latency controller (kernelsched serve --slo), from its
              cheapest rung, with the services' targets; by default its
              ladder masks the trainers' TPCs (priority, 3/4 of the TPCs
              for the first trainer only, then for all, 1/2, 1/4,
              suspend; beside one trainer the first two masks are one
              rung, Ladder.Alike): its trainers are processes of their own
              whose hooks hold the driver's callbacks (MMK_TPC_MASK=1);
              --no-masks gives it the hooked trainers of hold and the
              ladder priority, hold, suspend
  mmk-aim=F   (only when named in --settings) mmk as above, its controller
              aiming at the share F of each target's budget (slo aim F;
              mmk itself aims at --aim): two controllers side by side
  mmk-off     mmk's processes with their hooks on (request marks, masks
              subscribed) and the controller off: what the hook alone
              costs the services, against prio
  mask=F      (only when named in --settings) mmk's masked trainers held
              to a share F of the TPCs, the controller off: a static mask,
              the rung tpcs=F measured for the controller's replay
  reqmask=F   (only when named in --settings) as mask=F, but only while
              a service's request is in flight (the kernel scheduler's
              tpcs F req; issue 52's request-scoped masks, a spike)
  and, at the high phase only, the papers' kernel policies as named
  variants: fikit, mmk's contention check (mmk), FLEP's hpf, EffiSha's piv.

Before them each service runs alone at each of its rates, and each trainer
alone, for the references. The targets: --slo NAME=TARGET, else the
service's p99 alone at its high rate times --slo-mult, measured in this
round (or NAME=p99=1.25x: that multiple). --timeslice adds a segment without MPS (time slicing, the GPU's
default) with its own processes. With --fake, sleeping workers and no GPU
(a dry run of the driver: CI runs it).

Output: OUT/windows.jsonl (one line per setting and phase: per service
the requests, late ones, p50 and p99 against its alone; per trainer its
it/s against alone), OUT/slo.jsonl (mmk's rung over time and its
decisions), OUT/requests.jsonl (the server's measured requests, hook and
reported), OUT/records-*.json.gz, OUT/server.log; then slo_report.py
writes OUT/report.md and OUT/round-R.svg. No MIG change; the MPS daemon
runs with its pipe directory under /tmp and is quit before the end.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pareto  # noqa: E402
from pareto import Proc, Sampler, cpu_busy, pinned, trainer_window  # noqa: E402
from slo_report import is_controller  # noqa: E402

# name, model, batch, rates (low, medium, high) in requests a second.
SERVICES = [("svc-b1", "resnet50", 1, (20, 50, 100)), ("svc-b32", "resnet50", 32, (8, 16, 30))]
TRAINERS = [("vgg19", 32), ("resnet50", 32)]
PHASES = [("low", 0), ("medium", 1), ("high", 2), ("low-again", 0)]
PAPERS = [("fikit", "fikit"), ("mmk-check", "mmk"), ("hpf", "hpf"), ("piv", "piv")]


def pick(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v))) - 1))] if v else None


def rates_of(specs):
    """The services' rates of --rates: NAME=LOW/MEDIUM/HIGH requests a second."""
    names = {s[0] for s in SERVICES}
    out = {}
    for spec in specs:
        name, _, val = spec.partition("=")
        parts = val.split("/")
        try:
            rates = tuple(float(x) for x in parts)
        except ValueError:
            rates = ()
        if name not in names:
            raise SystemExit("--rates %r: no service %r (services: %s)" % (spec, name, ", ".join(sorted(names))))
        if len(rates) != 3 or min(rates) <= 0:
            raise SystemExit("--rates %r: want three positive rates LOW/MEDIUM/HIGH" % spec)
        out[name] = rates
    return out


def services_of(spec):
    """The services of --services: NAME=MODEL:BATCH, comma-separated. Each
    keeps the default rates of its batch size (batch 1 those of svc-b1, a
    larger batch those of svc-b32) until --rates names others."""
    out, seen = [], set()
    for part in spec.split(","):
        name, _, val = part.strip().partition("=")
        model, _, batch = val.partition(":")
        if not name or not model or not batch.isdigit() or int(batch) < 1:
            raise SystemExit("--services %r: want NAME=MODEL:BATCH[,NAME=MODEL:BATCH...], such as svc-bert=bert:8" % spec)
        if name in seen:
            raise SystemExit("--services %r: service %r named twice" % (spec, name))
        seen.add(name)
        out.append((name, model, int(batch), SERVICES[0][3] if int(batch) == 1 else SERVICES[1][3]))
    return out


def trainers_of(spec):
    """The trainers of --trainers: MODEL:BATCH, comma-separated."""
    out = []
    for part in spec.split(","):
        model, _, batch = part.strip().partition(":")
        if not model or not batch.isdigit():
            raise SystemExit("--trainers %r: want MODEL:BATCH[,MODEL:BATCH...], such as vgg19:32" % spec)
        out.append((model, int(batch)))
    return out


def cpu_plan(n_services, n_trainer_procs):
    """CPU sets: the driver, the server and a spinner one each, each service
    two, the trainers the rest (shared)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 12:
        return {}
    plan = {"driver": cpus[0:1], "server": cpus[1:2], "spin": cpus[2:3]}
    at = 4
    for i in range(n_services):
        plan["svc%d" % i] = cpus[at:at + 2]
        at += 2
    plan["lp"] = cpus[at:]
    return plan


class Bench:
    def __init__(self, args):
        self.args = args
        os.makedirs(args.out, exist_ok=True)
        self.tmp, self.pipe, self.mpslog, self.sock, self.profiles = pareto.scratch("mmk-slo.")
        self.log = open(os.path.join(args.out, "workers.log"), "a")
        self.windows, self.timeline, self.groups = [], [], {}
        self.sampler = Sampler() if not args.fake else None
        self.mps_on = False
        self.cpus = cpu_plan(len(SERVICES), 6) if args.pin else {}
        if self.cpus.get("driver"):
            os.sched_setaffinity(0, self.cpus["driver"])
        self.spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pinned(self.cpus.get("spin")))
        self.procs, self.server, self.targets = {}, None, {}
        self.svc_rates = {name: rates for name, _, _, rates in SERVICES}
        self.svc_rates.update(rates_of(args.rates))
        self.trainers = trainers_of(args.trainers)
        self.alone_svc, self.alone_lp = {}, {}
        self.cur_rates = {}

    # --- processes -------------------------------------------------------
    def env(self, extra, mps=True):
        e = dict(os.environ)
        if mps:
            e["CUDA_MPS_PIPE_DIRECTORY"], e["CUDA_MPS_LOG_DIRECTORY"] = self.pipe, self.mpslog
        e.update(extra)
        return e

    def hooked(self, argv, name, prio, online):
        if self.args.fake:
            return argv  # no CUDA: nothing to inject
        mmkctl = os.path.join(self.args.bin, "mmkctl")
        return [mmkctl, "run", "--socket", self.sock, "--profiles", self.profiles, "--task-key", name, "--name", name,
                "--priority", str(prio)] + (["--online"] if online else []) + ["--"] + argv

    def start_service(self, i, name, model, batch, hooked, mps):
        argv = [sys.executable, os.path.join(HERE, "slo_worker.py"), "--model", model, "--batch", str(batch), "--seed", str(100 + i)]
        argv += ["--report"] if hooked else []
        argv += ["--fake"] if self.args.fake else []
        if hooked:
            argv = self.hooked(argv, name, 0, True)
        env = {"CUDA_MPS_CLIENT_PRIORITY": "0"} if mps else {}
        self.procs[name] = Proc(name, argv, self.env(env, mps), self.log, self.cpus.get("svc%d" % i))

    def start_trainer(self, name, model, batch, prio, pct, hooked, mps, masks=False):
        argv = [sys.executable, os.path.join(HERE, "pareto_worker.py"), "--role", "lp", "--model", model, "--batch", str(batch), "--train"]
        argv += ["--fake"] if self.args.fake else []
        env = {}
        if mps:
            env["CUDA_MPS_CLIENT_PRIORITY"] = str(prio)
            if pct != 100:
                env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(pct)
        if hooked:
            argv = self.hooked(argv, name, 5, False)
            if masks:
                env["MMK_TPC_MASK"] = "1"
        self.procs[name] = Proc(name, argv, self.env(env, mps), self.log, self.cpus.get("lp"))

    def start_server(self):
        mmkctl = os.path.join(self.args.bin, "mmkctl")
        argv = [mmkctl, "kernelsched", "serve", "--control", "--policy", "fifo", "--socket", self.sock, "--profiles", self.profiles,
                "--requests", os.path.join(self.args.out, "requests.jsonl"), "--slo-off", "--slo-ladder", self.args.ladder, "--slo-aim", "%g" % self.args.aim]
        if self.args.tpc_map:
            argv += ["--tpc-map", self.args.tpc_map]
        err = open(os.path.join(self.args.out, "server.log"), "a")
        self.server = Proc("server", argv, self.env({}), err, self.cpus.get("server"), own_session=True)
        for _ in range(100):
            if os.path.exists(self.sock):
                return
            time.sleep(0.1)
        raise RuntimeError("the kernel scheduler server's socket never appeared")

    def control(self, line):
        return pareto.control(self.server, line) if self.server else {}

    def mps(self, on):
        if self.args.fake or on == self.mps_on:
            return
        pareto.mps_daemon(self.pipe, self.mpslog, on)
        self.mps_on = on

    def go(self, names, timeout=300):
        pareto.go(self.procs, names, timeout)

    def set_hooks(self, names, on):
        if not self.args.fake:
            pareto.set_hooks(self.procs, names, on)

    # --- measurement -----------------------------------------------------
    def window(self, segment, setting, phase, run, seconds, extra=None):
        """Measures one window: run names the processes that run."""
        b0, l0 = cpu_busy()
        t0, m0 = time.time(), time.monotonic()
        end = m0 + seconds
        while time.monotonic() < end:
            if is_controller(setting) and self.server:
                st = self.control("slo status").get("slo") or {}
                self.timeline.append({"round": self.args.round, "setting": setting, "phase": phase, "t": time.monotonic(), "level": st.get("level"),
                                      "rung": st.get("rung"), "services": [{k: s.get(k) for k in ("name", "State", "Detail")} for s in st.get("services") or []]})
                time.sleep(min(0.5, max(0, end - time.monotonic())))
            else:
                time.sleep(max(0, end - time.monotonic()))
        t1, m1 = time.time(), time.monotonic()
        b1, l1 = cpu_busy()
        w = {"round": self.args.round, "segment": segment, "setting": setting, "phase": phase, "run": sorted(run), "t0": t0, "t1": t1,
             "m0": m0, "m1": m1, "gpu": self.sampler.window(t0, t1) if self.sampler else None,
             "host_busy": round((b1 - b0) / max(l1 - l0, 1), 3),
             "rates": {n: r for n, r in self.cur_rates.items() if n in run}}
        w.update(extra or {})
        self.windows.append(w)
        print("  %-8s %-12s %-9s %s" % (segment, setting, phase, w["gpu"]), flush=True)
        return w

    def rates(self, phase_index, services, phase):
        """Sets each service's rate for the phase; the arrivals restart
        from the stream of the phase in this round, so that every setting
        of a round sees the same arrivals in it and each round others
        (slo_worker.py)."""
        self.cur_rates = {}
        for name in services:
            self.cur_rates[name] = self.svc_rates[name][phase_index]
            self.procs[name].send("rate %g %s-r%d" % (self.cur_rates[name], phase, self.args.round))

    def setting(self, segment, name, services, trainers, phases, prepare=None, seconds=None):
        """Runs one setting through phases (each --phase-s, or seconds):
        services and trainers run, the rest pause."""
        run = set(services) | set(trainers)
        for n, p in self.procs.items():
            if n not in run:
                p.send("pause")
        if prepare:
            prepare()
        self.rates(phases[0][1], services, "settle")
        for n in run:
            self.procs[n].send("run")
        time.sleep(self.args.settle)
        for phase, idx in phases:
            self.rates(idx, services, phase)
            self.window(segment, name, phase, run, seconds or self.args.phase_s)
        for n in run:
            self.procs[n].send("pause")
        # A fixed TPC share (mask=F) ends with its setting.
        self.control("tpcs 1")

    def references(self, segment, services, trainers):
        """Each service alone at each rate; each trainer alone."""
        for name, _, _, rates in SERVICES:
            if name not in services:
                continue
            for idx, label in enumerate(("low", "medium", "high")):
                self.setting(segment, "alone " + name, [name], [], [(label, idx)], seconds=self.args.ref_s)
        for t in trainers:
            self.setting(segment, "alone " + t, [], [t], [("-", 0)], seconds=self.args.ref_s)

    def mps_segment(self):
        a = self.args
        self.mps(True)
        self.start_server()
        svcs = [s[0] for s in SERVICES]
        for i, (name, model, batch, _) in enumerate(SERVICES):
            self.start_service(i, name, model, batch, True, True)
        hooked = list(svcs)
        groups = {"h": [], "p70": [], "p50": [], "m": []}
        for model, batch in self.trainers:
            n = "%s-train" % model
            self.start_trainer(n, model, batch, 1, 100, True, True)
            groups["h"].append(n)
            hooked.append(n)
            for pct in (70, 50):
                m = "%s-train-%d" % (model, pct)
                self.start_trainer(m, model, batch, 1, pct, False, True)
                groups["p%d" % pct].append(m)
            if not a.no_masks:
                m = "%s-train-m" % model
                self.start_trainer(m, model, batch, 1, 100, True, True, masks=True)
                groups["m"].append(m)
        if a.no_masks:
            groups["m"] = groups["h"]
        self.go(svcs + groups["h"] + groups["p70"] + groups["p50"] + [m for m in groups["m"] if m not in groups["h"]])
        hooks = {"on": None}

        def hooks_to(on):
            def f():
                if hooks["on"] != on:
                    self.set_hooks(hooked, on)
                    hooks["on"] = on
            return f

        def policy(line, on=True):
            def f():
                hooks_to(on)()
                self.control("slo off")
                self.control("policy " + line)
            return f

        # References, by hand (hooks off).
        hooks_to(0)()
        self.references("mps", svcs, groups["h"])
        self.set_targets()

        def mmk(aim):
            def f():
                hooks_to(1)()
                # Off first: slo on starts the controller afresh (rung 0,
                # nothing remembered) only when it was off, and a setting
                # of another aim may have run just before.
                self.control("slo off")
                self.control("policy fifo")
                self.control("slo aim %g" % aim)
                self.control("slo on")
            return f

        def mmk_off():
            hooks_to(1)()
            self.control("slo off")
            self.control("policy fifo")

        settings = [
            ("together", [], policy("fifo", 0)),
            ("prio", groups["h"], policy("fifo", 0)),
            ("prio+70%", groups["p70"], policy("fifo", 0)),
            ("prio+50%", groups["p50"], policy("fifo", 0)),
            ("hold", groups["h"], policy("guard tau=-1ns", 1)),
            ("mmk", groups["m"], mmk(a.aim)),
            ("mmk-off", groups["m"], mmk_off),
        ]

        def mask(share, req=""):
            def f():
                hooks_to(1)()
                self.control("slo off")
                self.control("policy fifo")
                self.control(("tpcs %g " % share) + req)
            return f

        if a.settings:
            keep = a.settings.split(",")
            settings = [s for s in settings if s[0] in keep]
            masks = [k for k in keep if k.startswith("mask=") or k.startswith("reqmask=")]
            if masks and a.no_masks:
                raise SystemExit("slo.py: %s needs mmk's masked trainers; drop --no-masks" % ", ".join(masks))
            # mask=F: mmk's masked trainers with a fixed share F of the
            # TPCs (the kernel scheduler's tpcs F), the controller off.
            settings += [(k, groups["m"], mask(float(k[5:]))) for k in masks if k.startswith("mask=")]
            # reqmask=F: the same mask while a request is in flight only.
            settings += [(k, groups["m"], mask(float(k[8:]), "req")) for k in masks if k.startswith("reqmask=")]
            # mmk-aim=F: mmk's controller aiming at the share F.
            settings += [(k, groups["m"], mmk(float(k[8:]))) for k in keep if k.startswith("mmk-aim=")]
        k = a.round % len(settings)
        for name, trainers, prep in settings[k:] + settings[:k]:
            self.setting("mps", name, svcs, trainers, PHASES, prep)
        self.control("slo off")
        if not a.no_papers:
            for name, pol in PAPERS:
                self.setting("mps", name, svcs, groups["h"], [("high", 2)], policy(pol, 1), seconds=a.paper_s)
        self.control("policy fifo")
        self.finish_segment("mps")
        self.mps(False)

    def set_targets(self):
        """The services' targets: --slo, else --slo-mult times p99 alone at
        the high rate in this round."""
        given = dict(kv.split("=", 1) for kv in self.args.slo)
        for name, _, _, _ in SERVICES:
            if name in given and not given[name].endswith("x"):
                t = given[name]
            elif name in given:  # p99=1.25x: of its p99 alone at the high rate
                pct, _, mult = given[name][:-1].partition("=")
                t = "%s=%.1fms" % (pct, float(mult) * self.alone_p99(name, "high", float(pct[1:]) / 100))
            else:
                p99 = self.alone_p99(name, "high")
                t = "p99=%.1fms" % (self.args.slo_mult * p99)
            self.targets[name] = t
            self.control("slo target %s %s" % (name, t))
            print("  target %s %s" % (name, t), flush=True)

    def alone_p99(self, name, phase, q=0.99):
        """p99 (or quantile q) of the service alone at a phase's rate, asked
        of the worker."""
        for w in self.windows:
            if w["setting"] == "alone " + name and w["phase"] == phase:
                self.procs[name].send("lat %f %f" % (w["m0"], w["m1"]))
                lat = self.procs[name].expect("lat", 30)["ms"]
                if lat:
                    return pick(lat, q)
        raise RuntimeError("%s: no request alone at the %s rate to set its target from" % (name, phase))

    def timeslice_segment(self):
        """Time slicing, the GPU's default without MPS: processes of its
        own (the MPS daemon is gone), names ending in -ts."""
        svcs, tnames = [], []
        for i, (name, model, batch, rates) in enumerate(SERVICES):
            self.start_service(i, name + "-ts", model, batch, False, False)
            self.svc_rates[name + "-ts"] = self.svc_rates[name]
            svcs.append(name + "-ts")
        for model, batch in self.trainers:
            n = "%s-train-ts" % model
            self.start_trainer(n, model, batch, 0, 100, False, False)
            tnames.append(n)
        self.go(svcs + tnames)
        self.setting("timeslice", "time slicing", svcs, tnames, PHASES)
        self.finish_segment("timeslice")

    def finish_segment(self, segment):
        # The process groups: the server suspends only jobs outside its
        # own (groups.json; the dry run checks it).
        self.groups[segment] = {"server": self.server.pgid() if self.server else None,
                                "procs": {n: p.pgid() for n, p in self.procs.items()}}
        records = pareto.collect(self.procs, list(self.procs))
        if self.server:
            pareto.stop_server(self.server)
            self.server = None
        self.annotate(segment, records)
        with gzip.open(os.path.join(self.args.out, "records-r%d-%s.json.gz" % (self.args.round, segment)), "wt") as f:
            json.dump(records, f)
        self.procs = {}

    def annotate(self, segment, records):
        """Cuts each window out of the records: per service and trainer."""
        for w in self.windows:
            if w["segment"] != segment:
                continue
            w["services"], w["trainers"] = {}, {}
            for n in w["run"]:
                r = records.get(n)
                if not r:
                    continue
                if r.get("role") == "svc":
                    lat = [(e - a) * 1e3 for a, s, e in r["requests"] if w["m0"] <= a <= w["m1"]]
                    svc = n[:-3] if n.endswith("-ts") else n
                    t = self.targets.get(svc, "")
                    bound = float(t.split("=")[1][:-2]) if t.endswith("ms") else None
                    if lat:
                        w["services"][svc] = {"n": len(lat), "p50_ms": round(pick(lat, 0.5), 3), "p99_ms": round(pick(lat, 0.99), 3),
                                              "late": sum(1 for x in lat if bound and x > bound), "bound_ms": bound}
                else:
                    w["trainers"][n] = trainer_window(r.get("steps", []), w["t0"], w["t1"])

    def finish(self):
        with open(os.path.join(self.args.out, "groups.json"), "w") as f:
            json.dump(self.groups, f)
        with open(os.path.join(self.args.out, "windows.jsonl"), "a") as f:
            for w in self.windows:
                f.write(json.dumps(w) + "\n")
        with open(os.path.join(self.args.out, "slo.jsonl"), "a") as f:
            for t in self.timeline:
                f.write(json.dumps(t) + "\n")
        if self.sampler:
            self.sampler.stop.set()
        self.spinner.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--round", type=int, default=0, help="rotates the order of the settings")
    ap.add_argument("--phase-s", type=float, default=10)
    ap.add_argument("--paper-s", type=float, default=8, help="seconds of each paper policy's window at the high phase")
    ap.add_argument("--settle", type=float, default=1.5)
    ap.add_argument("--slo", action="append", default=[], help="NAME=TARGET, e.g. svc-b32=p99=40ms, or svc-b32=p99=1.25x of its p99 alone at the high rate (repeatable)")
    ap.add_argument("--rates", action="append", default=[], help="NAME=LOW/MEDIUM/HIGH requests a second, e.g. svc-b1=20/50/80 (repeatable)")
    ap.add_argument("--slo-mult", type=float, default=2.0)
    ap.add_argument("--services", default="", help="the services, NAME=MODEL:BATCH comma-separated (default svc-b1=resnet50:1,svc-b32=resnet50:32); rates by --rates")
    ap.add_argument("--trainers", default=",".join("%s:%d" % t for t in TRAINERS), help="the trainers, MODEL:BATCH comma-separated")
    ap.add_argument("--ladder", default="", help="mmk's rungs (kernelsched serve --slo-ladder); default priority,tpcs=0.75@1,tpcs=0.75,tpcs=0.5,tpcs=0.25,suspend (beside one trainer the first mask is the second), with --no-masks priority,hold,suspend")
    ap.add_argument("--aim", type=float, default=1, help="the share of each target's budget mmk's controller aims for (kernelsched serve --slo-aim), in (0, 1]")
    ap.add_argument("--tpc-map", default="", help="the GPU's TPC slot map (bench/gpu/tpcmap.py's tpcmap.json) for the kernel scheduler (kernelsched serve --tpc-map): masks keep the share of the TPCs they name")
    ap.add_argument("--no-masks", action="store_true", help="mmk without TPC masks: the hooked trainers of hold, ladder priority,hold,suspend")
    ap.add_argument("--ref-s", type=float, default=6, help="seconds of each reference window (services and trainers alone)")
    ap.add_argument("--settings", default="", help="comma-separated: only these settings")
    ap.add_argument("--no-papers", action="store_true")
    ap.add_argument("--timeslice", action="store_true")
    ap.add_argument("--pin", type=int, default=1)
    ap.add_argument("--bin", default=os.environ.get("MMK_BIN", os.path.join(HERE, "..", "..", "bin")))
    ap.add_argument("--fake", action="store_true")
    args = ap.parse_args()
    if args.services:
        global SERVICES
        SERVICES = services_of(args.services)
    if not 0 < args.aim <= 1:
        ap.error("--aim %g: the share of the budget must be in (0, 1]" % args.aim)
    for k in args.settings.split(",") if args.settings else []:
        for prefix, what in (("mask=", "the share of the TPCs"), ("reqmask=", "the share of the TPCs"), ("mmk-aim=", "the share of the budget")):
            if k.startswith(prefix):
                try:
                    f = float(k[len(prefix):])
                except ValueError:
                    f = 0
                if not 0 < f <= 1:
                    ap.error("--settings %s: %s must be a number in (0, 1]" % (k, what))
    if not args.ladder:
        args.ladder = "priority,hold,suspend" if args.no_masks else "priority,tpcs=0.75@1,tpcs=0.75,tpcs=0.5,tpcs=0.25,suspend"
    if args.fake:
        args.phase_s, args.settle, args.ref_s, args.paper_s = min(args.phase_s, 0.6), 0.1, 0.3, 0.3
    b = Bench(args)
    t = time.time()
    try:
        b.mps_segment()
        if args.timeslice:
            b.timeslice_segment()
    finally:
        if b.server:
            # In a session of its own, it does not get the signal that
            # ends the run: stopped here, it resumes what it suspended.
            pareto.stop_server(b.server)
            b.server = None
        b.mps(False)
        b.finish()
    print("slo: %d windows in %.0f s" % (len(b.windows), time.time() - t), flush=True)
    subprocess.run([sys.executable, os.path.join(HERE, "slo_report.py"), args.out], check=False)


if __name__ == "__main__":
    main()
