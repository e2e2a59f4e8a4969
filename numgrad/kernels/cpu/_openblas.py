"""Quiet NumPy's OpenBLAS worker threads when NumPy was imported before numgrad.

After each call OpenBLAS keeps its workers spinning for 2**28 cycles unless
``OPENBLAS_THREAD_TIMEOUT`` was set when the library loaded; on a small machine they hold
the cores that numgrad's parallel kernels need (2 cores: MLP step 8.0 ms instead of 2.4 ms,
CNN step 66 ms instead of 22 ms). ``import numgrad`` sets the variable, which is enough when
NumPy loads afterwards. When NumPy came first, ``settle()`` asks the loaded OpenBLAS to read
its environment again and stops its idle workers, which it restarts with the short timeout
on its next call. Results never change; anything unexpected leaves OpenBLAS as it is.
"""

import ctypes
import os
import threading

_state = {"settled": False}


def _loaded_openblas():
    """Path of the OpenBLAS shared library NumPy loaded, or None."""
    numpy_dir = os.path.dirname(__import__("numpy").__file__)
    homes = (numpy_dir + os.sep, numpy_dir + ".libs" + os.sep)  # not SciPy's own copy
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                if "openblas" in os.path.basename(path) and path.startswith(homes):
                    return path
    except OSError:
        return None
    return None


def settle(numpy_came_first):
    """Give an OpenBLAS that loaded before ``import numgrad`` the short thread timeout."""
    if _state["settled"]:
        return
    _state["settled"] = True
    # only our own default, only while no other Python thread could be inside a BLAS call
    if not numpy_came_first or threading.active_count() != 1:
        return
    try:
        path = _loaded_openblas()
        if path is None:
            return
        lib = ctypes.CDLL(path)
        read_env, shutdown = lib.openblas_read_env, lib.blas_thread_shutdown_
        timeout = lib.openblas_thread_timeout
    except (OSError, AttributeError):
        return
    if timeout() != 0:  # the library already honours a timeout
        return
    read_env()
    if timeout() != 0:
        shutdown()


def library():
    """NumPy's loaded OpenBLAS as a ``ctypes.CDLL``, or None."""
    path = _loaded_openblas()
    if path is None:
        return None
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


def set_threads(n):
    """Ask NumPy's OpenBLAS for ``n`` threads; whether it could be asked."""
    lib = library()
    if lib is None:
        return False
    # NumPy's wheels ship OpenBLAS with prefixed, suffixed names (scipy_openblas64_)
    for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                 "openblas_set_num_threads"):
        setter = getattr(lib, name, None)
        if setter is not None:
            setter(ctypes.c_int(n))
            return True
    return False
