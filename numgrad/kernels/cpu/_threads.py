"""Load Numba's threading layer so that numgrad's OpenMP settings never reach another library.

Numba's OpenMP layer (``omppool``) links the system's libgomp, whose soname is
``libgomp.so.1``, as is that of the libgomp PyTorch's wheel brings. The loader finds an
already loaded library by its soname, so the two import orders differ:

- numgrad's layer loads first: a PyTorch imported later would find Numba's runtime by its
  soname and run on the system's libgomp build instead of its own, which made PyTorch's
  2-thread GPT step 4-8x slower on the 2-core VM, with or without a short spin (as
  ``LD_PRELOAD`` of the system's libgomp into PyTorch alone does). So when PyTorch is
  installed and not yet imported, its own ``libgomp.so.1`` is loaded first (with the user's
  environment), and the case below applies.
- another ``libgomp.so.1`` (PyTorch's) loaded first: PyTorch puts it in the global symbol
  scope, where Numba's layer would bind its OpenMP calls to it and run on PyTorch's threads.
  The layer is loaded with ``RTLD_DEEPBIND`` (its own dependencies first), so it gets its own
  copy of the system's libgomp, which nothing else can reach (a later ``libgomp.so.1`` request
  finds the runtime loaded first).

In both orders Numba's runtime starts with a short spin (``GOMP_SPINCOUNT=SPIN_COUNT``, in
the environment only while it loads): its idle workers sleep soon after a kernel instead of
holding a core the next BLAS call needs.

A user's own ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is left alone in both cases.
"""

import os
import sys

from numgrad._startup import environment

SPIN_COUNT = "3000"

# short_spin: whether Numba's runtime was started with SPIN_COUNT
_state = {"settled": False, "short_spin": False}


def settle():
    """Load Numba's threading layer now (once; see the module docstring)."""
    if _state["settled"]:
        return
    _state["settled"] = True
    user = "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ
    _state["short_spin"] = not user
    _preload_pytorch_runtime()
    if not _state["short_spin"]:
        _load_layer()
        return
    with environment("GOMP_SPINCOUNT", SPIN_COUNT):
        _load_layer()


def _preload_pytorch_runtime():
    """Load the libgomp of an installed but not yet imported PyTorch wheel, with the user's
    environment, so that it is the process's ``libgomp.so.1`` and Numba's copy stays private
    (PyTorch imported later then runs on its own runtime, as when it comes first)."""
    import importlib.util

    try:
        spec = None if "torch" in sys.modules else importlib.util.find_spec("torch")
        if spec is None:
            return
        home = spec.submodule_search_locations[0]
        path = os.path.join(home, "lib", "libgomp.so.1")
        if os.path.exists(path):
            import ctypes
            ctypes.CDLL(path)
    except (ImportError, ValueError, OSError, TypeError, IndexError):
        return


def _load_layer():
    """Load Numba's threading layer now, its own libraries before any already in the global
    scope (``RTLD_DEEPBIND``, where the platform has it)."""
    import numba

    flags = sys.getdlopenflags() if hasattr(sys, "getdlopenflags") else None
    deep = getattr(os, "RTLD_DEEPBIND", 0)
    if flags is not None and deep:
        sys.setdlopenflags(flags | deep)
    try:
        numba.get_num_threads()  # loads the threading layer (and libgomp) now
    except (ValueError, RuntimeError):  # no threading layer: the kernels say so when run
        pass
    finally:
        if flags is not None and deep:
            sys.setdlopenflags(flags)
