"""CUDA indexing kernels against the CPU kernels on the same inputs."""

import numpy as np
import pytest
from conftest import assert_close, to_cuda

from numgrad.kernels.cpu import indexing as IDX
from numgrad.kernels.cuda import indexing as CI
from numgrad.kernels.cuda.array import CudaArray

DTYPES = [np.float32, np.float64, np.int64]


def _data(rng, shape, dtype):
    x = rng.standard_normal(shape) * 5
    return x.astype(dtype)


# ---------------------------------------------------------------------------- index checks


def test_wrap_indices_matches_cpu(rng):
    idx = rng.integers(-5, 5, 12).astype(np.int64)
    out_c = np.empty(12, np.int64)
    out_g = to_cuda(np.zeros(12, np.int64))
    assert CI.wrap_indices(to_cuda(idx), 5, out_g) == IDX.wrap_indices(idx, 5, out_c) == -1
    assert_close(out_g, out_c)
    bad = idx.copy()
    bad[[4, 9]] = [7, -6]
    assert CI.wrap_indices(to_cuda(bad), 5, to_cuda(np.zeros(12, np.int64))) == 4
    assert IDX.wrap_indices(bad, 5, np.empty(12, np.int64)) == 4
    assert CI.wrap_indices(to_cuda(np.zeros(0, np.int64)), 5, CudaArray.empty((0,), np.int64)) \
        == -1


def test_linearize_matches_cpu(rng):
    sizes = np.array([3, 4, 5], np.int64)
    idx = np.stack([rng.integers(-s, s, 40) for s in sizes]).astype(np.int64)
    out_c = np.empty(40, np.int64)
    out_g = CudaArray.empty((40,), np.int64)
    got = CI.linearize(to_cuda(idx), sizes, out_g, True)
    assert got == IDX.linearize(idx, sizes, out_c, True) == (-1, -1)
    assert_close(out_g, out_c)
    # strided (transposed) index rows, sizes as a tuple
    idx_t = np.ascontiguousarray(idx.T)
    out_g2 = CudaArray.empty((40,), np.int64)
    assert CI.linearize(to_cuda(idx_t).T, (3, 4, 5), out_g2, True) == (-1, -1)
    assert_close(out_g2, out_c)


def test_linearize_reports_first_bad_in_cpu_order(rng):
    sizes = np.array([3, 4], np.int64)
    idx = np.zeros((2, 10), np.int64)
    idx[1, 3] = 4      # column 3, row 1
    idx[0, 7] = -4     # column 7, row 0
    idx[0, 3] = 9      # column 3, row 0: the first one the CPU meets
    got = CI.linearize(to_cuda(idx), sizes, CudaArray.empty((10,), np.int64), True)
    assert got == IDX.linearize(idx, sizes, np.empty(10, np.int64), True) == (0, 3)
    idx[0, 3] = 0
    got = CI.linearize(to_cuda(idx), sizes, CudaArray.empty((10,), np.int64), True)
    assert got == IDX.linearize(idx, sizes, np.empty(10, np.int64), True) == (1, 3)
    assert all(isinstance(v, int) for v in got)
    # without wrapping (index_select), a negative index is out of range
    idx[:] = 0
    idx[1, 5] = -1
    got = CI.linearize(to_cuda(idx), sizes, CudaArray.empty((10,), np.int64), False)
    assert got == IDX.linearize(idx, sizes, np.empty(10, np.int64), False) == (1, 5)


def test_linearize_empty():
    out = CudaArray.empty((0,), np.int64)
    assert CI.linearize(to_cuda(np.zeros((2, 0), np.int64)), (3, 4), out, True) == (-1, -1)


# ---------------------------------------------------------------------------- mask positions


@pytest.mark.parametrize("n", [1, 7, 31, 32, 33, 100, 257])
def test_mask_positions_matches_cpu(n, rng):
    mask = rng.random(n) > 0.6
    got = CI.mask_positions(to_cuda(mask))
    assert_close(got, IDX.mask_positions(mask))


def test_mask_positions_all_none_empty_and_strided(rng):
    for mask in (np.ones(50, np.bool_), np.zeros(50, np.bool_), np.zeros(0, np.bool_)):
        got = CI.mask_positions(to_cuda(mask))
        assert got.dtype == np.int64
        assert_close(got, IDX.mask_positions(mask))
    m2 = rng.random((2, 45)) > 0.5
    got = CI.mask_positions(to_cuda(m2)[1, ::2])
    assert_close(got, IDX.mask_positions(np.ascontiguousarray(m2[1, ::2])))


