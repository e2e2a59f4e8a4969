"""pytest-benchmark suite: each workload with numgrad eager, numgrad.compile (whole step, and
the forward form "numgrad.compile fwd") and, when installed, PyTorch, jax.jit, HIPS autograd
and mygrad, grouped per workload:

    pytest benchmarks/ --benchmark-group-by=group

(``--benchmark-disable`` runs every workload once as a plain test, as CI does; the model
workloads, rows 8-13, then run at their reduced sizes. ``NUMGRAD_BENCH_SMALL=1`` or ``=0``
chooses the sizes either way.)
"""

import os
import warnings

import pytest
from workloads import LIBS, MODELS, SMALL, WORKLOADS, available, build

COMPILED = ("numgrad.compile", "numgrad.compile fwd", "jax.jit")
CASES = [(w, lib) for w in WORKLOADS for lib in LIBS + COMPILED
         if lib in ("numgrad", "torch") + COMPILED or w in SMALL]


def _small(config):
    env = os.environ.get("NUMGRAD_BENCH_SMALL")
    if env is not None:
        return env not in ("", "0")
    return bool(config.getoption("benchmark_disable", False))


@pytest.mark.parametrize("workload,lib", CASES, ids=[f"{w}-{lib}" for w, lib in CASES])
def test_workload(benchmark, request, workload, lib):
    if not available(lib):
        pytest.skip(f"{lib} is not installed")
    small = workload in MODELS and _small(request.config)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = build(workload, lib, small=small)
    if run is None:
        pytest.skip(f"{lib} cannot run {workload}")
    for w in caught:  # shown in pytest's summary as before; a compiled step that runs
        # eagerly still runs, and the benchmark's record says so
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if str(w.message).startswith("numgrad.compile"):
            benchmark.extra_info["eager"] = str(w.message)
    run()  # compile / warm up outside the measurement
    benchmark.group = workload + (" (small)" if small else "")
    benchmark.extra_info["lib"] = lib
    benchmark(run)
