"""CUDA reduction kernels against the CPU kernels on the same inputs."""

import math

import numpy as np
import pytest
from conftest import assert_close, to_cuda

from numgrad.kernels.cpu import reduction as C
from numgrad.kernels.cuda import reduction as R
from numgrad.kernels.cuda import rows as CR
from numgrad.kernels.cuda.array import CudaArray

# (outer, reduced, inner) shapes that take every lane layout: one thread per row (many
# strided rows), a few lanes, a full segment with several values per lane, size-1 dims
SHAPES = [(2, 7, 1), (3, 5, 50), (2, 40, 3), (1, 70, 1), (4, 1, 3), (1, 1, 1)]


def _data(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _transposed(rng, shape, dtype):
    """A non-contiguous (outer, reduced, inner) view and its NumPy twin."""
    base = _data(rng, (shape[2], shape[1], shape[0]), dtype)
    return to_cuda(base).transpose(2, 1, 0), base.transpose(2, 1, 0)


def _out(shape, dtype):
    return CudaArray.empty(shape, dtype), np.empty(shape, dtype)


# ----------------------------------------------------------------------------------------
# sums
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_sum_3d(shape, dtype, rng):
    x = _data(rng, shape, dtype)
    scale = 0.5 if np.dtype(dtype).kind == "f" else 1
    got, want = _out((shape[0], shape[2]), dtype)
    R.sum_3d(to_cuda(x), got, scale)
    C.sum_3d(x, want, scale)
    assert_close(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.uint8])
def test_sum_3d_strided_and_other_dtypes(dtype, rng):
    xc, x = _transposed(rng, (3, 6, 4), dtype)
    out_dt = np.float32 if dtype == np.float32 else np.int64
    got, want = _out((3, 4), out_dt)
    R.sum_3d(xc, got, 1)
    C.sum_3d(x, want, 1)
    assert_close(got, want)


def test_sum_3d_float32_accumulates_in_float64():
    x = np.full((1, 64, 1), 1e8, np.float32)
    x[0, ::2, 0] = 1.0
    got, want = _out((1, 1), np.float32)
    R.sum_3d(to_cuda(x), got, 1.0)
    C.sum_3d(x, want, 1.0)
    assert_close(got, want, rtol=0, atol=0)


def test_sum_3d_int_with_float_scale_and_empty(rng):
    x = rng.integers(0, 9, (2, 5, 3)).astype(np.int64)
    got, want = _out((2, 3), np.int64)
    R.sum_3d(to_cuda(x), got, 0.5)
    C.sum_3d(x, want, 0.5)
    assert_close(got, want)
    e = np.zeros((2, 0, 3), np.float32)
    got, want = _out((2, 3), np.float32)
    R.sum_3d(to_cuda(e), got, np.nan)
    C.sum_3d(e, want, np.nan)
    assert_close(got, want)
    got = CudaArray.empty((0, 3), np.float32)
    R.sum_3d(to_cuda(np.zeros((0, 2, 3), np.float32)), got, 1.0)
    assert got.shape == (0, 3)


@pytest.mark.parametrize("n", [0, 1, 37, 500])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_sum_all(n, dtype, rng):
    x = _data(rng, (n,), dtype)
    scale = 1.0 / max(n, 1) if dtype == np.float32 else 1
    assert_close(R.sum_all(to_cuda(x), dtype, scale), C.sum_all(x, dtype, scale), rtol=1e-5)


def test_sum_all_strided_and_float64(rng):
    xc, x = _transposed(rng, (5, 7, 9), np.float32)
    assert_close(R.sum_all(xc[:, 1:, ::2], np.float32, 1.0),
                 C.sum_all(x[:, 1:, ::2], np.float32, 1.0), rtol=1e-5)
    y = rng.standard_normal((20, 10))
    assert_close(R.sum_all(to_cuda(y), np.float64, 2.0), C.sum_all(y, np.float64, 2.0),
                 rtol=1e-12)
    b = rng.integers(0, 2, (300,)).astype(np.bool_)
    assert_close(R.sum_all(to_cuda(b), np.int64, 1), C.sum_all(b, np.int64, 1))


