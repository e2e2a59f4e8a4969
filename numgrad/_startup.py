"""What ``import numgrad`` must do before anything else imports NumPy (see numgrad/__init__.py):
note whether NumPy's OpenBLAS already loaded, and load it with a short thread timeout.

OpenBLAS reads ``OPENBLAS_THREAD_TIMEOUT`` once, when it loads (or when asked to read its
environment again, numgrad.kernels.cpu._openblas). numgrad puts the variable in the process
environment only while that happens and removes it afterwards, so the environment the user's
code, other libraries and child processes see is the one the user gave. A value the user set
is left alone and used.
"""

import contextlib
import os
import sys

OPENBLAS_TIMEOUT = "4"

numpy_came_first = "numpy" in sys.modules and "OPENBLAS_THREAD_TIMEOUT" not in os.environ


@contextlib.contextmanager
def environment(name, value):
    """``name=value`` in the process environment inside the block, unless the user set
    ``name``; removed again on leaving it."""
    if name in os.environ:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


def openblas_timeout():
    """The environment OpenBLAS reads its thread timeout from (a context manager)."""
    return environment("OPENBLAS_THREAD_TIMEOUT", OPENBLAS_TIMEOUT)


with openblas_timeout():
    import numpy  # noqa: F401,E402  (NumPy's OpenBLAS reads the variable as it loads)
