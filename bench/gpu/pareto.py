"""Co-location on a real GPU, every setting side by side in one run.

  python3 bench/gpu/pareto.py --out OUT --pair main [--cycles 4] [--window 2.5]

A pair is an online job (HP: closed-loop requests with a think time) and an
offline one (LP: back-to-back training steps or inference batches). Each
MPS state is one segment with its own processes, started once:

  no MPS   HP alone, LP alone, default time-sharing
  MPS      HP alone, LP alone, MPS (LP priority 0), LP priority 1 at 100,
           70 and 50 %, and on top of priority 1 at 100 % the hook with
           fifo (mmk's default: both tasks quiet, the hooks report
           only synchronisations), fifo loud (every launch reported, as
           before protocol 4), guard, guard with
           Tau fixed, fikit, mmk and fikit+mmk; guard and guard with Tau
           64 µs once more with a trainer whose hook records no events
           (MMK_OBSERVE_EVERY=0: completions predicted, not observed)

Within a segment the settings are windows of the same processes: jobs
that a setting does not use are paused (synchronized, idle), the hooks'
callbacks are turned on only where a policy needs them, and the kernel
scheduler server switches policy over its control channel. The list of
settings is cycled --cycles times, in a rotated order each cycle, so that
drifts of the GPU (clocks, heat) fall on every setting; alone is measured
in every cycle under the same MPS state, and every ratio is taken against
the alone of its own cycle. GPU clocks, utilisation and power (NVML) and
the host's load are recorded per window.

Output: OUT/windows.jsonl, one line per window (the raw lines the report
reads: go run ./bench/pareto), OUT/records-*.json.gz (every request and
step), OUT/server.log. No MIG change; the MPS daemon is started with its
pipe directory under /tmp and quit before the script ends. --fake runs the
whole protocol without a GPU (sleeping workers, no MPS) to check it.
"""
import argparse
import gzip
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "pareto_worker.py")

# Pairs: (HP model, batch), (LP model, batch, train). FIKIT's pairs run LP
# inference back to back.
PAIRS = {
    "main": (("resnet50", 1), ("vgg16", 64, True)),
    # tpcmask.py's: the batch-16 service and vgg19 trainer of GPU-FACTS.md.
    "b16": (("resnet50", 16), ("vgg19", 32, True)),
    "alexnet": (("alexnet", 1), ("vgg16", 8, False)),
    "keypoint": (("keypointrcnn", 1), ("fcn_resnet50", 8, False)),
    "mask": (("maskrcnn", 1), ("keypointrcnn", 8, False)),
}


def cpu_plan(pin):
    """CPU sets per role when the host has at least 12 CPUs and pin is on:
    the online job alone on its cores, the offline jobs on others, the
    server, the spinner and this driver each on their own, so that a
    setting never changes where the online job's launching thread runs."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 12:
        return {}
    return {"driver": cpus[0:1], "server": cpus[1:2], "spin": cpus[2:3], "hp": cpus[4:8], "lp": cpus[8:]}


def pinned(cpus):
    """A preexec_fn pinning a child (and what it starts) to cpus."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


class Proc:
    """A child speaking JSON lines on stdout, fed lines on stdin."""

    def __init__(self, name, argv, env, log, cpus=None, own_session=False):
        """own_session starts it in a session (and process group) of its
        own: a kernel scheduler server, which suspends the jobs it
        restrains with SIGSTOP and refuses to stop those of its own
        process group (issue 54), as under mmkd, where every job has a
        group of its own."""
        self.name = name
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1,
                                  preexec_fn=pinned(cpus), start_new_session=own_session)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def pgid(self):
        """Its process group (None once it has ended)."""
        try:
            return os.getpgid(self.p.pid)
        except ProcessLookupError:
            return None

    def _read(self):
        for line in self.p.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                self.q.put(json.loads(line))
            except json.JSONDecodeError:
                pass
        self.q.put(None)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def expect(self, event, timeout):
        """Waits for a line with this event (other lines are dropped)."""
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("%s: no %r within %.0f s" % (self.name, event, timeout))
            try:
                m = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                raise RuntimeError("%s exited (code %s) waiting for %r" % (self.name, self.p.wait(), event))
            if m.get("event") == "error":
                print("  %s: %s" % (self.name, m.get("error")), flush=True)
            if m.get("event") == event or (event == "reply" and "ok" in m):
                return m

    def stop(self):
        try:
            self.send("quit")
        except (BrokenPipeError, OSError):
            pass


