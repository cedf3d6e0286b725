"""stall_probe.py: does a service stall alone on this GPU machine?

  python3 bench/gpu/stall_probe.py [--seconds 15] [--batch 32] [--gap-ms 40]

resnet50 inference at batch --batch, one request every --gap-ms (closed
loop: the next starts --gap-ms after the last ended), alone on the GPU,
no MPS. Prints the latency percentiles, and each request over twice the
median with its time: stalls that recur (every ~2 s in round 16 of the SLO
benchmark, docs/results/slo-h100-abs.md) point at the machine, not at the
settings compared.
"""
import argparse
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--gap-ms", type=float, default=40)
    a = ap.parse_args()
    m = torchvision.models.resnet50().cuda().eval()
    x = torch.randn(a.batch, 3, 224, 224, device="cuda")
    with torch.no_grad():
        for _ in range(20):
            m(x)
        torch.cuda.synchronize()
        lat, t0 = [], time.monotonic()
        while time.monotonic() - t0 < a.seconds:
            s = time.monotonic()
            m(x)
            torch.cuda.synchronize()
            e = time.monotonic()
            lat.append((s - t0, (e - s) * 1e3))
            time.sleep(a.gap_ms / 1e3)
    v = sorted(x for _, x in lat)
    med = v[len(v) // 2]
    print("requests %d p50 %.2f ms p99 %.2f ms max %.2f ms" % (len(v), med, v[int(0.99 * len(v)) - 1], v[-1]))
    print("over 2x median:", [(round(t, 2), round(x, 1)) for t, x in lat if x > 2 * med])


if __name__ == "__main__":
    main()
