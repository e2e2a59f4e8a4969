"""The CUDA backend's op table (tests/cuda/test_ops_cuda.py) against the CPU, run as
tests/test_cuda.py runs the rest of tests/cuda: in a fresh process, on the simulator without a
GPU, every launched kernel then compiled to PTX. A file of its own so that CI can give it and
tests/test_cuda.py to its two processes."""

import pytest
from test_cuda import (  # noqa: F401 - the same two tests, on this file's run
    OPS,
    run_cuda_tests,
    test_cuda_backend_matches_the_cpu,
    test_every_launched_kernel_compiles_for_a_real_gpu,
)


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory):
    return run_cuda_tests(tmp_path_factory, [OPS])
