"""One side of a co-location pair on a real GPU (bench/gpu/hook-colocate.sh).

  python3 pair.py hp --model resnet50 --batch 1 --think-ms 2 --seconds 8
  python3 pair.py lp --model vgg16 --batch 64 --train --seconds 20 --warmup 6

hp serves closed-loop inference requests (forward + synchronize, then the
think time) and prints one JSON line: latency percentiles in ms (think time
excluded) and the wall-clock window it measured. lp runs training steps (or
inference batches without --train) back to back and prints its iterations
per second after the warm-up, with a timeline of (wall time, iterations) every
half second so that its throughput can be cut to the hp's window. Random
weights and inputs; nothing is downloaded.
"""
import argparse
import json
import time

import torch
import torchvision
from torchvision.models import detection, segmentation

CLASSIFIERS = {"resnet50", "alexnet", "vgg16", "vgg19"}


def build(name, batch):
    """The model and a function making its input. Weights and inputs are
    seeded, so that every process runs the same work (a detector's random
    weights decide how many objects it finds, and so its latency)."""
    torch.manual_seed(0)
    if name in CLASSIFIERS:
        model = getattr(torchvision.models, name)()
        return model, lambda: torch.randn(batch, 3, 224, 224, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    if name == "fcn_resnet50":
        model = segmentation.fcn_resnet50(weights=None, weights_backbone=None)
        return model, lambda: torch.randn(batch, 3, 224, 224, device="cuda")
    ctor = {"keypointrcnn": detection.keypointrcnn_resnet50_fpn, "maskrcnn": detection.maskrcnn_resnet50_fpn}[name]
    model = ctor(weights=None, weights_backbone=None)
    return model, lambda: [torch.randn(3, 320, 320, device="cuda", generator=torch.Generator("cuda").manual_seed(i)) for i in range(batch)]


def pick(lat, p):
    return lat[min(len(lat) - 1, max(0, int(round(p / 100 * len(lat))) - 1))]


def hp(args):
    model, make = build(args.model, args.batch)
    model = model.cuda().eval()
    x = make()
    lat = []
    with torch.no_grad():
        for _ in range(args.warmup_iters):
            model(x)
        torch.cuda.synchronize()
        t_start = time.time()
        end = time.perf_counter() + args.seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            lat.append((time.perf_counter() - t0) * 1e3)
            if args.think_ms > 0:
                time.sleep(args.think_ms / 1e3)
    t_end = time.time()
    lat.sort()
    print(json.dumps({"role": "hp", "model": args.model, "batch": args.batch, "requests": len(lat),
                      "p50_ms": round(pick(lat, 50), 3), "p99_ms": round(pick(lat, 99), 3),
                      "mean_ms": round(sum(lat) / len(lat), 3), "t_start": t_start, "t_end": t_end}), flush=True)


def lp(args):
    model, make = build(args.model, args.batch)
    model = model.cuda()
    x = make()
    if args.train:
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        y = torch.randint(0, 1000, (args.batch,), device="cuda")
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
    else:
        model.eval()

        def step():
            with torch.no_grad():
                model(x)
            torch.cuda.synchronize()

    start = time.perf_counter()
    while time.perf_counter() - start < args.warmup:
        step()
    torch.cuda.synchronize()
    t0, n, ticks, next_tick = time.perf_counter(), 0, [], 0.0
    while time.perf_counter() - t0 < args.seconds:
        step()
        n += 1
        if time.perf_counter() - t0 >= next_tick:
            torch.cuda.synchronize()
            ticks.append([round(time.time(), 3), n])
            next_tick += 0.5
    torch.cuda.synchronize()
    ticks.append([round(time.time(), 3), n])
    print(json.dumps({"role": "lp", "model": args.model, "batch": args.batch, "train": args.train,
                      "it_per_s": round(n / (time.perf_counter() - t0), 2), "ticks": ticks}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["hp", "lp"])
    ap.add_argument("--model", default="resnet50", choices=sorted(CLASSIFIERS | {"fcn_resnet50", "keypointrcnn", "maskrcnn"}))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--think-ms", type=float, default=2)
    ap.add_argument("--warmup", type=float, default=5, help="lp: seconds of warm-up")
    ap.add_argument("--warmup-iters", type=int, default=30, help="hp: requests of warm-up")
    ap.add_argument("--train", action="store_true")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = False
    hp(args) if args.role == "hp" else lp(args)


if __name__ == "__main__":
    main()