def scratch(prefix):
    """A fresh directory under /tmp for one run: it, the MPS daemon's pipe
    and log directories, the kernel scheduler's socket and the profiles
    directory (made)."""
    tmp = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    profiles = os.path.join(tmp, "profiles")
    os.makedirs(profiles, exist_ok=True)
    return tmp, os.path.join(tmp, "mps-pipe"), os.path.join(tmp, "mps-log"), os.path.join(tmp, "sched.sock"), profiles


def collect(procs, names):
    """Quits the named workers of procs (removed from it) and gathers
    their records: each asked to quit, then each awaited (a worker that
    sends none is said so, one that does not exit is killed)."""
    records = {}
    for n in names:
        procs[n].stop()
    for n in names:
        p = procs.pop(n)
        try:
            records[n] = p.expect("records", 120)
        except (TimeoutError, RuntimeError) as e:
            print("  %s: %s" % (n, e), flush=True)
        try:
            p.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.p.kill()
    return records


def stop_server(server):
    """Stops a kernel scheduler server (SIGINT, as at a terminal), killing
    it if it does not end within 30 s."""
    try:
        server.p.stdin.close()
        server.p.send_signal(2)
        server.p.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        server.p.kill()


def control(server, line):
    """Sends a control line to a kernel scheduler server (a Proc running
    mmkctl kernelsched serve --control) and returns its reply."""
    server.send(line)
    m = server.expect("reply", 10)
    if not m.get("ok"):
        raise RuntimeError("server: %s: %s" % (line, m.get("error")))
    return m


def go(procs, names, timeout):
    """Moves workers to the GPU once each has loaded, and waits for them."""
    for n in names:
        procs[n].expect("loaded", timeout)
    for n in names:
        procs[n].send("go")
    for n in names:
        procs[n].expect("ready", timeout)


def set_hooks(procs, names, on):
    """Turns the workers' hook callbacks on or off (mmk_hook_set_active)."""
    for n in names:
        procs[n].send("hook %d" % on)
    for n in names:
        m = procs[n].expect("hook", 30)
        if m.get("rc") != 0:
            raise RuntimeError("%s: mmk_hook_set_active(%d) returned %s" % (n, on, m.get("rc")))


def mps_daemon(pipe, log, on):
    """Starts (on) or quits the MPS control daemon whose pipe directory is
    pipe (under /tmp: the benchmarks quit it before they end)."""
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=log)
    if on:
        os.makedirs(pipe, exist_ok=True)
        os.makedirs(log, exist_ok=True)
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
        time.sleep(1)
    else:
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, env=env, check=False)
        time.sleep(2)


def step_rate(steps, t0, t1):
    """A trainer's steps a second over the window [t0, t1], its steps the
    completion times in order: each interval between two steps counts as
    one step, in the share of it inside the window. A trainer stopped for
    part of the window (suspended) is slower by that part: the rate over
    the span from its first step in the window to its last, as measured
    before, left out the stopped time before and after them (a trainer
    stopped 7 s of 10 read at full speed)."""
    if t1 <= t0:
        return 0.0
    n = 0.0
    for a, b in zip(steps, steps[1:]):
        if b <= t0 or a >= t1 or b <= a:
            continue
        n += (min(b, t1) - max(a, t0)) / (b - a)
    return n / (t1 - t0)


def trainer_window(steps, t0, t1, digits=3):
    """A trainer's numbers in the window [t0, t1]: its steps there and its
    speed (step_rate), rounded to digits."""
    return {"steps": sum(1 for x in steps if t0 <= x <= t1), "it_s": round(step_rate(steps, t0, t1), digits)}


