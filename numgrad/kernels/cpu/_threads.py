"""Start Numba's thread pool with a short spin before its idle threads sleep.

With the OpenMP threading layer, the workers of a parallel kernel spin for a while after it
ends (libgomp's default spin count); the next BLAS call then shares the cores with them.
On the 2-core test machine the 8 GEMMs of the CNN step took 4-5 ms per step with a short
spin instead of 7-10 ms. libgomp reads ``GOMP_SPINCOUNT`` once, when it loads, so ``settle()``
sets the variable only while Numba starts its threads (when the first CPU kernel loads)
and removes it afterwards: OpenMP libraries loaded later (PyTorch's own copy, say) keep
their defaults. A user's own ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is left alone.
"""

import os

SPIN_COUNT = "3000"

_state = {"settled": False}


def settle():
    """Start Numba's threading layer with ``GOMP_SPINCOUNT=SPIN_COUNT`` (once)."""
    if _state["settled"]:
        return
    _state["settled"] = True
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        return
    import numba

    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        numba.get_num_threads()  # loads the threading layer (and libgomp) now
    except (ValueError, RuntimeError):  # no threading layer: the kernels say so when run
        pass
    finally:
        del os.environ["GOMP_SPINCOUNT"]
