"""The CUDA backend's tests. They run on a real GPU when one is present, or on Numba's CUDA
simulator when the process starts with ``NUMBA_ENABLE_CUDASIM=1`` (``tests/test_cuda.py``
runs them that way in a subprocess); otherwise they are not collected."""

import os

import numpy as np
import pytest


def _backend():
    from numba import config
    if config.ENABLE_CUDASIM:
        return "simulator"
    if os.environ.get("NUMGRAD_SKIP_GPU"):
        return None
    import numgrad.kernels.cuda  # noqa: F401 - before numba.cuda (its NumPy 2.5 shim)
    try:
        from numba import cuda
        return "gpu" if cuda.is_available() else None
    except Exception:  # noqa: BLE001 - no driver, no toolkit: no backend
        return None


BACKEND = _backend()
if BACKEND is None:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def to_cuda(a):
    from numgrad.kernels.cuda.array import CudaArray
    return CudaArray.from_host(np.asarray(a))


def assert_close(cuda_arr, expected, rtol=1e-5, atol=1e-6):
    got = cuda_arr.to_host() if hasattr(cuda_arr, "to_host") else np.asarray(cuda_arr)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