def visible_gpu(nv):
    """The NVML handle of the first GPU CUDA_VISIBLE_DEVICES shows (NVML
    itself ignores that variable): an index or a UUID, GPU 0 if unset."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if first.isdigit():
        return nv.nvmlDeviceGetHandleByIndex(int(first))
    if first.startswith(("GPU-", "MIG-")):
        return nv.nvmlDeviceGetHandleByUUID(first)
    return nv.nvmlDeviceGetHandleByIndex(0)


class Sampler:
    """GPU clocks, utilisation and power through NVML, every 100 ms."""

    def __init__(self):
        self.samples = []
        self.stop = threading.Event()
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv, self.h = pynvml, visible_gpu(pynvml)
        except Exception as e:  # no NVML: no samples, said in the output
            print("no NVML samples: %s" % e, flush=True)
            self.nv = None
            return
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        nv, h = self.nv, self.h
        while not self.stop.is_set():
            try:
                util = nv.nvmlDeviceGetUtilizationRates(h)
                self.samples.append((time.time(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                     nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM), util.gpu,
                                     nv.nvmlDeviceGetPowerUsage(h) / 1000.0))
            except Exception:
                pass
            time.sleep(0.1)

    def window(self, t0, t1):
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        if not s:
            return None
        return {"sm_mhz": round(statistics.fmean(x[1] for x in s)), "sm_mhz_min": min(x[1] for x in s),
                "mem_mhz": round(statistics.fmean(x[2] for x in s)), "util": round(statistics.fmean(x[3] for x in s), 1),
                "power_w": round(statistics.fmean(x[4] for x in s), 1)}


def cpu_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


class Segment:
    """The processes of one MPS state, and the settings they run."""

    def __init__(self, run, name, mps):
        self.run, self.name, self.mps = run, name, mps
        self.procs, self.server = {}, None

    def env(self, extra):
        e = dict(os.environ)
        if self.mps:
            e["CUDA_MPS_PIPE_DIRECTORY"], e["CUDA_MPS_LOG_DIRECTORY"] = self.run.pipe, self.run.mpslog
        e.update(extra)
        return e

    def worker(self, name, role, extra_env, hooked=None):
        """Starts a worker; hooked = (task key, priority, online) runs it
        under mmkctl run, reporting to this segment's server."""
        r = self.run
        (hm, hb), (lm, lb, train) = PAIRS[r.args.pair]
        argv = [sys.executable, WORKER, "--role", role, "--think-ms", str(r.args.think_ms)]
        argv += ["--model", hm, "--batch", str(hb)] if role == "hp" else ["--model", lm, "--batch", str(lb)] + (["--train"] if train else [])
        if r.args.fake:
            argv.append("--fake")
        if hooked and not r.args.fake:
            key, prio, online = hooked
            argv = [r.mmkctl, "run", "--socket", r.sock, "--profiles", r.profiles, "--task-key", key, "--name", key,
                    "--priority", str(prio)] + (["--online"] if online else []) + ["--"] + argv
        self.procs[name] = Proc(name, argv, self.env(extra_env), r.log, r.cpus.get(role))

    def start_server(self):
        r = self.run
        argv = [r.mmkctl, "kernelsched", "serve", "--control", "--policy", "fifo", "--socket", r.sock, "--profiles", r.profiles]
        argv += getattr(r, "server_args", [])
        self.server = Proc("server", argv, self.env({}), r.log, r.cpus.get("server"), own_session=True)
        for _ in range(100):
            if os.path.exists(r.sock):
                return
            time.sleep(0.1)
        raise RuntimeError("the kernel scheduler server's socket never appeared")

    def control(self, line):
        return control(self.server, line)

    def go(self, names, timeout=240):
        go(self.procs, names, timeout)

    def profile(self, name, key, timeout=90):
        """Runs a hooked job alone until its profiling phase wrote its profile."""
        if self.run.args.fake:
            return
        path = os.path.join(self.run.profiles, key + ".json")
        p = self.procs[name]
        p.send("run")
        end = time.time() + timeout
        while not os.path.exists(path):
            if time.time() > end:
                raise TimeoutError("no profile %s after %d s" % (path, timeout))
            time.sleep(0.2)
        p.send("pause")
        time.sleep(1.0)  # the server loads new profiles once a second

    def set_hooks(self, names, on):
        if not self.run.args.fake:
            set_hooks(self.procs, names, on)

    def measure(self, settings, cycles):
        r = self.run
        hooked = [n for n in self.procs if n in self.hooked]
        hooks_on = None
        for c in range(cycles):
            k = c % len(settings)
            order = settings[k:] + settings[:k]
            for st in order:
                want = bool(st.get("policy"))
                if hooked and want != hooks_on:
                    self.set_hooks(hooked, want)
                    hooks_on = want
                if st.get("policy"):
                    self.control("loud %d" % st.get("loud", 0))
                    self.control("policy " + st["policy"])
                if self.server and getattr(self, "masks", False):
                    self.control("tpcs %g" % st.get("tpcs", 1))
                active = [n for n in (st.get("hp"), st.get("lp")) if n]
                for n, p in self.procs.items():
                    p.send("run" if n in active else "pause")
                time.sleep(st.get("settle", r.args.settle))
                b0, l0 = cpu_busy()
                stats0 = self.control("stats") if self.server else None
                t0, m0 = time.time(), time.monotonic_ns()
                time.sleep(r.args.window)
                t1, m1 = time.time(), time.monotonic_ns()
                b1, l1 = cpu_busy()
                w = {"pair": r.args.pair, "segment": self.name, "setting": st["name"], "cycle": c, "t0": t0, "t1": t1, "m0": m0, "m1": m1,
                     "hp": st.get("hp"), "lp": st.get("lp"), "policy": st.get("policy"), "loud": st.get("loud", 0),
                     "gpu": r.sampler.window(t0, t1), "host_busy": round((b1 - b0) / max(l1 - l0, 1), 3),
                     "load1": os.getloadavg()[0]}
                if self.server:
                    s1 = self.control("stats")
                    w["server"] = {k: s1["counters"][k] - stats0["counters"].get(k, 0) for k in s1["counters"] if k != "tasks"}
                    w["policy_stats"] = s1.get("policy_stats")
                r.windows.append(w)
                print("  %-9s cycle %d  %-22s gpu %s" % (self.name, c, st["name"], w["gpu"]), flush=True)
        for p in self.procs.values():
            p.send("pause")

    def finish(self):
        records = collect(self.procs, list(self.procs))
        for n, m in records.items():
            if m.get("hook"):
                print("  %s hook: %s" % (n, {k: v for k, v in m["hook"].items() if k in ("launches", "held", "fail_open", "syncs", "went")}), flush=True)
        if self.server:
            stop_server(self.server)
        return records


