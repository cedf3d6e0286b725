"""One profiling workload of MMK Table III: random weights, random inputs.

  python3 workload.py --job resnet50_train --batch 32 [--warmup 1 --seconds 2] [--wait-go]

With --wait-go the script imports torch and builds the model on the CPU,
prints "ready" and waits for "go" on stdin before it touches the GPU, so
that a campaign can prepare the next run while the current one measures.
After its warm-up it prints "warm" and waits for "measure"; it then
measures until "stop" arrives, so that co-located jobs measure the same
window. Without --wait-go it measures --seconds after its warm-up. At the
end it prints one JSON line: {"job", "batch", "iters", "items_per_s",
"iter_ms_p50", "iter_cv", "first_iter_s", "peak_reserved_mib",
"device_used_mib"}.
"""
import argparse
import json
import sys
import threading
import time

T0 = time.perf_counter()

import torch
import torchvision

JOBS = {
    # job: (model, mode, default batch)
    "vgg16_infer": ("vgg16", "infer", 32),
    "mobilenet_infer": ("mobilenet_v2", "infer", 32),
    "resnet18_infer": ("resnet18", "infer", 32),
    "bert_train": ("bert", "train", 8),
    "resnet152_train": ("resnet152", "train", 16),
    "densenet201_train": ("densenet201", "train", 16),
    "transformer_infer": ("transformer", "infer", 32),
    "transformer_train": ("transformer", "train", 32),
    "densenet121_infer": ("densenet121", "infer", 32),
    "densenet121_train": ("densenet121", "train", 16),
    "vgg19_infer": ("vgg19", "infer", 32),
    "vgg19_train": ("vgg19", "train", 32),
    "resnet50_infer": ("resnet50", "infer", 32),
    "resnet50_train": ("resnet50", "train", 32),
}

SEQ = 128


def build(model_name, batch):
    """Returns the model and a function making one batch (inputs, target)."""
    if model_name == "bert":
        import transformers

        cfg = transformers.BertConfig()  # bert-base
        model = transformers.BertForSequenceClassification(cfg)
        make = lambda dev: (
            (torch.randint(0, cfg.vocab_size, (batch, SEQ), device=dev),),
            torch.randint(0, 2, (batch,), device=dev),
        )
        return model, make, lambda out, y: torch.nn.functional.cross_entropy(out.logits, y)
    if model_name == "transformer":
        model = torch.nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, batch_first=True)
        make = lambda dev: (
            (torch.randn(batch, SEQ, 512, device=dev), torch.randn(batch, SEQ, 512, device=dev)),
            torch.randn(batch, SEQ, 512, device=dev),
        )
        return model, make, lambda out, y: torch.nn.functional.mse_loss(out, y)
    model = getattr(torchvision.models, model_name)()
    make = lambda dev: (
        (torch.randn(batch, 3, 224, 224, device=dev),),
        torch.randint(0, 1000, (batch,), device=dev),
    )
    return model, make, lambda out, y: torch.nn.functional.cross_entropy(out, y)


def make_step(model, make, loss_fn, mode, dev="cuda"):
    """Moves the model to dev and returns a function running one iteration:
    a training step (SGD) or an inference forward pass."""
    model = model.to(dev)
    x, y = make(dev)
    if mode == "train":
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(model(*x), y).backward()
            opt.step()

        return step
    model.eval()

    def step():
        with torch.inference_mode():
            model(*x)

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True, choices=sorted(JOBS))
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--wait-go", action="store_true")
    args = ap.parse_args()
    model_name, mode, default_batch = JOBS[args.job]
    batch = args.batch or default_batch

    torch.set_num_threads(2)
    model, make, loss_fn = build(model_name, batch)
    if args.wait_go:
        print("ready", flush=True)
        if not sys.stdin.readline():
            return

    step = make_step(model, make, loss_fn, mode)

    end = time.perf_counter() + args.warmup
    first_iter_s = None
    while True:
        step()
        torch.cuda.synchronize()
        if first_iter_s is None:
            first_iter_s = time.perf_counter() - T0
        if time.perf_counter() >= end:
            break
    stop = threading.Event()
    if args.wait_go:
        print("warm", flush=True)
        # Keep the GPU busy as in the run until every co-runner is warm.
        measure = threading.Event()

        def control():
            for line in sys.stdin:
                if line.startswith("measure"):
                    measure.set()
                elif line.startswith("stop"):
                    stop.set()
                    return
            stop.set()

        threading.Thread(target=control, daemon=True).start()
        while not measure.is_set() and not stop.is_set():
            step()
            torch.cuda.synchronize()
    else:
        threading.Timer(args.seconds, stop.set).start()
    print("measuring", flush=True)
    times = []
    start = time.perf_counter()
    while not stop.is_set() or len(times) < 3:
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    mean = sum(times) / len(times)
    iter_cv = (sum((t - mean) ** 2 for t in times) / len(times)) ** 0.5 / mean
    times.sort()
    free, whole = torch.cuda.mem_get_info()
    print(json.dumps({
        "job": args.job, "batch": batch, "iters": len(times),
        "items_per_s": round(len(times) * batch / total, 3),
        "iter_ms_p50": round(times[len(times) // 2] * 1e3, 3),
        # The spread of the window's iterations: their standard deviation
        # over their mean (the campaign keeps it as the sample's iter_cv).
        "iter_cv": round(iter_cv, 5),
        # Start-up to the first finished iteration (imports, model build,
        # CUDA context, first step), and device memory in use at the end
        # (CUDA context included: exact when the job runs alone).
        "first_iter_s": round(first_iter_s, 3),
        "peak_reserved_mib": torch.cuda.max_memory_reserved() // 2**20,
        "device_used_mib": (whole - free) // 2**20,
    }), flush=True)


if __name__ == "__main__":
    main()
