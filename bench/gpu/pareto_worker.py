"""One job of a co-location benchmark, driven over stdin (bench/gpu/pareto.py).

  python3 pareto_worker.py --role hp --model resnet50 --batch 1 --think-ms 2
  python3 pareto_worker.py --role lp --model vgg16 --batch 64 --train

The process lives through every setting of one MPS state, so that the
settings are compared inside the same processes (process-to-process spread
stays out of the ratios). It imports torch and builds its model on the CPU,
prints {"event": "loaded"} and waits for commands, one per line:

  go        move to the GPU and warm up; then {"event": "ready"} (paused)
  run       work: hp serves closed-loop requests (forward, synchronize,
            then --think-ms); lp runs training steps (or inference
            batches) back to back
  pause     stop after the current request or step and synchronize
  hook 0|1  turn the mmk hook's callbacks off or on (mmk_hook_set_active,
            between two requests or steps); answered {"event": "hook"}
  quit      print the records and exit

Records: hp keeps (end wall time, latency ms) per request; lp keeps the GPU
end time of every step (a CUDA event after each step, turned into wall
time at the end), so its throughput can be cut to any window without a
synchronize per step. Random weights and inputs, seeded; nothing is
downloaded. --fake runs without torch (sleeps), for a dry run of the driver.
"""
import argparse
import ctypes
import json
import os
import sys
import threading
import time


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Control:
    """Commands from stdin, read on a thread; the main loop applies them."""

    def __init__(self):
        self.cv = threading.Condition()
        self.go = False
        self.running = False
        self.hook = None  # wanted hook state, applied by the main loop
        self.quit = False
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in sys.stdin:
            cmd = line.split()
            if not cmd:
                continue
            with self.cv:
                if not self.command(cmd):
                    out({"event": "error", "error": "unknown command %r" % line.strip()})
                self.cv.notify_all()
        with self.cv:
            self.quit = True
            self.cv.notify_all()

    def command(self, cmd):
        """Applies one command (under cv); False for one it does not know.
        A worker with commands of its own extends it."""
        if cmd[0] == "go":
            self.go = True
        elif cmd[0] == "run":
            self.running = True
        elif cmd[0] == "pause":
            self.running = False
        elif cmd[0] == "hook" and len(cmd) == 2 and cmd[1] in ("0", "1"):
            self.hook = int(cmd[1])
        elif cmd[0] == "quit":
            self.quit = True
        else:
            return False
        return True

    def wait_go(self):
        with self.cv:
            self.cv.wait_for(lambda: self.go or self.quit)
            return self.go and not self.quit

    def idle(self):
        """Blocks while paused with nothing to apply; False at quit."""
        with self.cv:
            self.cv.wait_for(lambda: self.running or self.quit or self.hook is not None)
            return not self.quit

    def take_hook(self):
        with self.cv:
            h, self.hook = self.hook, None
            return h


class Hook:
    """The mmk hook in this process, if the CUDA driver loaded it."""

    def __init__(self):
        self.lib = None
        path = os.environ.get("CUDA_INJECTION64_PATH")
        if path:
            try:
                self.lib = ctypes.CDLL(path)
            except OSError as e:
                out({"event": "error", "error": "hook %s: %s" % (path, e)})

    def set(self, on):
        rc = self.lib.mmk_hook_set_active(on) if self.lib else -1
        out({"event": "hook", "on": on, "rc": rc})

    def stats(self):
        """The hook's counters (launches, held, fail-opens, syncs), or None."""
        if not self.lib:
            return None
        buf = ctypes.create_string_buffer(4096)
        if self.lib.mmk_hook_stats_json(buf, len(buf)) <= 0:
            return None
        try:
            return json.loads(buf.value.decode())
        except ValueError:
            return None


