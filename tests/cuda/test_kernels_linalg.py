"""CUDA matmul (shared-memory tiled kernel) against the CPU kernel (NumPy/BLAS)."""

import numpy as np
import pytest
from conftest import assert_close, to_cuda

from numgrad.kernels.cpu import linalg as LIN
from numgrad.kernels.cuda import linalg as CL
from numgrad.kernels.cuda.array import CudaArray

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12),
       np.int64: dict(rtol=0, atol=0)}


def _data(rng, shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check(a, b, A=None, B=None):
    """CPU matmul of the NumPy operands vs CUDA matmul of A, B (default: copies of a, b)."""
    dtype = a.dtype.type
    want = np.empty(np.matmul(a, b).shape, a.dtype)
    LIN.matmul(a, b, want)
    A = to_cuda(a) if A is None else A
    B = to_cuda(b) if B is None else B
    out = CudaArray.empty(want.shape, a.dtype)
    assert CL.matmul(A, B, out) is out
    assert_close(out, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("sa,sb", [((3, 5), (5, 7)), ((1, 1), (1, 4)), ((9, 3), (3, 10)),
                                   ((2, 17), (17, 3))])
def test_mm_ragged(sa, sb, dtype, rng):
    _check(_data(rng, sa, dtype), _data(rng, sb, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bmm(dtype, rng):
    _check(_data(rng, (2, 3, 4), dtype), _data(rng, (2, 4, 5), dtype))


def test_batch_broadcasting(rng):
    _check(_data(rng, (2, 1, 3, 4), np.float32), _data(rng, (3, 4, 2), np.float32))
    _check(_data(rng, (3, 4), np.float64), _data(rng, (2, 4, 2), np.float64))
    _check(_data(rng, (2, 3, 4), np.float64), _data(rng, (4, 5), np.float64))


def test_vectors(rng):
    for sa, sb in (((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (4,)),
                   ((4,), (2, 4, 3))):
        _check(_data(rng, sa, np.float64), _data(rng, sb, np.float64))


def test_transposed_and_sliced_views(rng):
    a = _data(rng, (5, 3), np.float32)
    b = _data(rng, (7, 5), np.float32)
    _check(a.T, b.T, to_cuda(a).T, to_cuda(b).T)
    big = _data(rng, (6, 9), np.float64)
    _check(big[1:4, ::2], big[::2, 1:6].T[:5], to_cuda(big)[1:4, ::2],
           to_cuda(big)[::2, 1:6].T[:5])
    x = _data(rng, (4, 2, 3), np.float64)
    _check(x.transpose(1, 0, 2), x.transpose(1, 2, 0), to_cuda(x).transpose(1, 0, 2),
           to_cuda(x).transpose(1, 2, 0))


def test_output_view(rng):
    # conv's grouped GEMMs write row slices of a bigger output
    a = _data(rng, (2, 3), np.float32)
    b = _data(rng, (3, 4), np.float32)
    big = CudaArray.empty((5, 4), np.float32)
    CL.matmul(to_cuda(a), to_cuda(b), big[1:3])
    assert_close(big[1:3], a @ b)


def test_float32_accumulates_in_float32(rng):
    # exact float32 products that cancel: a float64 accumulator would differ from sgemm-like
    a = np.array([[1e8, 1.0, -1e8]], np.float32)
    b = np.array([[1.0], [1.0], [1.0]], np.float32)
    out = CudaArray.empty((1, 1), np.float32)
    CL.matmul(to_cuda(a), to_cuda(b), out)
    assert out.to_host()[0, 0] == np.float32(0.0)  # (1e8 + 1) rounds to 1e8 in float32


def test_longer_k_matches_numpy(rng):
    _check(_data(rng, (3, 40), np.float32), _data(rng, (40, 2), np.float32))


def test_empty_and_zero_k(rng):
    out = CudaArray.empty((0, 3), np.float32)
    CL.matmul(to_cuda(np.zeros((0, 2), np.float32)), to_cuda(np.ones((2, 3), np.float32)), out)
    assert out.shape == (0, 3)
    _check(np.zeros((2, 0), np.float64), np.zeros((0, 3), np.float64))


def test_nan_propagates(rng):
    a = _data(rng, (2, 3), np.float32)
    a[1, 2] = np.nan
    _check(a, _data(rng, (3, 2), np.float32))


def test_bad_shapes_and_devices(rng):
    with pytest.raises(ValueError):
        CL.matmul(to_cuda(np.ones((2, 3))), to_cuda(np.ones((4, 2))),
                  CudaArray.empty((2, 2), np.float64))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        CL.matmul(to_cuda(np.ones((2, 3))), np.ones((3, 2)), CudaArray.empty((2, 2), np.float64))


def test_cublas_hook_falls_back_without_cupy(rng):
    assert CL.set_cublas(True) is CL.cublas_available()
    try:
        _check(_data(rng, (3, 4), np.float32), _data(rng, (4, 2), np.float32))
    finally:
        CL.set_cublas(False)
