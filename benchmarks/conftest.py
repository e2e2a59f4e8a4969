"""Make workloads importable and use the same thread count in every library."""

import os
import sys

# as `import numgrad` does when it comes first: OpenBLAS threads sleep instead of spinning
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

sys.path.insert(0, os.path.dirname(__file__))

THREADS = int(os.environ.get("NUMGRAD_BENCH_THREADS", os.cpu_count() or 1))


def pytest_configure(config):
    try:
        import torch
        torch.set_num_threads(THREADS)
    except ImportError:
        pass