def test_mask_positions_non_bool_mask(rng):
    m = rng.integers(0, 3, 40).astype(np.int64)
    assert_close(CI.mask_positions(to_cuda(m)), IDX.mask_positions(m))


def test_mask_positions_any_chunking(rng, monkeypatch):
    mask = rng.random(90) > 0.5
    for chunks in (1, 2, 5, 90, 1000):
        monkeypatch.setattr(CI, "MAX_CHUNKS", chunks)
        assert_close(CI.mask_positions(to_cuda(mask)), IDX.mask_positions(mask))


# ---------------------------------------------------------------------------- along one axis


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_axis_matches_cpu(dtype, rng):
    x = _data(rng, (2, 5, 3), dtype)
    idx = np.array([4, 0, -1, 2, 2, -5], np.int64)
    out_c = np.empty((2, 6, 3), dtype)
    IDX.gather_axis(x, idx, out_c)
    out_g = CudaArray.empty((2, 6, 3), dtype)
    CI.gather_axis(to_cuda(x), to_cuda(idx), out_g)
    assert_close(out_g, out_c)


def test_gather_axis_strided_input(rng):
    base = _data(rng, (3, 2, 5), np.float32)
    x = base.transpose(1, 2, 0)  # (2, 5, 3), not contiguous
    idx = np.array([1, 3, 3], np.int64)
    out_c = np.empty((2, 3, 3), np.float32)
    IDX.gather_axis(x, idx, out_c)
    out_g = CudaArray.empty((2, 3, 3), np.float32)
    CI.gather_axis(to_cuda(base).transpose(1, 2, 0), to_cuda(idx), out_g)
    assert_close(out_g, out_c)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["axis", "dim"])
def test_scatter_add_repeated_indices(kind, dtype, rng):
    src = _data(rng, (2, 6, 3), dtype)
    if kind == "axis":
        idx = np.array([1, 1, 3, 1, 0, 3], np.int64)
    else:
        idx = rng.integers(0, 2, (2, 6, 3)).astype(np.int64)  # many collisions
    init = _data(rng, (2, 4, 3), dtype)
    out_c = init.copy()
    getattr(IDX, "scatter_add_" + kind)(src, idx, out_c)
    out_g = to_cuda(init)
    getattr(CI, "scatter_add_" + kind)(to_cuda(src), to_cuda(idx), out_g)
    assert_close(out_g, out_c)


