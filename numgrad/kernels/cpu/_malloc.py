"""Keep freed memory of large arrays in the process instead of handing it back to the OS.

glibc serves large allocations with mmap and trims the heap top whenever more than a
threshold is free; both thresholds move with the sizes freed. A training step frees and
reallocates arrays of a few MiB every time, so with the moving thresholds every fresh array
faults in its pages again: on the 2-core test machine the CNN step spent 7-9 ms of its
18 ms in the kernel (2,400 page faults per step) and the 1M-element workload run after it
went from 3.8 to 11 ms. Fixing the thresholds (arrays up to 32 MiB come from the heap, up
to 128 MiB of free heap is kept) makes those steps fault-free. ``settle()`` does this once,
when the first CPU kernel loads, unless the user tuned malloc through its environment
variables or set ``NUMGRAD_MALLOC_TUNING=0``; it does nothing on other C libraries.
"""

import ctypes
import ctypes.util
import os

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")

_state = {"settled": False}


def settle():
    """Fix glibc's mmap and trim thresholds (once; see the module docstring)."""
    if _state["settled"]:
        return
    _state["settled"] = True
    if os.environ.get("NUMGRAD_MALLOC_TUNING", "1") == "0":
        return
    if any(v in os.environ for v in _USER_VARIABLES):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # glibc only  # noqa: B018
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