def build(args):
    """The model on the CPU and a function making its input on the GPU."""
    import torch
    import torchvision
    from torchvision.models import detection, segmentation

    torch.manual_seed(0)
    name, batch = args.model, args.batch
    if name in ("resnet50", "alexnet", "vgg16", "vgg19", "mobilenet_v2", "resnet152", "densenet201"):
        model = getattr(torchvision.models, name)()
        return model, lambda: torch.randn(batch, 3, 224, 224, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    if name == "bert":
        # BERT-base (transformers, random weights from its default config),
        # sequences of 128 tokens, a 1000-way head so that training steps
        # take step_fn's labels; the model returns the logits.
        import transformers

        cfg = transformers.BertConfig(num_labels=1000)
        bert = transformers.BertForSequenceClassification(cfg)

        class Logits(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, x):
                return self.bert(input_ids=x).logits

        return Logits(), lambda: torch.randint(0, cfg.vocab_size, (batch, 128), device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    if name == "fcn_resnet50":
        model = segmentation.fcn_resnet50(weights=None, weights_backbone=None)
        return model, lambda: torch.randn(batch, 3, 224, 224, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    ctor = {"keypointrcnn": detection.keypointrcnn_resnet50_fpn, "maskrcnn": detection.maskrcnn_resnet50_fpn}[name]
    model = ctor(weights=None, weights_backbone=None)
    return model, lambda: [torch.randn(3, 320, 320, device="cuda", generator=torch.Generator("cuda").manual_seed(i)) for i in range(batch)]


def step_fn(model, x, train, batch):
    """One request or step of the job on input x: an inference batch, or
    a training step (SGD, cross-entropy on random labels)."""
    import torch

    if not train:
        model.eval()

        def work():
            with torch.inference_mode():
                model(x)
        return work
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def work():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    return work


def real(args, ctl, hook):
    import torch

    torch.backends.cudnn.benchmark = False
    # One CPU thread for the online job: its launching thread must not
    # share its cores with spinning OpenMP workers (pareto.py pins it).
    torch.set_num_threads(1 if args.role == "hp" else 2)
    model, make = build(args)
    out({"event": "loaded"})
    if not ctl.wait_go():
        return
    model = model.cuda()
    work = step_fn(model, make(), args.role != "hp" and args.train, args.batch)

    for _ in range(args.warmup):
        work()
        torch.cuda.synchronize()
    base = torch.cuda.Event(enable_timing=True)
    base.record()
    torch.cuda.synchronize()
    base_wall = time.time()
    out({"event": "ready"})

    reqs, events = [], []
    while ctl.idle():
        h = ctl.take_hook()
        if h is not None:
            torch.cuda.synchronize()
            hook.set(h)
        if not ctl.running:
            torch.cuda.synchronize()
            continue
        if args.role == "hp":
            t0 = time.perf_counter()
            work()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            reqs.append((round(time.time(), 6), round((t1 - t0) * 1e3, 4)))
            if args.think_ms > 0:
                time.sleep(args.think_ms / 1e3)
        else:
            work()
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            events.append(ev)
    torch.cuda.synchronize()
    ends = [round(base_wall + base.elapsed_time(ev) / 1e3, 6) for ev in events]
    out({"event": "records", "role": args.role, "model": args.model, "batch": args.batch,
         "requests": reqs, "steps": ends, "hook": hook.stats()})


def fake(args, ctl, hook):
    """No GPU: a request takes about 3 ms, a step 50 ms."""
    out({"event": "loaded"})
    if not ctl.wait_go():
        return
    out({"event": "ready"})
    reqs, steps = [], []
    while ctl.idle():
        h = ctl.take_hook()
        if h is not None:
            hook.set(h)
        if not ctl.running:
            continue
        if args.role == "hp":
            t0 = time.perf_counter()
            time.sleep(0.003)
            reqs.append((round(time.time(), 6), round((time.perf_counter() - t0) * 1e3, 4)))
            time.sleep(args.think_ms / 1e3)
        else:
            time.sleep(0.05)
            steps.append(round(time.time(), 6))
    out({"event": "records", "role": args.role, "model": args.model, "batch": args.batch,
         "requests": reqs, "steps": steps})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", required=True, choices=["hp", "lp"])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--think-ms", type=float, default=2)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--warmup", type=int, default=20, help="requests or steps before ready")
    ap.add_argument("--fake", action="store_true", help="no torch: sleeps (a dry run of the driver)")
    args = ap.parse_args()
    ctl, hook = Control(), Hook()
    (fake if args.fake else real)(args, ctl, hook)


if __name__ == "__main__":
    main()
