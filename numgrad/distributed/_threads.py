"""Give each rank its share of the machine's cores.

``mpiexec -n 2`` on a 16-core machine starts two processes that would each run 16 numgrad
kernel threads and 16 OpenBLAS threads: 64 threads on 16 cores, and a step many times slower
than it should be. ``share(local_size)`` sets numgrad's kernel threads and NumPy's OpenBLAS
threads to ``cores // ranks on this machine`` (at least 1), each only where the user did not
choose (``NUMBA_NUM_THREADS``/``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``/
``OMP_NUM_THREADS``). It changes no result.
"""

import os

from numgrad.kernels.cpu._openblas import set_threads


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share(local_size):
    """Threads per rank for ``local_size`` ranks on this machine; returns the count used."""
    n = max(1, cores() // max(1, local_size))
    env = os.environ
    if "NUMBA_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in env:
        import numba

        import numgrad.kernels.cpu  # noqa: F401  (starts Numba's threads with numgrad's settings)
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if "OPENBLAS_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in env:
        set_threads(n)
    return n
