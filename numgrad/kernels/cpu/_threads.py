"""Start Numba's thread pool with a short spin before its idle threads sleep.

With the OpenMP threading layer, the workers of a parallel kernel spin for a while after it
ends (libgomp's default spin count); the next BLAS call then shares the cores with them.
On the 2-core test machine the 8 GEMMs of the CNN step took 4-5 ms per step with a short
spin instead of 7-10 ms. libgomp reads ``GOMP_SPINCOUNT`` once, when it loads, so ``settle()``
sets the variable only while Numba starts its threads (when the first CPU kernel loads)
and removes it afterwards (a PyTorch imported later finds this libgomp loaded, by its
soname, and shares it). A user's own ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is left alone.

Import order: PyTorch imported first puts its own libgomp in the global symbol scope. A Numba
threading layer loaded after that would bind its OpenMP calls to PyTorch's runtime (global
symbols come first) and run on its long-spinning threads: the 2-thread MLP step took
1.07-1.16 ms instead of 0.74-0.98 ms. So the layer is loaded with ``RTLD_DEEPBIND``: its own
dependencies come first, and Numba gets a libgomp of its own (the system's file, a separate
copy from PyTorch's), with the short spin, as when numgrad comes first. Only the loading of
the layer is affected.
"""

import os
import sys

SPIN_COUNT = "3000"

_state = {"settled": False}


def settle():
    """Start Numba's threading layer with ``GOMP_SPINCOUNT=SPIN_COUNT`` (once)."""
    if _state["settled"]:
        return
    _state["settled"] = True
    spin = "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ
    if spin:
        os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        _load_layer()
    finally:
        if spin:
            del os.environ["GOMP_SPINCOUNT"]


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
