"""The GPU benchmark workloads and report run (tiny sizes, so also on the simulator)."""

import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks")
sys.path.insert(0, BENCH)

from cuda_workloads import CUDA_WORKLOADS, build  # noqa: E402


@pytest.mark.parametrize("name", list(CUDA_WORKLOADS))
def test_workload_runs_on_cuda(name):
    run, work = build(name, "numgrad", tiny=True)
    run()
    assert work is None or work > 0


def test_report_prints_every_workload(capsys):
    import cuda_report
    assert cuda_report.main(["--rounds", "1", "--tiny"]) == 0
    out = capsys.readouterr().out
    for name in CUDA_WORKLOADS:
        assert name in out
    assert "of its copy" in out and "TFLOP/s" in out
