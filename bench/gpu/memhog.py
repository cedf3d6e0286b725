"""Allocates device memory until a target or an error (bench/gpu/memlimit.sh).

  python3 memhog.py --gib 4 [--step-mib 256] [--hold-s 2]

Allocates --step-mib blocks with torch until --gib GiB are held or CUDA
refuses, holds them --hold-s seconds, and prints one JSON line: what it
asked for, what it got, the error text (empty if none) and the memory
limit it ran under (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT). It exits 0 when it
got all it asked for, 3 when CUDA refused (the limit held).
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, required=True)
    ap.add_argument("--step-mib", type=int, default=256)
    ap.add_argument("--hold-s", type=float, default=2.0)
    args = ap.parse_args()
    import torch

    blocks, got, err = [], 0, ""
    want = int(args.gib * 1024)
    while got < want:
        n = min(args.step_mib, want - got)
        try:
            blocks.append(torch.empty(n * 2**20, dtype=torch.uint8, device="cuda"))
        except RuntimeError as e:  # torch.OutOfMemoryError is a RuntimeError
            err = str(e).splitlines()[0][:300]
            break
        got += n
    torch.cuda.synchronize()
    time.sleep(args.hold_s)
    print(json.dumps({"asked_mib": want, "got_mib": got, "error": err,
                      "limit": os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", ""),
                      "mmk_job": os.environ.get("MMK_JOB_ID", "")}), flush=True)
    sys.exit(3 if err else 0)


if __name__ == "__main__":
    main()
