"""numgrad's thread settings stay numgrad's: importing it (and loading its CPU kernels, which
starts Numba's OpenMP runtime) leaves the process environment as the user gave it; which
OpenMP runtimes each import order loads (numgrad/kernels/cpu/_threads.py,
numgrad/_startup.py). Facts only, no timings."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

_PROBE = """
    import json, os, sys
    {first}
    before = dict(os.environ)
    import numgrad
    import numgrad.kernels.cpu  # OpenBLAS settled, Numba's threading layer loaded
    from numgrad.kernels.cpu import _threads
    {after}
    import numba
    changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
    with open("/proc/self/maps") as maps:
        omp = sorted({{line.split()[-1] for line in maps if "libgomp" in line}})
    print(json.dumps({{"changed": changed, "layer": numba.threading_layer(), "omp": omp,
                      "short_spin": _threads._state["short_spin"],
                      "spincount": os.environ.get("GOMP_SPINCOUNT")}}))
"""

_CLEAN = ("OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY")


def _probe(first="", after="", env=None):
    full = {k: v for k, v in os.environ.items() if k not in _CLEAN}
    full.update(env or {})
    code = textwrap.dedent(_PROBE).format(first=first, after=after)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _has_torch():
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def test_numgrad_first_leaves_the_environment_alone():
    """NumPy imported first (OpenBLAS reads its environment again), numgrad's kernels loaded,
    then PyTorch when installed: no variable added or changed; PyTorch's own runtime and
    Numba's private copy are both loaded, as when PyTorch comes first."""
    after = "import torch" if _has_torch() else ""
    got = _probe(first="import numpy", after=after)
    assert got["changed"] == []
    if got["layer"] != "omp":
        pytest.skip(f"threading layer {got['layer']}, not OpenMP")
    assert got["short_spin"] is True
    if after and sys.platform.startswith("linux"):
        assert len(got["omp"]) == 2 and any("torch" in p for p in got["omp"]), got["omp"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's loader")
def test_pytorch_first_gets_numgrad_a_private_runtime_with_the_short_spin():
    pytest.importorskip("torch")
    got = _probe(first="import torch")
    assert got["changed"] == []
    if got["layer"] != "omp":
        pytest.skip(f"threading layer {got['layer']}, not OpenMP")
    torch_omp = [p for p in got["omp"] if "torch" in p]
    assert torch_omp and len(got["omp"]) == 2, got["omp"]  # PyTorch's and Numba's own
    assert got["short_spin"] is True


def test_the_users_spin_settings_are_kept():
    pytest.importorskip("torch")
    got = _probe(first="import torch", env={"GOMP_SPINCOUNT": "5000"})
    assert got["changed"] == [] and got["spincount"] == "5000"
    assert got["short_spin"] is False