def test_scatter_add_axis_into_strided_view(rng):
    src = _data(rng, (3, 4, 2), np.float64)
    idx = np.array([2, 0, 2, 2], np.int64)
    big = np.zeros((2, 3, 3, 2), np.float64)
    out_c = big.copy()
    IDX.scatter_add_axis(src, idx, out_c[1].transpose(1, 0, 2))
    out_g = to_cuda(big)
    CI.scatter_add_axis(to_cuda(src), to_cuda(idx), out_g[1].transpose(1, 0, 2))
    assert_close(out_g, out_c, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_put_axis_later_writes_win(dtype, rng):
    src = _data(rng, (2, 7, 3), dtype)
    idx = np.array([1, 3, 1, 0, 3, 1, -1], np.int64)
    init = _data(rng, (2, 5, 3), dtype)
    out_c = init.copy()
    IDX.put_axis(src, idx, out_c)
    out_g = to_cuda(init)
    CI.put_axis(to_cuda(src), to_cuda(idx), out_g)
    assert_close(out_g, out_c)


def test_put_axis_empty(rng):
    out = to_cuda(np.ones((2, 3, 1), np.float32))
    CI.put_axis(to_cuda(np.zeros((2, 0, 1), np.float32)), to_cuda(np.zeros(0, np.int64)), out)
    assert_close(out, np.ones((2, 3, 1), np.float32))


# ---------------------------------------------------------------------------- unravel


def test_unravel_matches_cpu(rng):
    shape = np.array([3, 4, 5], np.int64)
    pos = rng.integers(0, 60, 25).astype(np.int64)
    out_c = np.empty((3, 25), np.int64)
    IDX.unravel(pos, shape, out_c)
    out_g = CudaArray.empty((3, 25), np.int64)
    CI.unravel(to_cuda(pos), shape, out_g)
    assert_close(out_g, out_c)
    out_g2 = CudaArray.empty((3, 25), np.int64)
    CI.unravel(to_cuda(pos), (3, 4, 5), out_g2)
    assert_close(out_g2, out_c)


def test_unravel_into_transposed_view(rng):
    pos = rng.integers(0, 12, 9).astype(np.int64)
    out_c = np.empty((2, 9), np.int64)
    IDX.unravel(pos, np.array([3, 4], np.int64), out_c)
    buf = CudaArray.empty((9, 2), np.int64)
    CI.unravel(to_cuda(pos), (3, 4), buf.T)
    assert_close(buf.T, out_c)


# ---------------------------------------------------------------------------- along a dim


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_dim_matches_cpu(dtype, rng):
    x = _data(rng, (2, 5, 4), dtype)
    idx = rng.integers(0, 5, (2, 3, 4)).astype(np.int64)
    out_c = np.empty((2, 3, 4), dtype)
    assert IDX.gather_dim(x, idx, out_c) == -1
    out_g = CudaArray.empty((2, 3, 4), dtype)
    assert CI.gather_dim(to_cuda(x), to_cuda(idx), out_g) == -1
    assert_close(out_g, out_c)


def test_gather_dim_restricted_strided_view(rng):
    x = _data(rng, (3, 5, 6), np.float32)
    idx = rng.integers(0, 5, (2, 3, 4)).astype(np.int64)
    x3 = x[:2, :, :4]
    out_c = np.empty((2, 3, 4), np.float32)
    IDX.gather_dim(x3, idx, out_c)
    out_g = CudaArray.empty((2, 3, 4), np.float32)
    CI.gather_dim(to_cuda(x)[:2, :, :4], to_cuda(idx), out_g)
    assert_close(out_g, out_c)


def test_gather_dim_reports_first_bad_position(rng):
    x = _data(rng, (2, 5, 4), np.float32)
    idx = rng.integers(0, 5, (2, 3, 4)).astype(np.int64)
    idx[1, 2, 3] = 5
    idx[1, 0, 2] = -1
    idx[0, 2, 1] = 7
    want = IDX.gather_dim(x, idx, np.empty((2, 3, 4), np.float32))
    got = CI.gather_dim(to_cuda(x), to_cuda(idx), CudaArray.empty((2, 3, 4), np.float32))
    assert got == want == 9
    assert isinstance(got, int)


def test_scatter_add_dim_strided_out_and_bad_index(rng):
    src = _data(rng, (2, 3, 2), np.float64)
    idx = rng.integers(0, 4, (2, 3, 2)).astype(np.int64)
    big = np.zeros((3, 4, 5), np.float64)
    out_c = big.copy()
    assert IDX.scatter_add_dim(src, idx, out_c[:2, :, 1:3]) == -1
    out_g = to_cuda(big)
    assert CI.scatter_add_dim(to_cuda(src), to_cuda(idx), out_g[:2, :, 1:3]) == -1
    assert_close(out_g, out_c, rtol=1e-12, atol=1e-12)
    # an index outside [0, size): both report the first bad flat position, and write nothing
    # outside the output
    idx[1, 0, 1] = -1
    idx[1, 2, 0] = 4
    assert IDX.scatter_add_dim(src, idx, big.copy()[:2, :, 1:3]) == 7
    assert CI.scatter_add_dim(to_cuda(src), to_cuda(idx), to_cuda(big)[:2, :, 1:3]) == 7


def test_empty_launches_are_noops():
    out = CudaArray.empty((2, 0, 3), np.float32)
    CI.gather_axis(to_cuda(np.ones((2, 4, 3), np.float32)), to_cuda(np.zeros(0, np.int64)), out)
    idx = to_cuda(np.zeros((2, 0, 3), np.int64))
    assert CI.gather_dim(to_cuda(np.ones((2, 4, 3), np.float32)), idx, out) == -1
    target = to_cuda(np.ones((2, 4, 3), np.float32))
    assert CI.scatter_add_dim(to_cuda(np.zeros((2, 0, 3), np.float32)), idx, target) == -1
    assert_close(target, np.ones((2, 4, 3), np.float32))


def test_cpu_operand_is_the_pytorch_device_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        CI.gather_axis(to_cuda(np.ones((1, 3, 1), np.float32)), np.zeros(2, np.int64),
                       CudaArray.empty((1, 2, 1), np.float32))
