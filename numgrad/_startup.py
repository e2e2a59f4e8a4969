"""What ``import numgrad`` must do before anything imports NumPy (see numgrad/__init__.py):
note whether NumPy's OpenBLAS already loaded, then ask it to let idle threads sleep."""

import os
import sys

numpy_came_first = "numpy" in sys.modules and "OPENBLAS_THREAD_TIMEOUT" not in os.environ
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
