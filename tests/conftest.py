"""Shared test helpers: PyTorch (optional) conversion and float64 finite differences."""

import os

# Kernels compile where they are called, as they always did: on a cold cache a multithreaded
# kernel would otherwise run its serial twin while a background process compiles it (see
# numgrad/_background.py), and the suite would not test the multithreaded code it ships.
# tests/test_background.py turns it on where it tests it.
os.environ.setdefault("NUMGRAD_BACKGROUND_COMPILE", "0")
# Likewise the suite compiles its kernels instead of loading those `pip install` compiled
# (numgrad/_prebuild.py); tests/test_prebuilt.py tests those.
os.environ.setdefault("NUMGRAD_PREBUILT", "0")
# numgrad.compile's generated guards are checked against the full walk at every hit
os.environ.setdefault("NUMGRAD_CHECK_GUARDS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest

import numgrad as ng

try:  # PyTorch is a reference only; tests that need it skip without it
    import torch
except ImportError:  # pragma: no cover - exercised on machines without torch
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

# The head of a program run in a fresh interpreter that records, in ``compiled``, the qualified
# name of every function Numba compiles there (loads from a disk cache are not compiles).
COMPILE_EVENTS = """
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
"""


def to_torch(t, requires_grad=None):
    """A torch tensor with the same values, dtype and requires_grad as numgrad tensor ``t``."""
    arr = np.array(t.detach().numpy(), copy=True)
    out = torch.from_numpy(arr)
    rg = t.requires_grad if requires_grad is None else requires_grad
    if rg:
        out.requires_grad_(True)
    return out


def to_numpy(x):
    """NumPy array of a numgrad or torch tensor (detached)."""
    if isinstance(x, ng.Tensor):
        return np.array(x.detach().numpy())
    return x.detach().cpu().numpy()


def finite_difference(fn, arrays, index, weight, eps=1e-6):
    """d/d(arrays[index]) of sum(fn(*arrays) * weight) by central differences (float64)."""
    base = [np.array(a, dtype=np.float64) for a in arrays]
    x = base[index]
    grad = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = grad.reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        plus = np.sum(np.asarray(fn(*base)) * weight)
        flat[k] = old - eps
        minus = np.sum(np.asarray(fn(*base)) * weight)
        flat[k] = old
        gflat[k] = (plus - minus) / (2 * eps)
    return grad


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=""):
    a = to_numpy(actual) if not isinstance(actual, np.ndarray) else actual
    e = to_numpy(expected) if not isinstance(expected, np.ndarray) else expected
    assert a.shape == e.shape, f"{msg} shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=msg, equal_nan=True)


# The CUDA backend's tests run in their own process (see tests/test_cuda.py): on a GPU when
# one is present, otherwise on Numba's CUDA simulator, which must be chosen before Numba is
# imported.
collect_ignore = ["cuda"]


def raised(fn, *args, **kwargs):
    """(class name, message) of what ``fn(*args, **kwargs)`` raises (warnings silenced), or
    None: what tests compare between numgrad and PyTorch."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - compared between the libraries
        return type(e).__name__, str(e)
    return None


def run_on_simulator(script, timeout=600):
    """Run Python ``script`` from the repository root in a fresh process on Numba's CUDA
    simulator; it must print "ok" last."""
    import subprocess
    import sys
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", script], cwd=root, env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


# --- where the suite's time goes: wall and CPU seconds per test file ---------------------------
# The terminal summary lists the slowest files (CPU time counts the test's own threads and the
# processes it waited for, so a file that runs a subprocess is charged for it). With
# NUMGRAD_TEST_TIMES=<path>, every file's line is also appended to <path> as the file finishes,
# tagged with the pass (main, bounds, cudasim), so several passes can share one record.
try:
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None

_FILE_TIMES = {}  # test file -> [wall s, CPU s, tests]
_SLOWEST_FILES = 20


def _cpu_seconds():
    if resource is None:  # pragma: no cover
        return time.process_time()
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


def _pass_name():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "cudasim"
    return "bounds" if os.environ.get("NUMBA_BOUNDSCHECK") == "1" else "main"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall, cpu = time.perf_counter(), _cpu_seconds()
    yield
    path = item.location[0]
    record = _FILE_TIMES.setdefault(path, [0.0, 0.0, 0])
    record[0] += time.perf_counter() - wall
    record[1] += _cpu_seconds() - cpu
    record[2] += 1
    out = os.environ.get("NUMGRAD_TEST_TIMES")
    if out and (nextitem is None or nextitem.location[0] != path):
        with open(out, "a") as f:
            f.write(f"{record[0]:9.1f} {record[1]:9.1f} {record[2]:6d}  {_pass_name():7s} {path}\n")


def pytest_terminal_summary(terminalreporter):
    if not _FILE_TIMES:
        return
    rows = sorted(_FILE_TIMES.items(), key=lambda kv: -kv[1][0])[:_SLOWEST_FILES]
    terminalreporter.section(f"slowest {len(rows)} test files ({_pass_name()} pass)")
    terminalreporter.write_line(f"{'wall s':>9} {'CPU s':>9} {'tests':>6}  file")
    for path, (wall, cpu, n) in rows:
        terminalreporter.write_line(f"{wall:9.1f} {cpu:9.1f} {n:6d}  {path}")
