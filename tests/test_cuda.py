"""The CUDA backend's tests (``tests/cuda``), run in their own process: on the GPU when one is
present, otherwise on Numba's CUDA simulator (which must be chosen before Numba is imported).
Under the simulator every kernel launch is recorded, and each recorded (kernel, argument
types) pair is then compiled to PTX for an H100 (sm_90) when NVVM is installed
(``pip install ".[cuda]"``), so the kernels are known to build for a real GPU. The op table's
file, tests/cuda/test_ops_cuda.py (half the time), runs the same way from tests/test_cuda_ops.py,
so that CI can give the two halves to its two processes."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA_TESTS = os.path.join(ROOT, "tests", "cuda")
OPS = os.path.join(CUDA_TESTS, "test_ops_cuda.py")


def _gpu_present():
    code = "from numba import cuda; import sys; sys.exit(0 if cuda.is_available() else 1)"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          timeout=120).returncode == 0


def _run(args, env, timeout=1800):
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=timeout)
    return r.returncode, (r.stdout[-6000:] + "\n" + r.stderr[-3000:])


def run_cuda_tests(tmp_path_factory, selection):
    """Run the tests/cuda tests ``selection`` (pytest arguments) in a fresh process: (on a GPU,
    the launches' record, exit status, output tail)."""
    record = str(tmp_path_factory.mktemp("cuda") / "launches.pkl")
    env = dict(os.environ)
    gpu = _gpu_present()
    if gpu:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    else:
        env.update(NUMBA_ENABLE_CUDASIM="1", NUMGRAD_CUDA_RECORD=record)
    code, out = _run(["-m", "pytest", *selection, "-q", "-p", "no:cacheprovider"], env)
    return gpu, record, code, out


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory):
    return run_cuda_tests(tmp_path_factory, [CUDA_TESTS, f"--ignore={OPS}"])


def test_cuda_backend_matches_the_cpu(cuda_run):
    gpu, _, code, out = cuda_run
    assert code == 0, f"tests/cuda failed ({'GPU' if gpu else 'simulator'}):\n{out}"


def test_every_launched_kernel_compiles_for_a_real_gpu(cuda_run):
    gpu, record, code, _ = cuda_run
    if gpu:
        pytest.skip("the kernels ran on a real GPU")
    assert code == 0 and os.path.exists(record)
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    script = os.path.join(CUDA_TESTS, "compile_ptx.py")
    if _run([script, "--probe"], env, timeout=300)[0] != 0:
        pytest.skip('NVVM is not installed (pip install ".[cuda]")')
    code, out = _run([script, record], env)
    assert code == 0, out
    assert "compiled to PTX for sm_90" in out
