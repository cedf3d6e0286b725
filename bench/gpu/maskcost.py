"""Where a TPC mask costs: plain kernels under the hook's fixed masks.

  python3 bench/gpu/maskcost.py --out OUT [--bin DIR] [--cycles 2] [--variants full,keep=72,keep=33]

On an H100 every mask the hook wrote cost a vgg19 trainer 18-20 %, even
one naming no TPC the GPU has (keep=72), while the mask's enable bit alone
cost nothing. This asks which kernels pay and which bits
(docs/results/slo-h100-masks.md): one process per variant and cycle (variants rotated each cycle) times
a bf16 GEMM (cuBLAS, Hopper cluster kernels), an fp32 GEMM with TF32 off
(no clusters), a bandwidth-bound elementwise kernel, a bf16 3x3
convolution (cuDNN) and a stream of tiny kernels (launch rate), each the
median of 5 timed repeats with CUDA events. A mask that takes no TPC away
and still slows a kernel points at that kernel's kind.

Output: OUT/maskcost.jsonl (a line per process: variant, cycle, ms per
kernel of each workload) and OUT/maskcost.md (each workload's time under
each variant against full in the same cycle, median and range). No MPS,
no kernel scheduler: MMK_TPC_KEEP and MMK_TPC_OFF fix the mask
(hook/lib/tpcmask.c).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tpcmask import parse_variant  # noqa: E402

WORKLOADS = ["gemm_bf16", "gemm_fp32", "elementwise", "conv_bf16", "tiny"]


def child():
    """Times every workload in this process, prints one JSON object."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    a16 = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    a32 = torch.randn(4096, 4096, device=dev)
    big = torch.randn(64 << 20, device=dev)
    tiny = torch.randn(1024, device=dev)
    conv = torch.nn.Conv2d(256, 256, 3, padding=1).to(dev, torch.bfloat16).to(memory_format=torch.channels_last)
    img = torch.randn(32, 256, 56, 56, device=dev, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    work = {
        "gemm_bf16": (lambda: a16 @ a16, 10),
        "gemm_fp32": (lambda: a32 @ a32, 10),
        "elementwise": (lambda: big.mul_(1.0000001), 50),
        "conv_bf16": (lambda: conv(img), 20),
        "tiny": (lambda: tiny.add_(1.0), 2000),
    }
    out = {}
    names = os.environ.get("MASKCOST_WORKLOADS", ",".join(WORKLOADS)).split(",")
    with torch.no_grad():
        for name in names:
            fn, n = work[name]
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(5):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(n):
                    fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) / n)
            out[name] = statistics.median(times)
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bin", default=os.environ.get("MMK_BIN", os.path.join(HERE, "..", "..", "bin")))
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--variants", default="full,keep=128,keep=72,keep=66,keep=33")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="which to time, comma-separated (default all: %s)" % ",".join(WORKLOADS))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child()
        return
    workloads = args.workloads.split(",")
    if not workloads or any(w not in WORKLOADS for w in workloads):
        raise SystemExit("maskcost.py: --workloads %r: each must be one of %s" % (args.workloads, ",".join(WORKLOADS)))
    variants = [parse_variant(v) for v in args.variants.split(",")]
    if variants[0][0] != "full":
        raise SystemExit("maskcost.py: --variants must start with full (the baseline of each cycle), got %r" % args.variants)
    os.makedirs(args.out, exist_ok=True)
    hook = os.path.join(args.bin, "libmmkhook.so")
    if not os.path.exists(hook):
        raise SystemExit("maskcost.py: no hook at %s (--bin)" % hook)
    lines = []
    with open(os.path.join(args.out, "maskcost.jsonl"), "w") as f:
        for c in range(args.cycles):
            order = variants[c % len(variants):] + variants[:c % len(variants)]
            for name, mask in order:
                env = {**os.environ, "CUDA_INJECTION64_PATH": hook, "MMK_TPC_MASK": "1", "MMK_HOOK_LOG": "1", "MASKCOST_WORKLOADS": ",".join(workloads), **mask}
                p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--out", args.out],
                                   env=env, capture_output=True, text=True, timeout=300)
                if p.returncode != 0:
                    raise SystemExit("maskcost.py: variant %s cycle %d failed (%d): %s" % (name, c, p.returncode, p.stderr[-2000:]))
                rec = {"variant": name, "cycle": c, **json.loads(p.stdout.strip().splitlines()[-1])}
                print("cycle %d %-12s %s" % (c, name, " ".join("%s=%.4g" % (w, rec[w]) for w in workloads)), flush=True)
                f.write(json.dumps(rec) + "\n")
                f.flush()
                lines.append(rec)
    base = {r["cycle"]: r for r in lines if r["variant"] == "full"}
    rows = ["| variant | " + " | ".join(workloads) + " |", "| --- |" + " --- |" * len(workloads)]
    for name, _ in variants[1:]:
        cells = []
        for w in workloads:
            rs = sorted(base[r["cycle"]][w] / r[w] for r in lines if r["variant"] == name)
            cells.append("%.3f [%.3f-%.3f]" % (statistics.median(rs), rs[0], rs[-1]))
        rows.append("| %s | %s |" % (name, " | ".join(cells)))
    full = {w: statistics.median(r[w] for r in lines if r["variant"] == "full") for w in workloads}
    text = ("Speed against no mask in the same cycle (1.0: free), median [range] of %d cycles.\n"
            "Unmasked ms per kernel: %s\n\n%s\n") % (args.cycles, ", ".join("%s %.4g" % (w, full[w]) for w in workloads), "\n".join(rows))
    with open(os.path.join(args.out, "maskcost.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
