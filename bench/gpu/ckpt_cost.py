"""What a restart costs each job type of MMK Table III, measured on a GPU.

  python3 ckpt_cost.py [--reps 3] [--dir /tmp/ckpt] [--jobs a,b] [--dry]

mmk's checkpoint contract (docs/jobs.md): on SIGTERM a job saves into
$MMK_CHECKPOINT_DIR and exits; started again it restores and goes on. A
restart therefore costs the save, a new process's start-up (Python,
torch, CUDA context, model build, first iteration) and the restore. This
script measures each part and prints one JSON line per job type (and a
first line for the process itself):

  {"what": "process", "import_s", "cuda_init_s"}
  {"what": "job", "job", "batch", "mode", "ckpt_mib", "build_s",
   "first_iter_s", "save_s": [..], "restore_s": [..], "iter_ms"}

save_s: torch.save of the model's and optimizer's state to a file on the
local disk, flushed and fsynced (the contract asks for a checkpoint that
survives the node); restore_s: torch.load onto the GPU and
load_state_dict, synchronised. Each is repeated --reps times (the file
removed in between). build_s and first_iter_s are one cold measurement
per type in this process (imports and the CUDA context are paid once, in
the process line). --dry does no GPU work: lines of the same shape from
sleeps, for the orchestration's tests.
"""
import argparse
import json
import os
import sys
import time

T0 = time.perf_counter()


def fsync_save(torch, state, path):
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def measure(torch, workload, job, reps, d):
    model_name, mode, batch = workload.JOBS[job]
    t = time.perf_counter()
    model, make, loss_fn = workload.build(model_name, batch)
    model = model.to("cuda")
    torch.cuda.synchronize()
    build_s = time.perf_counter() - t
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9) if mode == "train" else None
    x, y = make("cuda")

    def step():
        if opt is None:
            with torch.inference_mode():
                model(*x)
            return
        opt.zero_grad(set_to_none=True)
        loss_fn(model(*x), y).backward()
        opt.step()

    t = time.perf_counter()
    step()
    torch.cuda.synchronize()
    first_iter_s = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    iter_ms = (time.perf_counter() - t) / 5 * 1e3
    path = os.path.join(d, job + ".pt")
    saves, restores = [], []
    for _ in range(reps):
        state = {"model": model.state_dict(), "optimizer": opt.state_dict() if opt else None, "step": 5}
        torch.cuda.synchronize()
        t = time.perf_counter()
        fsync_save(torch, state, path)
        saves.append(time.perf_counter() - t)
        t = time.perf_counter()
        loaded = torch.load(path, map_location="cuda", weights_only=True)
        model.load_state_dict(loaded["model"])
        if opt is not None:
            opt.load_state_dict(loaded["optimizer"])
        torch.cuda.synchronize()
        restores.append(time.perf_counter() - t)
        size = os.path.getsize(path)
        os.remove(path)
        del loaded, state
    del model, opt, x, y
    torch.cuda.empty_cache()
    return {"what": "job", "job": job, "batch": batch, "mode": mode, "ckpt_mib": round(size / 2**20, 1),
            "build_s": round(build_s, 3), "first_iter_s": round(first_iter_s, 3), "iter_ms": round(iter_ms, 3),
            "save_s": [round(s, 4) for s in saves], "restore_s": [round(s, 4) for s in restores]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/mmk-ckpt")
    ap.add_argument("--jobs", default="")
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    if args.reps < 1:
        sys.exit("--reps must be at least 1")
    os.makedirs(args.dir, exist_ok=True)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
    if args.dry:
        jobs = [j for j in args.jobs.split(",") if j] or ["resnet50_train", "vgg16_infer"]
        print(json.dumps({"what": "process", "import_s": 0.0, "cuda_init_s": 0.0, "dry": True}), flush=True)
        for j in jobs:
            time.sleep(0.01)
            print(json.dumps({"what": "job", "job": j, "batch": 1, "mode": "train" if j.endswith("_train") else "infer",
                              "ckpt_mib": 1.0, "build_s": 0.01, "first_iter_s": 0.01, "iter_ms": 1.0,
                              "save_s": [0.01] * args.reps, "restore_s": [0.01] * args.reps, "dry": True}), flush=True)
        return
    import torch
    import workload
    import_s = time.perf_counter() - T0
    t = time.perf_counter()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    print(json.dumps({"what": "process", "import_s": round(import_s, 3), "cuda_init_s": round(time.perf_counter() - t, 3),
                      "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
    torch.set_num_threads(2)
    jobs = [j for j in args.jobs.split(",") if j] or sorted(workload.JOBS)
    for j in jobs:
        if j not in workload.JOBS:
            sys.exit(f"--jobs: unknown job {j!r}; known: {', '.join(sorted(workload.JOBS))}")
        print(json.dumps(measure(torch, workload, j, args.reps, args.dir)), flush=True)


if __name__ == "__main__":
    main()
