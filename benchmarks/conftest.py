"""Make workloads importable and use the same thread count in every library."""

import os
import sys

# as `import numgrad` does when it comes first: OpenBLAS threads sleep instead of spinning
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# steady-state timings: no background compile worker (numgrad/_background.py) sharing
# the cores while the rounds run on a cold kernel cache
os.environ.setdefault("NUMGRAD_BACKGROUND_COMPILE", "0")

sys.path.insert(0, os.path.dirname(__file__))

THREADS = int(os.environ.get("NUMGRAD_BENCH_THREADS", os.cpu_count() or 1))


def pytest_configure(config):
    # numgrad first: PyTorch puts its libgomp in the global symbol scope, and Numba started
    # after it would share PyTorch's OpenMP runtime (see benchmarks/report.py)
    import numgrad
    numgrad.set_num_threads(THREADS)
    try:
        import torch
        torch.set_num_threads(THREADS)
    except ImportError:
        pass