class Run:
    def __init__(self, args):
        self.args = args
        os.makedirs(args.out, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="mmk-pareto.", dir="/tmp")
        self.pipe, self.mpslog = os.path.join(self.tmp, "mps-pipe"), os.path.join(self.tmp, "mps-log")
        self.sock = os.path.join(self.tmp, "sched.sock")
        self.profiles = os.path.join(args.out, "profiles-" + args.pair)
        os.makedirs(self.profiles, exist_ok=True)
        self.mmkctl = args.mmkctl
        self.log = open(os.path.join(args.out, "pareto-%s.log" % args.pair), "a")
        self.windows = []
        self.sampler = Sampler()
        self.mps_on = False
        # A core kept busy through every setting: without it the host's
        # idle states slow a launch-bound online job alone more than next
        # to a busy co-runner (the smoke run on the H100 measured 5.5 ms
        # alone against 3.9 ms next to the trainer).
        self.cpus = cpu_plan(args.pin)
        if self.cpus.get("driver"):
            os.sched_setaffinity(0, self.cpus["driver"])
        print("cpus: %s" % (self.cpus or "not pinned"), flush=True)
        self.spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pinned(self.cpus.get("spin")))
                         for _ in range(args.host_spin)]

    def mps(self, on):
        if self.args.fake or on == self.mps_on:
            return
        mps_daemon(self.pipe, self.mpslog, on)
        self.mps_on = on

    def annotate(self, segment, records):
        """Cuts each window of the segment out of the jobs' records."""
        for w in self.windows:
            if w["segment"] != segment:
                continue
            t0, t1 = w["t0"], w["t1"]
            if w["hp"] in records:
                lat = sorted(l for t, l in records[w["hp"]]["requests"] if t0 <= t <= t1)
                if lat:
                    pick = lambda q: lat[min(len(lat) - 1, max(0, int(round(q * len(lat))) - 1))]
                    w["hp_stats"] = {"n": len(lat), "p50_ms": round(statistics.median(lat), 4), "p99_ms": pick(0.99),
                                     "mean_ms": round(statistics.fmean(lat), 4)}
            if w["lp"] in records:
                w["lp_stats"] = trainer_window(records[w["lp"]]["steps"], t0, t1)

    def save(self, name, records):
        self.annotate(name, records)
        with gzip.open(os.path.join(self.args.out, "records-%s-%s.json.gz" % (self.args.pair, name)), "wt") as f:
            json.dump(records, f)

    def no_mps(self):
        seg = Segment(self, "no-mps", False)
        seg.hooked = set()
        seg.worker("hp", "hp", {})
        seg.worker("lp", "lp", {})
        seg.go(["hp"])
        seg.go(["lp"])
        settings = [
            {"name": "alone (no MPS)", "hp": "hp"},
            {"name": "LP alone (no MPS)", "lp": "lp"},
            {"name": "default", "hp": "hp", "lp": "lp"},
        ]
        try:
            seg.measure(settings, self.args.cycles)
        finally:
            self.save("no-mps", seg.finish())

    def with_mps(self):
        self.mps(True)
        seg = Segment(self, "mps", True)
        seg.hooked = {"hp", "lp1"}
        seg.start_server()
        prio = lambda p, pct=100: {"CUDA_MPS_CLIENT_PRIORITY": str(p), **({"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(pct)} if pct != 100 else {})}
        hk, lk = self.args.pair + "-hp", self.args.pair + "-lp"
        seg.worker("hp", "hp", prio(0), hooked=(hk, 0, True))
        seg.worker("lp1", "lp", prio(1), hooked=(lk, 5, False))
        seg.worker("lp0", "lp", prio(0))
        seg.worker("lp70", "lp", prio(1, 70))
        seg.worker("lp50", "lp", prio(1, 50))
        # Profiles first, each job alone; then the others warm up together.
        seg.go(["hp"])
        seg.profile("hp", hk)
        seg.go(["lp1"])
        seg.profile("lp1", lk)
        # lp1p: lp1 whose hook records no events, so that the server goes
        # by predicted completions (protocol step 7 off); started once the
        # profile exists, so that it does not profile again.
        seg.hooked.add("lp1p")
        seg.worker("lp1p", "lp", {**prio(1), "MMK_OBSERVE_EVERY": "0"}, hooked=(lk, 5, False))
        seg.go(["lp0", "lp70", "lp50", "lp1p"])
        pol = lambda name, policy, lp="lp1", loud=0: {"name": name, "hp": "hp", "lp": lp, "policy": policy, "loud": loud,
                                                    "settle": self.args.policy_settle}
        settings = [
            {"name": "alone (MPS)", "hp": "hp"},
            {"name": "LP alone (MPS)", "lp": "lp1"},
            {"name": "MPS", "hp": "hp", "lp": "lp0"},
            {"name": "MPS, LP prio 1", "hp": "hp", "lp": "lp1"},
            {"name": "MPS, LP prio 1, 70 %", "hp": "hp", "lp": "lp70"},
            {"name": "MPS, LP prio 1, 50 %", "hp": "hp", "lp": "lp50"},
            pol("prio 1 + hook (fifo, mmk default)", "fifo"),
            pol("prio 1 + hook (fifo, loud)", "fifo", loud=1),
            pol("guard", "guard"),
            pol("guard, tau 64us", "guard tau=64us"),
            pol("guard, hold all", "guard tau=-1ns"),
            pol("guard, predicted completions", "guard", "lp1p"),
            pol("guard, tau 64us, predicted completions", "guard tau=64us", "lp1p"),
            pol("fikit (prio 1)", "fikit"),
            pol("mmk (prio 1)", "mmk"),
            pol("fikit+mmk (prio 1)", "fikit+mmk"),
        ]
        if self.args.settings:
            keep = self.args.settings.split(",")
            settings = [s for s in settings if any(k in s["name"] for k in keep)]
        try:
            seg.measure(settings, self.args.cycles)
        finally:
            self.save("mps", seg.finish())
            self.mps(False)

    def finish(self):
        with open(os.path.join(self.args.out, "windows.jsonl"), "a") as f:
            for w in self.windows:
                f.write(json.dumps(w) + "\n")
        self.sampler.stop.set()
        for p in self.spinners:
            p.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pair", required=True, choices=sorted(PAIRS))
    ap.add_argument("--cycles", type=int, default=4)
    ap.add_argument("--window", type=float, default=2.5, help="seconds measured per setting and cycle")
    ap.add_argument("--settle", type=float, default=0.6, help="seconds between a switch and its window")
    ap.add_argument("--policy-settle", type=float, default=1.5, help="settle of the policy settings (guard adapts)")
    ap.add_argument("--think-ms", type=float, default=2)
    ap.add_argument("--host-spin", type=int, default=1, help="host cores kept busy by a spinning process throughout")
    ap.add_argument("--pin", type=int, default=1, help="1: pin each role to its own CPUs (12 or more CPUs)")
    ap.add_argument("--segments", default="no-mps,mps")
    ap.add_argument("--settings", default="", help="comma-separated substrings: only the MPS settings naming one")
    ap.add_argument("--mmkctl", default=os.environ.get("MMK_BIN", os.path.join(HERE, "..", "..", "bin")) + "/mmkctl")
    ap.add_argument("--fake", action="store_true", help="no GPU: sleeping workers, no MPS, no hooks")
    args = ap.parse_args()
    run = Run(args)
    t = time.time()
    try:
        for seg in args.segments.split(","):
            print("%s: segment %s" % (args.pair, seg), flush=True)
            {"no-mps": run.no_mps, "mps": run.with_mps}[seg]()
    finally:
        run.mps(False)
        run.finish()
    print("%s: %d windows in %.0f s" % (args.pair, len(run.windows), time.time() - t), flush=True)


if __name__ == "__main__":
    main()
