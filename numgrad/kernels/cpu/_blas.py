"""BLAS matrix products callable from compiled kernels.

A kernel that loops over a batch and multiplies small matrices at each step (the
convolutions, ``conv.py``) would pay a Python round trip per product through NumPy. Instead it
calls ``gemm`` directly: NumPy's own OpenBLAS exports the CBLAS interface with 64-bit integers
(``scipy_cblas_sgemm64_`` in NumPy 2's wheels, ``cblas_sgemm64_`` in older ones), and
``bind()`` registers those functions with LLVM under fixed names. Compiled code refers to the
names, not to addresses, so it caches to disk like any other kernel; the names are bound again
in each process when this module loads, before any kernel that uses them can load.

Where NumPy's BLAS is not such an OpenBLAS (another vendor, another OS), ``AVAILABLE`` is
False and callers use NumPy's ``matmul`` instead.
"""

import ctypes
import os
import threading

import llvmlite.binding as llvm
from numba import types

from numgrad.kernels.cpu._openblas import library

# CBLAS enumerations
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112

_I = types.int64


def _signature(real):
    # gemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    return types.void(types.int32, types.int32, types.int32, _I, _I, _I, real, types.voidptr,
                      _I, types.voidptr, _I, real, types.voidptr, _I)


sgemm = types.ExternalFunction("numgrad_cblas_sgemm64", _signature(types.float32))
dgemm = types.ExternalFunction("numgrad_cblas_dgemm64", _signature(types.float64))

_PREFIXES = ("scipy_", "")
_THREADS = {}  # "get"/"set": OpenBLAS's thread count functions


def bind():
    """Register NumPy's OpenBLAS sgemm/dgemm (64-bit integer CBLAS) under the names above;
    whether it could."""
    lib = library()
    if lib is None:
        return False
    for prefix in _PREFIXES:
        s = getattr(lib, prefix + "cblas_sgemm64_", None)
        d = getattr(lib, prefix + "cblas_dgemm64_", None)
        get = getattr(lib, prefix + "openblas_get_num_threads64_", None)
        put = getattr(lib, prefix + "openblas_set_num_threads64_", None)
        if None not in (s, d, get, put):
            llvm.add_symbol("numgrad_cblas_sgemm64", ctypes.cast(s, ctypes.c_void_p).value)
            llvm.add_symbol("numgrad_cblas_dgemm64", ctypes.cast(d, ctypes.c_void_p).value)
            _THREADS.update(get=get, set=put)
            return True
    return False


_HOLD = {"lock": threading.Lock(), "depth": 0, "before": 1}
# a child forked while another thread held it gets a free lock and no holders
os.register_at_fork(after_in_child=lambda: _HOLD.update(lock=threading.Lock(), depth=0))


class one_thread:
    """``with one_thread():`` NumPy's OpenBLAS runs each call on the calling thread only
    (for kernels whose own threads call BLAS); its thread count is restored when the last
    of any overlapping holders (from several Python threads) leaves."""

    __slots__ = ()

    def __enter__(self):
        with _HOLD["lock"]:
            if _HOLD["depth"] == 0:
                _HOLD["before"] = _THREADS["get"]()
                _THREADS["set"](1)
            _HOLD["depth"] += 1

    def __exit__(self, *exc):
        with _HOLD["lock"]:
            _HOLD["depth"] -= 1
            if _HOLD["depth"] == 0:
                _THREADS["set"](_HOLD["before"])


AVAILABLE = bind()
