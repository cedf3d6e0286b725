"""A stand-in for torch in the dry runs of bench/gpu's scripts (DRY=1
bench/gpu/memlimit-e2e.sh): the few calls bench/gpu/memhog.py makes, with
no GPU, and device memory limited as MPS limits a client's on an H100
(docs/results/memlimit-h100): CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=2252M",
"0=2G") caps all the process holds on device 0, its CUDA context
(DRYTORCH_CONTEXT_MIB, 512 by default: PyTorch's was about 500 MiB there)
included, and an allocation that would reach it raises
torch.OutOfMemoryError with PyTorch's message ("CUDA out of memory. Tried
to allocate ..."): under a 2 GiB limit 1280 MiB of 256 MiB blocks fit, as
on the H100. Nothing is allocated for real: sizes are only counted.
"""
import os

uint8 = "uint8"


class OutOfMemoryError(RuntimeError):
    """PyTorch's error when CUDA refuses an allocation."""


_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "M": 2**20, "MB": 2**20, "G": 2**30, "GB": 2**30}
_held = 0


def _limit():
    """The limit of device 0 in bytes, None when there is none."""
    for part in os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "").split(","):
        dev, _, lim = part.partition("=")
        if dev.strip() != "0" or not lim.strip():
            continue
        lim = lim.strip().upper()
        digits = lim.rstrip("KMGB")
        return int(float(digits) * _UNITS[lim[len(digits):]])
    return None


def empty(n, dtype=None, device=None):
    """Counts n bytes on the device (the context at the first), or raises
    OutOfMemoryError when they would reach the limit."""
    global _held
    if device != "cuda":
        return _Tensor(n)
    if _held == 0:
        _held = int(os.environ.get("DRYTORCH_CONTEXT_MIB", "512")) * 2**20
    lim = _limit()
    if lim is not None and _held + n >= lim:
        raise OutOfMemoryError(
            "CUDA out of memory. Tried to allocate %.2f MiB. GPU 0 has a total capacity of %.2f GiB of which %.2f MiB is free. "
            "Including non-PyTorch memory, this process has %.2f GiB memory in use. (dry run: no GPU; the limit is "
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)" % (n / 2**20, lim / 2**30, max(lim - _held, 0) / 2**20, _held / 2**30))
    _held += n
    return _Tensor(n)


class _Tensor:
    def __init__(self, n):
        self.nbytes = n


class cuda:
    """torch.cuda: nothing to wait for."""

    @staticmethod
    def synchronize():
        pass