@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)])
def test_sum_dims(dims, rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    assert_close(R.sum_dims(to_cuda(x), dims, np.float32, 0.25),
                 C.sum_dims(x, dims, np.float32, 0.25))
    i = rng.integers(-9, 9, (3, 4, 5)).astype(np.int64)
    assert_close(R.sum_dims(to_cuda(i), dims, np.int64, 1), C.sum_dims(i, dims, np.int64, 1))


def test_sum_dims_strided(rng):
    xc, x = _transposed(rng, (4, 3, 6), np.float64)
    assert_close(R.sum_dims(xc, (0, 2), np.float64, 1.0), C.sum_dims(x, (0, 2), np.float64, 1.0),
                 rtol=1e-12)


# ----------------------------------------------------------------------------------------
# max / min with indices
# ----------------------------------------------------------------------------------------


def _with_nans(rng, shape, dtype):
    x = _data(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        m = rng.random(shape) < 0.08
        x[m] = np.nan
        x[0, 0, 0] = np.nan  # a nan first in its row
    return x


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("largest", [True, False])
def test_extreme_index_3d(shape, dtype, largest, rng):
    # few distinct values: ties across lanes check "first occurrence"
    x = _with_nans(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        x = np.round(x)
    gv, wv = _out((shape[0], shape[2]), dtype)
    gi, wi = _out((shape[0], shape[2]), np.int64)
    R.extreme_index_3d(to_cuda(x), gv, gi, largest)
    C.extreme_index_3d(x, wv, wi, largest)
    assert_close(gv, wv)
    assert_close(gi, wi, rtol=0, atol=0)
    g, w = _out((shape[0], shape[2]), dtype)
    R.extreme_3d(to_cuda(x), g, largest)
    C.extreme_3d(x, w, largest)
    assert_close(g, w)


def test_extreme_strided_and_all_nan_rows(rng):
    xc, x = _transposed(rng, (3, 9, 5), np.float32)
    gv, wv = _out((3, 5), np.float32)
    gi, wi = _out((3, 5), np.int64)
    R.extreme_index_3d(xc, gv, gi, True)
    C.extreme_index_3d(x, wv, wi, True)
    assert_close(gv, wv)
    assert_close(gi, wi)
    n = np.full((2, 40, 1), np.nan, np.float64)
    n[1, :5] = 1.0
    for largest in (True, False):
        gv, wv = _out((2, 1), np.float64)
        gi, wi = _out((2, 1), np.int64)
        R.extreme_index_3d(to_cuda(n), gv, gi, largest)
        C.extreme_index_3d(n, wv, wi, largest)
        assert_close(gv, wv)
        assert_close(gi, wi)
    inf = np.array([[[-np.inf], [-np.inf], [3.0], [np.inf], [np.inf]]], np.float32)
    g = CudaArray.empty((1, 1), np.int64)
    R.extreme_index_3d(to_cuda(inf), CudaArray.empty((1, 1), np.float32), g, True)
    assert g.to_host()[0, 0] == 3
    R.extreme_index_3d(to_cuda(inf), CudaArray.empty((1, 1), np.float32), g, False)
    assert g.to_host()[0, 0] == 0


@pytest.mark.parametrize("dims", [(0,), (1, 2), (0, 2), (0, 1, 2)])
def test_reduce_dims_with_cpu_kernel_objects(dims, rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    xc = to_cuda(x)
    for largest in (True, False):
        assert_close(R.reduce_dims(C.extreme_3d, xc, dims, np.float32, largest),
                     C.reduce_dims(C.extreme_3d, x, dims, np.float32, largest))
    assert_close(R.reduce_dims(C.norm_3d, xc, dims, np.float32, 2.0),
                 C.reduce_dims(C.norm_3d, x, dims, np.float32, 2.0))
    assert_close(R.reduce_dims(C.logsumexp_3d, xc, dims, np.float32),
                 C.reduce_dims(C.logsumexp_3d, x, dims, np.float32))
    assert_close(R.reduce_dims(C.sum_3d, xc, dims, np.float32, 0.5),
                 C.reduce_dims(C.sum_3d, x, dims, np.float32, 0.5))
    # the twins themselves are accepted too
    assert_close(R.reduce_dims(R.sum_3d, xc, dims, np.float32, 0.5),
                 C.reduce_dims(C.sum_3d, x, dims, np.float32, 0.5))


# ----------------------------------------------------------------------------------------
# gathers, scatters, nan check
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_and_put_along_3d(dtype, rng):
    x = rng.standard_normal((3, 6, 4)).astype(dtype)
    idx = rng.integers(0, 6, (3, 4)).astype(np.int64)
    got, want = _out((3, 4), dtype)
    R.take_along_3d(to_cuda(x), to_cuda(idx), got)
    C.take_along_3d(x, idx, want)
    assert_close(got, want)
    xc, xs = _transposed(rng, (3, 6, 4), dtype)
    R.take_along_3d(xc, to_cuda(idx), got)
    C.take_along_3d(xs, idx, want)
    assert_close(got, want)

    src = rng.standard_normal((3, 4)).astype(dtype)
    got = to_cuda(np.full((3, 6, 4), 7, dtype))  # stale data is overwritten with zeros
    want = np.empty((3, 6, 4), dtype)
    R.put_along_3d(to_cuda(src), to_cuda(idx), got)
    C.put_along_3d(src, idx, want)
    assert_close(got, want)
    # a strided destination view (the op layer passes as3d of a fresh array)
    full = to_cuda(np.full((4, 6, 3), 7, dtype))
    R.put_along_3d(to_cuda(src), to_cuda(idx), full.transpose(2, 1, 0))
    assert_close(full.transpose(2, 1, 0).copy(), want)


def test_has_nan(rng):
    x = rng.standard_normal(50).astype(np.float32)
    assert R.has_nan(to_cuda(x)) is C.has_nan(x) is False
    x[37] = np.nan
    assert R.has_nan(to_cuda(x)) is C.has_nan(x) is True
    assert R.has_nan(to_cuda(x)[::2]) is False  # the nan sits at an odd position
    assert R.has_nan(to_cuda(x)[1::2]) is True
    assert R.has_nan(to_cuda(np.arange(5))) is False
    assert R.has_nan(to_cuda(np.zeros(0, np.float64))) is False
    assert R.has_nan(to_cuda(np.array([np.inf, -np.inf]))) is False


# ----------------------------------------------------------------------------------------
# norms, logsumexp
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, math.inf, -math.inf, 3.0, 0.5])
@pytest.mark.parametrize("shape", [(2, 7, 1), (3, 5, 50), (1, 70, 1)])
def test_norm_3d(p, shape, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    x[x > 1.5] = 0.0
    got, want = _out((shape[0], shape[2]), np.float32)
    R.norm_3d(to_cuda(x), got, p)
    C.norm_3d(x, want, p)
    assert_close(got, want, rtol=2e-5)


@pytest.mark.parametrize("p", [math.inf, -math.inf, 2.0])
def test_norm_3d_nan_float64_strided_empty(p, rng):
    xc, x = _transposed(rng, (2, 40, 3), np.float64)
    x = x.copy()
    x[0, 17, 1] = np.nan
    xc = to_cuda(np.ascontiguousarray(x.transpose(2, 1, 0))).transpose(2, 1, 0)
    got, want = _out((2, 3), np.float64)
    R.norm_3d(xc, got, p)
    C.norm_3d(x, want, p)
    assert_close(got, want, rtol=1e-12)
    e = np.zeros((2, 0, 3), np.float64)
    R.norm_3d(to_cuda(e), got, p)
    C.norm_3d(e, want, p)
    assert_close(got, want)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_3d(shape, dtype, rng):
    x = (rng.standard_normal(shape) * 30).astype(dtype)
    got, want = _out((shape[0], shape[2]), dtype)
    CR.logsumexp_3d(to_cuda(x), got)
    C.logsumexp_3d(x, want)
    assert_close(got, want)


def test_logsumexp_3d_inf_and_nan_rows():
    nan, inf = np.nan, np.inf
    rows = [[nan, 1, 2], [1, nan, inf], [1, nan, 2], [-inf, -inf, -inf], [inf, 1, inf],
            [-inf, 0, -inf], [1, 2, 3]]
    x = np.array(rows, np.float32)[:, :, None]
    got, want = _out((7, 1), np.float32)
    CR.logsumexp_3d(to_cuda(x), got)
    C.logsumexp_3d(x, want)
    assert_close(got, want)
    e = CudaArray.empty((2, 3), np.float32)
    CR.logsumexp_3d(to_cuda(np.zeros((2, 0, 3), np.float32)), e)
    assert_close(e, np.full((2, 3), -np.inf, np.float32))  # log(0), as PyTorch


# ----------------------------------------------------------------------------------------
# the softmax family
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_3d(shape, dtype, log, rng):
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    got, want = _out(shape, dtype)
    CR.softmax_3d(to_cuda(x), got, log)
    C.softmax_3d(x, want, log)
    assert_close(got, want, rtol=2e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # -inf - -inf under the simulator
def test_softmax_3d_special_rows_and_strided():
    nan, inf = np.nan, np.inf
    x = np.array([[nan, 1, 2], [1, nan, 2], [-inf, -inf, -inf], [-inf, 0, 1], [1, 1, 1]],
                 np.float32)[:, :, None]
    for log in (False, True):
        got, want = _out(x.shape, np.float32)
        CR.softmax_3d(to_cuda(x), got, log)
        C.softmax_3d(x, want, log)
        assert_close(got, want)
    base = np.random.default_rng(1).standard_normal((6, 5, 4)).astype(np.float32)
    xc = to_cuda(base).transpose(2, 1, 0)
    got = CudaArray.empty((6, 5, 4), np.float32)  # written through a transposed view
    want = np.empty((4, 5, 6), np.float32)
    CR.softmax_3d(xc, got.transpose(2, 1, 0), True)
    C.softmax_3d(base.transpose(2, 1, 0), want, True)
    assert_close(got.transpose(2, 1, 0).copy(), want, rtol=2e-5)


@pytest.mark.parametrize("shape", [(2, 7, 1), (3, 5, 50), (1, 70, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_backward_3d(shape, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    y = np.empty(shape, dtype)
    C.softmax_3d(x, y, False)
    ly = np.empty(shape, dtype)
    C.softmax_3d(x, ly, True)
    got, want = _out(shape, dtype)
    CR.softmax_bwd_3d(to_cuda(g), to_cuda(y), got)
    C.softmax_bwd_3d(g, y, want)
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    CR.log_softmax_bwd_3d(to_cuda(g), to_cuda(ly), got)
    C.log_softmax_bwd_3d(g, ly, want)
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_along_and_along2(dim, rng):
    x = (rng.standard_normal((3, 4, 5)) * 4).astype(np.float32)
    g = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for log in (False, True):
        y = CR.along(to_cuda(x), dim, np.float32, log)
        wy = C.along(C.softmax_3d, x, dim, np.float32, log)
        assert_close(y, wy, rtol=2e-5)
        k = C.log_softmax_bwd_3d if log else C.softmax_bwd_3d
        assert_close(CR.along2(to_cuda(g), y, dim, np.float32, log),
                     C.along2(k, g, wy, dim, np.float32), rtol=1e-5, atol=1e-6)
    # a non-contiguous input (a transposed view) along each dim
    xt = to_cuda(x).transpose(2, 0, 1)
    assert_close(CR.along(xt, dim, np.float32, False),
                 C.along(C.softmax_3d, x.transpose(2, 0, 1), dim, np.float32, False),
                 rtol=2e-5)
    gt = to_cuda(g).transpose(2, 0, 1)
    yt = CR.along(xt, dim, np.float32, False)
    assert_close(CR.along2(gt, yt, dim, np.float32, False),
                 C.along2(C.softmax_bwd_3d, g.transpose(2, 0, 1), yt.to_host(), dim,
                          np.float32), rtol=1e-5, atol=1e-6)


def test_rows_variants(rng):
    x = rng.standard_normal((5, 9)).astype(np.float32)
    g = rng.standard_normal((5, 9)).astype(np.float32)
    for log in (False, True):
        got, want = _out(x.shape, np.float32)
        CR.softmax_rows(to_cuda(x), got, log)
        C.softmax_rows(x, want, log)
        assert_close(got, want, rtol=2e-5)
    y = want  # log-softmax
    got, want = _out(x.shape, np.float32)
    CR.log_softmax_bwd_rows(to_cuda(g), to_cuda(y), got)
    C.log_softmax_bwd_rows(g, y, want)
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    ey = np.exp(y)
    CR.softmax_bwd_rows(to_cuda(g), to_cuda(ey), got)
    C.softmax_bwd_rows(g, ey, want)
    assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_along_empty_and_size_one(rng):
    e = np.zeros((0, 3), np.float32)
    assert CR.along(to_cuda(e), 1, np.float32, False).shape == (0, 3)
    assert CR.along(to_cuda(np.zeros((2, 0))), 1, np.float64, True).shape == (2, 0)
    one = rng.standard_normal((4, 1)).astype(np.float32)
    assert_close(CR.along(to_cuda(one), 1, np.float32, False),
                 np.ones((4, 1), np.float32))


# ----------------------------------------------------------------------------------------
# devices, and the CPU launchers handing CUDA data to the twins
# ----------------------------------------------------------------------------------------


def test_cpu_operand_is_the_pytorch_device_error():
    x = to_cuda(np.ones((2, 3, 1), np.float32))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        R.sum_3d(x, np.empty((2, 1), np.float32), 1.0)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        CR.softmax_bwd_3d(np.ones((2, 3, 1), np.float32), x, CudaArray.empty((2, 3, 1),
                                                                          np.float32))


def test_cpu_launchers_forward_cuda_data(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    xc = to_cuda(x)
    assert_close(C.sum_all(xc, np.float32, 1.0), C.sum_all(x, np.float32, 1.0), rtol=1e-5)
    assert_close(C.sum_dims(xc, (1,), np.float32, 1.0), C.sum_dims(x, (1,), np.float32, 1.0))
    assert_close(C.reduce_dims(C.extreme_3d, xc, (0,), np.float32, True),
                 C.reduce_dims(C.extreme_3d, x, (0,), np.float32, True))
    assert_close(C.along(C.softmax_3d, xc, 1, np.float32, False),
                 C.along(C.softmax_3d, x, 1, np.float32, False), rtol=2e-5)
