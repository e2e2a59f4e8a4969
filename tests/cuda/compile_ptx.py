"""Compile, for a real GPU, every CUDA kernel the simulator tests launched.

Usage: ``python tests/cuda/compile_ptx.py RECORD [CC]`` (or ``--probe``: is NVVM installed?),
where RECORD is the file written by running the CUDA tests with ``NUMBA_ENABLE_CUDASIM=1
NUMGRAD_CUDA_RECORD=RECORD``. Needs numba-cuda with NVVM (``pip install ".[cuda]"``) but no
GPU: kernels are compiled to PTX for compute capability CC (default 9.0, an H100), which runs
Numba's full CUDA typing and lowering on each (kernel, argument types) pair. Prints one line
per failure; exits 1 if any.
"""

import importlib
import pickle
import sys

import numba.cuda.dispatcher as _dispatcher
from numba import config, cuda

assert not config.ENABLE_CUDASIM, "run without NUMBA_ENABLE_CUDASIM"


class _Device:
    compute_capability = (9, 0)


# device functions ask the current device for its compute capability; there is none here
_dispatcher.get_current_device = lambda: _Device()

from numgrad.kernels.cuda import _launch  # noqa: E402


def rebuild(r):
    kind = r[0]
    if kind == "const":
        return r[1]
    if kind == "attr":
        return getattr(importlib.import_module(r[1]), r[2])
    if kind == "device_fn":
        obj = getattr(importlib.import_module(r[1]), r[2])
        if hasattr(obj, "opdef"):  # a formula declared in the op registry: its kernel's
            obj = obj.opdef.kernel()
        return _launch.device_fn(getattr(obj, "formula", obj), r[3])
    if kind == "kernel":
        template = getattr(importlib.import_module(r[1]), r[2])
        return _launch.kernel(template, r[3], **{b: rebuild(v) for b, v in r[4].items()})
    raise ValueError(r)


def probe():
    """Whether NVVM is installed (exit status 0), so PTX can be made here."""
    def k(x):
        x[0] = 1.0
    from numba import float32
    cuda.compile_ptx(k, (float32[::1],), cc=(9, 0))
    return 0


def main(path, cc=(9, 0)):
    _Device.compute_capability = cc
    with open(path, "rb") as fh:
        seen = pickle.load(fh)
    failures = 0
    for (_, argtypes), (recipe, _) in sorted(seen.items(), key=lambda kv: kv[0][0]):
        k = rebuild(recipe)
        try:
            cuda.compile_ptx(k.py_func, argtypes, cc=cc)
        except Exception as e:  # noqa: BLE001 - report every failure, then fail
            failures += 1
            msg = str(e).strip().splitlines()
            print(f"FAIL {recipe[:4]} {argtypes}: {msg[0] if msg else type(e).__name__}")
    print(f"{len(seen) - failures}/{len(seen)} kernel signatures compiled to PTX for sm_"
          f"{cc[0]}{cc[1]}")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "--probe":
        sys.exit(probe())
    cc = tuple(int(c) for c in sys.argv[2].split(".")) if len(sys.argv) > 2 else (9, 0)
    sys.exit(main(sys.argv[1], cc))
