"""Co-location measurement on a real GPU (no MPS, default time sharing).

  python3 colocate.py hp --seconds 10 --think-ms 2       # resnet50 bs=1 inference, closed loop
  python3 colocate.py lp --model vgg19 --batch 32 --seconds 20 --warmup 5

hp prints one JSON line with latency percentiles (ms) of forward + sync,
excluding think time. lp trains on random data and prints one JSON line with
its iterations per second after its warm-up. Random weights and inputs.
"""
import argparse
import json
import time

import torch
import torchvision


def hp(args):
    model = torchvision.models.resnet50().cuda().eval()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    lat = []
    with torch.no_grad():
        for _ in range(30):
            model(x)
        torch.cuda.synchronize()
        end = time.perf_counter() + args.seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            lat.append((time.perf_counter() - t0) * 1e3)
            time.sleep(args.think_ms / 1e3)
    lat.sort()
    pick = lambda p: lat[min(len(lat) - 1, max(0, int(round(p / 100 * len(lat))) - 1))]
    print(json.dumps({"role": "hp", "requests": len(lat), "p50_ms": round(pick(50), 3), "p99_ms": round(pick(99), 3)}), flush=True)


def lp(args):
    model = getattr(torchvision.models, args.model)().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (args.batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    start = time.perf_counter()
    while time.perf_counter() - start < args.warmup:
        step()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < args.seconds:
        step()
        n += 1
    torch.cuda.synchronize()
    print(json.dumps({"role": "lp", "model": args.model, "batch": args.batch, "it_per_s": round(n / (time.perf_counter() - t0), 2)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["hp", "lp"])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--think-ms", type=float, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--model", default="vgg19")
    ap.add_argument("--warmup", type=float, default=5)
    args = ap.parse_args()
    hp(args) if args.role == "hp" else lp(args)


if __name__ == "__main__":
    main()
