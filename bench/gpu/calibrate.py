"""Calibration of the latency controller's plant on a real GPU (issue 52):
each rung of a ladder, and the static settings a user could pick instead,
beside a trainer mix, with the services at two loads. What it measures
is what the controller's queue forecast rests on: each service's service
times (and latencies) per setting, and each trainer's speed per setting.

  python3 bench/gpu/calibrate.py --out OUT --mix vgg19:32 --mix resnet152:32,bert:8 \\
      [--services r50-b1=resnet50:1,r50-b32=resnet50:32,bert-b8=bert:8] \\
      [--loads r50-b1=20/60,r50-b32=8/24,bert-b8=15/45] \\
      [--ladder priority,tpcs=0.97,tpcs=0.75,tpcs=0.5,tpcs=0.25,hold,suspend] \\
      [--statics prio+70%,prio+50%] [--window-s 3] [--passes 2] [--tpc-map MAP]

The services (slo_worker.py: open loop, Poisson arrivals, first come first
served, hooked and online) run once through the whole calibration, under
one MPS daemon and one kernel scheduler server. Each mix starts its
trainers (pareto_worker.py, batch training steps back to back), three
processes per trainer: one hooked with TPC masks allowed
(MMK_TPC_MASK=1) for the rungs, and one each at 70 % and 50 % of the
active threads, not hooked, for the static settings. Per pass, in an
order rotated by pass and mix:

  mix alone      the trainers alone (no service): their speed, against
                 which every setting's is taken
  priority       the rung: trainers at MPS client priority 1, every TPC
  tpcs=F         the trainers' kernels held to a share F of the TPCs
                 (the server's tpcs F; with --tpc-map, F of the TPCs)
  tpcs=F/req     as tpcs=F, only while an online request is in flight
                 (the server's tpcs F req)
  hold           every trainer launch held while a request runs (guard
                 with no threshold)
  suspend        the services alone (the trainers paused)
  prio+70%, +50% by hand: the trainers at 70 % or 50 % of the threads

Each setting runs the services at their low rate, then at their high rate,
--window-s seconds each, after --settle-s; each window's arrivals restart
from a stream named by its load, pass and mix, so that every setting of a
pass meets the same arrivals at each load.

Output: OUT/calib.jsonl, one line per window ({"mix", "pass", "setting",
"load", "rates", "services": {NAME: {"arrival_s", "service_ms",
"latency_ms"}}, "trainers": {NAME: {"steps", "it_s"}}, "gpu", ...}), read by
sim/slosuite (mmkctl sim slo --calibration); OUT/machine.txt,
OUT/server.log, OUT/workers.log. No MIG change; the MPS daemon's pipe
directory is under /tmp and it is quit before the script ends. With
--fake, sleeping workers and no GPU (a dry run: bench/gpu's
TestCalibrateDryRun).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pareto  # noqa: E402
from pareto import Proc, Sampler, cpu_busy, pinned, trainer_window  # noqa: E402
from slo import cpu_plan  # noqa: E402

SERVICES = "r50-b1=resnet50:1,r50-b32=resnet50:32,bert-b8=bert:8"
LOADS = "r50-b1=20/60,r50-b32=8/24,bert-b8=15/45"
LADDER = "priority,tpcs=0.97,tpcs=0.75,tpcs=0.5,tpcs=0.25,hold,suspend"
STATICS = "prio+70%,prio+50%"


def models_of(spec, what):
    """MODEL:BATCH pairs, comma-separated."""
    out = []
    for part in spec.split(","):
        model, _, batch = part.strip().partition(":")
        if not model or not batch.isdigit() or int(batch) < 1:
            raise SystemExit("%s %r: want MODEL:BATCH[,MODEL:BATCH...], such as vgg19:32" % (what, spec))
        out.append((model, int(batch)))
    return out


def services_of(spec):
    """NAME=MODEL:BATCH, comma-separated."""
    out = []
    for part in spec.split(","):
        name, _, mb = part.strip().partition("=")
        if not name or not mb:
            raise SystemExit("--services %r: want NAME=MODEL:BATCH[,...], such as r50-b1=resnet50:1" % spec)
        (model, batch), = models_of(mb, "--services")
        out.append((name, model, batch))
    return out


def loads_of(spec, names):
    """NAME=LOW/HIGH requests a second, comma-separated; every service named."""
    out = {}
    for part in spec.split(","):
        name, _, val = part.strip().partition("=")
        try:
            lo, hi = (float(x) for x in val.split("/"))
        except ValueError:
            raise SystemExit("--loads %r: want NAME=LOW/HIGH requests a second, such as r50-b1=20/60" % part)
        if name not in names:
            raise SystemExit("--loads %r: no service %r (services: %s)" % (part, name, ", ".join(names)))
        if not 0 < lo <= hi:
            raise SystemExit("--loads %r: want 0 < LOW <= HIGH" % part)
        out[name] = (lo, hi)
    missing = [n for n in names if n not in out]
    if missing:
        raise SystemExit("--loads: no rates for %s" % ", ".join(missing))
    return out


def setting_of(name):
    """A setting's kind and parameter: ("rung", text) for a rung of the
    ladder, ("static", pct) for prio+P%."""
    if name.startswith("prio+") and name.endswith("%"):
        pct = name[5:-1]
        if not pct.isdigit() or not 0 < int(pct) < 100:
            raise SystemExit("--statics %r: want prio+P%% with P in 1..99" % name)
        return "static", int(pct)
    if name in ("priority", "hold", "suspend"):
        return "rung", name
    if name.startswith("tpcs="):
        share = name[5:]
        if share.endswith("/req"):
            share = share[:-4]
        try:
            f = float(share)
        except ValueError:
            f = 0
        if not 0 < f < 1:
            raise SystemExit("--ladder %r: tpcs=F and tpcs=F/req want F in (0, 1)" % name)
        return "rung", name
    raise SystemExit("--ladder %r: calibrate.py runs priority, tpcs=F, tpcs=F/req, hold and suspend" % name)


class Calibration:
    def __init__(self, args):
        self.args = args
        os.makedirs(args.out, exist_ok=True)
        self.tmp, self.pipe, self.mpslog, self.sock, self.profiles = pareto.scratch("mmk-calib.")
        self.log = open(os.path.join(args.out, "workers.log"), "a")
        self.services = services_of(args.services)
        self.loads = loads_of(args.loads, [s[0] for s in self.services])
        self.settings = [s.strip() for s in args.ladder.split(",") if s.strip()] + [s.strip() for s in args.statics.split(",") if s.strip()]
        for s in self.settings:
            setting_of(s)
        self.mixes = [models_of(m, "--mix") for m in args.mix]
        self.cpus = cpu_plan(len(self.services), 0) if args.pin else {}
        if self.cpus.get("driver"):
            os.sched_setaffinity(0, self.cpus["driver"])
        # A core kept busy throughout (pareto.py: idle states slow a
        # launch-bound service alone more than beside a busy trainer).
        self.spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pinned(self.cpus.get("spin")))
        self.sampler = Sampler() if not args.fake else None
        self.windows, self.procs, self.server, self.mps_on = [], {}, None, False
        self.out = open(os.path.join(args.out, "calib.jsonl"), "a")

    def env(self, extra):
        e = dict(os.environ)
        if not self.args.fake:
            e["CUDA_MPS_PIPE_DIRECTORY"], e["CUDA_MPS_LOG_DIRECTORY"] = self.pipe, self.mpslog
        e.update(extra)
        return e

    def hooked(self, argv, name, prio, online):
        if self.args.fake:
            return argv
        return [os.path.join(self.args.bin, "mmkctl"), "run", "--socket", self.sock, "--profiles", self.profiles, "--task-key", name,
                "--name", name, "--priority", str(prio)] + (["--online"] if online else []) + ["--"] + argv

    def start(self):
        """The MPS daemon, the kernel scheduler server and the services."""
        a = self.args
        if not a.fake:
            pareto.mps_daemon(self.pipe, self.mpslog, True)
            self.mps_on = True
        argv = [os.path.join(a.bin, "mmkctl"), "kernelsched", "serve", "--control", "--policy", "fifo", "--socket", self.sock,
                "--profiles", self.profiles]
        if a.tpc_map:
            argv += ["--tpc-map", a.tpc_map]
        self.server = Proc("server", argv, self.env({}), open(os.path.join(a.out, "server.log"), "a"), self.cpus.get("server"), own_session=True)
        for _ in range(100):
            if os.path.exists(self.sock):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the kernel scheduler server's socket never appeared")
        for i, (name, model, batch) in enumerate(self.services):
            argv = [sys.executable, os.path.join(HERE, "slo_worker.py"), "--model", model, "--batch", str(batch), "--seed", str(200 + i)]
            argv += ["--fake"] if a.fake else []
            self.procs[name] = Proc(name, self.hooked(argv, name, 0, True), self.env({"CUDA_MPS_CLIENT_PRIORITY": "0"}), self.log,
                                    self.cpus.get("svc%d" % i))
        # A service that does not load (a model this machine's libraries
        # lack) is left out, and said so; the others go on.
        for name, _, _ in list(self.services):
            try:
                self.procs[name].expect("loaded", 300)
            except (TimeoutError, RuntimeError) as e:
                print("calibrate: service %s left out: %s" % (name, e), flush=True)
                self.procs.pop(name).p.kill()
                self.services = [s for s in self.services if s[0] != name]
        if not self.services:
            raise RuntimeError("no service loaded")
        for name, _, _ in self.services:
            self.procs[name].send("go")
        for name, _, _ in self.services:
            self.procs[name].expect("ready", 300)

    def control(self, line):
        return pareto.control(self.server, line)

    def start_mix(self, m, mix):
        """The mix's trainers: per trainer the hooked one (rungs) and one
        per static setting's share of the threads."""
        groups = {"rung": []}
        for j, (model, batch) in enumerate(mix):
            base = "m%d-t%d-%s" % (m, j, model)
            argv = [sys.executable, os.path.join(HERE, "pareto_worker.py"), "--role", "lp", "--model", model, "--batch", str(batch), "--train"]
            argv += ["--fake"] if self.args.fake else []
            self.procs[base] = Proc(base, self.hooked(argv, base, 5, False), self.env({"CUDA_MPS_CLIENT_PRIORITY": "1", "MMK_TPC_MASK": "1"}),
                                    self.log, self.cpus.get("lp"))
            groups["rung"].append(base)
            for s in self.settings:
                kind, pct = setting_of(s)
                if kind != "static":
                    continue
                name = "%s-%d" % (base, pct)
                env = {"CUDA_MPS_CLIENT_PRIORITY": "1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(pct)}
                self.procs[name] = Proc(name, argv, self.env(env), self.log, self.cpus.get("lp"))
                groups.setdefault(s, []).append(name)
        names = [n for g in groups.values() for n in g]
        pareto.go(self.procs, names, 300)
        return groups

    def prepare(self, setting, groups):
        """Sets the server for a setting; the trainers that run in it."""
        kind, _ = setting_of(setting)
        self.control("tpcs 1")
        self.control("policy fifo")
        if kind == "static":
            return groups[setting]
        if setting == "suspend":
            return []
        if setting == "hold":
            self.control("policy guard tau=-1ns")
        elif setting.endswith("/req"):
            # The mask only while an online request is in flight.
            self.control("tpcs %s req" % setting[5:-4])
        elif setting.startswith("tpcs="):
            self.control("tpcs %s" % setting[5:])
        return groups["rung"]

    def window(self, mix, p, setting, load, run, seconds):
        b0, l0 = cpu_busy()
        t0, m0 = time.time(), time.monotonic()
        time.sleep(seconds)
        t1, m1 = time.time(), time.monotonic()
        b1, l1 = cpu_busy()
        w = {"mix": mix, "pass": p, "setting": setting, "load": load, "run": sorted(run), "t0": t0, "t1": t1, "m0": m0, "m1": m1,
             "rates": {s[0]: (self.loads[s[0]][0 if load == "low" else 1] if load != "-" else 0) for s in self.services},
             "gpu": self.sampler.window(t0, t1) if self.sampler else None, "host_busy": round((b1 - b0) / max(l1 - l0, 1), 3)}
        self.windows.append(w)
        print("  %-24s pass %d  %-10s %-4s gpu %s" % (mix, p, setting, load, w["gpu"]), flush=True)
        return w

    def run_setting(self, mix, p, setting, trainers, with_services):
        run = list(trainers) + ([s[0] for s in self.services] if with_services else [])
        for n, proc in self.procs.items():
            if n not in run:
                proc.send("pause")
        loads = ("low", "high") if with_services else ("-",)
        for n in run:
            proc = self.procs[n]
            if n in self.loads:
                proc.send("rate %g settle-p%d-%s" % (self.loads[n][0], p, mix))
            proc.send("run")
        time.sleep(self.args.settle_s)
        for load in loads:
            if with_services:
                for name, _, _ in self.services:
                    rate = self.loads[name][0 if load == "low" else 1]
                    self.procs[name].send("rate %g %s-p%d-%s" % (rate, load, p, mix))
            self.window(mix, p, setting, load, run, self.args.window_s if with_services else self.args.ref_s)
        for n in run:
            self.procs[n].send("pause")

    def calibrate_mix(self, m, mix):
        label = ",".join("%s:%d" % t for t in mix)
        print("calibrate: mix %d %s" % (m, label), flush=True)
        groups = self.start_mix(m, mix)
        try:
            for p in range(self.args.passes):
                self.run_setting(label, p, "mix alone", groups["rung"], False)
                k = (p + m) % len(self.settings)
                for s in self.settings[k:] + self.settings[:k]:
                    self.run_setting(label, p, s, self.prepare(s, groups), True)
        finally:
            self.control("tpcs 1")
            self.control("policy fifo")
            records = self.stop([n for g in groups.values() for n in g])
        for w in self.windows:
            if w["mix"] != label:
                continue
            w["trainers"] = {}
            for n in w["run"]:
                r = records.get(n)
                if r is None or n in self.loads:
                    continue
                # The trainer's name without its mix prefix and share.
                w["trainers"][trainer_of(n)] = trainer_window(r.get("steps", []), w["t0"], w["t1"], 4)

    def stop(self, names):
        return pareto.collect(self.procs, names)

    def finish(self):
        """Stops the services, cuts every window's requests out of their
        records, writes calib.jsonl and stops the rest."""
        records = self.stop([s[0] for s in self.services if s[0] in self.procs])
        for w in self.windows:
            w["services"] = {}
            for name, model, batch in self.services:
                r = records.get(name)
                if r is None or name not in w["run"]:
                    continue
                reqs = [x for x in r["requests"] if w["m0"] <= x[0] <= w["m1"]]
                w["services"][name] = {"model": model, "batch": batch,
                                       "arrival_s": [round(a - w["m0"], 6) for a, _, _ in reqs],
                                       "service_ms": [round((e - s) * 1e3, 3) for _, s, e in reqs],
                                       "latency_ms": [round((e - a) * 1e3, 3) for a, _, e in reqs]}
            self.out.write(json.dumps(w) + "\n")
        self.out.close()
        if self.server:
            pareto.stop_server(self.server)
        if self.mps_on:
            pareto.mps_daemon(self.pipe, self.mpslog, False)
        if self.sampler:
            self.sampler.stop.set()
        self.spinner.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def trainer_of(proc):
    """A trainer's name in the output from its process's: t<J>-<model>."""
    parts = proc.split("-")
    return "-".join(parts[1:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mix", action="append", default=[], help="a trainer mix, MODEL:BATCH[,MODEL:BATCH...] (repeatable; at least one)")
    ap.add_argument("--services", default=SERVICES, help="the services, NAME=MODEL:BATCH comma-separated (default %(default)s)")
    ap.add_argument("--loads", default=LOADS, help="each service's low and high rate, NAME=LOW/HIGH comma-separated (default %(default)s)")
    ap.add_argument("--ladder", default=LADDER, help="the rungs to calibrate (priority, tpcs=F, tpcs=F/req, hold, suspend; default %(default)s)")
    ap.add_argument("--statics", default=STATICS, help="static settings by hand, prio+P%% comma-separated (default %(default)s)")
    ap.add_argument("--window-s", type=float, default=3, help="seconds of each load's window")
    ap.add_argument("--settle-s", type=float, default=1, help="seconds after a setting starts before its first window")
    ap.add_argument("--ref-s", type=float, default=3, help="seconds of the mix alone")
    ap.add_argument("--passes", type=int, default=2, help="passes over the settings per mix, each in another order")
    ap.add_argument("--tpc-map", default="", help="the GPU's TPC slot map (bench/gpu/tpcmap.py; kernelsched serve --tpc-map)")
    ap.add_argument("--pin", type=int, default=1)
    ap.add_argument("--bin", default=os.environ.get("MMK_BIN", os.path.join(HERE, "..", "..", "bin")))
    ap.add_argument("--fake", action="store_true", help="sleeping workers, no GPU, no MPS (a dry run)")
    args = ap.parse_args()
    if not args.mix:
        ap.error("--mix: at least one trainer mix, such as --mix vgg19:32")
    if args.passes < 1 or args.window_s <= 0 or args.ref_s <= 0 or args.settle_s < 0:
        ap.error("--passes must be at least 1, --window-s and --ref-s positive, --settle-s not negative")
    if args.fake:
        args.window_s, args.settle_s, args.ref_s = min(args.window_s, 0.4), 0.05, 0.2
    # A timeout's SIGTERM ends the run through finish: the windows measured
    # so far are written.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("calibrate: terminated"))
    c = Calibration(args)
    t = time.time()
    try:
        c.start()
        for m, mix in enumerate(c.mixes):
            try:
                c.calibrate_mix(m, mix)
            except (TimeoutError, RuntimeError) as e:
                # A mix whose trainers fail is said so; the next one runs.
                print("calibrate: mix %d failed: %s" % (m, e), flush=True)
                c.stop([n for n in list(c.procs) if n.startswith("m%d-" % m)])
    finally:
        c.finish()
    print("calibrate: %d windows in %.0f s" % (len(c.windows), time.time() - t), flush=True)


if __name__ == "__main__":
    main()
