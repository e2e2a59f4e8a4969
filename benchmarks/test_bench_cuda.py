"""GPU benchmarks: numgrad and PyTorch on 'cuda', grouped per workload. Skipped where the
library has no GPU (no NVIDIA driver, or a CPU-only PyTorch build).

    pytest benchmarks/test_bench_cuda.py --benchmark-group-by=group

``python benchmarks/cuda_report.py`` prints bandwidths, TFLOP/s and ratios as a table.
"""

import pytest
from cuda_workloads import CUDA_WORKLOADS, build, gpu_available

CASES = [(w, lib) for w in CUDA_WORKLOADS for lib in ("numgrad", "torch")]


@pytest.mark.parametrize("workload,lib", CASES, ids=[f"{w}-{lib}" for w, lib in CASES])
def test_cuda_workload(benchmark, workload, lib):
    try:
        ok = gpu_available(lib)
    except ImportError:
        ok = False
    if not ok:
        pytest.skip(f"{lib} has no GPU here")
    run, work = build(workload, lib)
    run()  # compile / warm up outside the measurement
    benchmark.group = workload
    benchmark.extra_info["lib"] = lib
    if work is not None:
        benchmark.extra_info["work"] = work
    benchmark(run)
