"""Give each rank its share of the machine's cores.

``mpiexec -n 2`` on a 16-core machine starts two processes that would each run 16 numgrad
kernel threads and 16 OpenBLAS threads: 64 threads on 16 cores, and a step many times slower
than it should be. ``share(local_size)`` sets numgrad's kernel threads and NumPy's OpenBLAS
threads to ``cores // ranks on this machine`` (at least 1), each only where the user did not
choose (``NUMBA_NUM_THREADS``/``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``/
``OMP_NUM_THREADS``). It changes no result.
"""

import ctypes
import os


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _set_blas_threads(n):
    from numgrad.kernels.cpu._openblas import _loaded_openblas
    path = _loaded_openblas()
    if path is None:
        return False
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return False
    # NumPy's wheels ship OpenBLAS with prefixed, suffixed names (scipy_openblas64_)
    for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                 "openblas_set_num_threads"):
        setter = getattr(lib, name, None)
        if setter is not None:
            setter(ctypes.c_int(n))
            return True
    return False


def share(local_size):
    """Threads per rank for ``local_size`` ranks on this machine; returns the count used."""
    n = max(1, cores() // max(1, local_size))
    env = os.environ
    if "NUMBA_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in env:
        import numgrad
        numgrad.set_num_threads(n)
    if "OPENBLAS_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in env:
        _set_blas_threads(n)
    return n
