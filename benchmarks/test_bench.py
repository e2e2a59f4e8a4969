"""pytest-benchmark suite: each workload with numgrad eager, numgrad.compile (whole step, and
the forward form "numgrad.compile fwd") and, when installed, PyTorch, jax.jit, HIPS autograd
and mygrad, grouped per workload:

    pytest benchmarks/ --benchmark-group-by=group

(``--benchmark-disable`` runs every workload once as a plain test, as CI does.)
"""

import pytest
from workloads import LIBS, SMALL, WORKLOADS, available, build

COMPILED = ("numgrad.compile", "numgrad.compile fwd", "jax.jit")
CASES = [(w, lib) for w in WORKLOADS for lib in LIBS + COMPILED
         if lib in ("numgrad", "torch") + COMPILED or w in SMALL]


@pytest.mark.parametrize("workload,lib", CASES, ids=[f"{w}-{lib}" for w, lib in CASES])
def test_workload(benchmark, workload, lib):
    if not available(lib):
        pytest.skip(f"{lib} is not installed")
    run = build(workload, lib)
    if run is None:
        pytest.skip(f"{lib} cannot run {workload}")
    run()  # compile / warm up outside the measurement
    benchmark.group = workload
    benchmark.extra_info["lib"] = lib
    benchmark(run)
