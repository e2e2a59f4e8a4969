"""The stride-1 convolution kernels (``numgrad/kernels/cpu/conv.py``): one compiled loop over the
batch with BLAS called from it, on "wide" columns whose extra positions are computed and
thrown away. Checked against PyTorch and float64 finite differences, with inf and nan placed
where only the extra positions reach them, serial against multithreaded bit for bit, and
against the general im2col path."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, torch

import numgrad as ng
from numgrad.nn import functional as NF
from numgrad.ops import conv as conv_op

pytestmark = pytest.mark.skipif(not conv_op.CONV.AVAILABLE,
                                reason="NumPy's BLAS is not an OpenBLAS numgrad can call")

# (x shape, weight shape, conv2d keywords): every case has stride 1
CASES = [
    ((3, 2, 7, 6), (4, 2, 3, 3), {"padding": 1}),
    ((2, 4, 7, 7), (6, 2, 3, 2), {"padding": (2, 1), "dilation": (2, 1), "groups": 2}),
    ((5, 1, 5, 5), (2, 1, 1, 1), {}),
    ((9, 3, 6, 8), (5, 3, 2, 4), {"padding": (0, 2)}),  # 9 samples: chunks of 4, 4 and 1
    ((2, 6, 5, 5), (6, 1, 3, 3), {"padding": 1, "groups": 6}),  # depthwise
]


def _conv(lib, x, w, b, grad, **kw):
    X = lib.tensor(x, requires_grad=True)
    W = lib.tensor(w, requires_grad=True)
    B = lib.tensor(b, requires_grad=True) if b is not None else None
    y = lib.nn.functional.conv2d(X, W, B, **kw)
    y.backward(lib.tensor(grad))
    out = [y.detach().numpy(), X.grad.numpy(), W.grad.numpy()]
    return out + ([B.grad.numpy()] if B is not None else [])


def _data(xs, ws, kw, dtype, seed=0):
    rs = np.random.RandomState(seed)
    x, w = rs.randn(*xs).astype(dtype), rs.randn(*ws).astype(dtype)
    b = rs.randn(ws[0]).astype(dtype)
    y = np.asarray(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw)) \
        if torch is not None else None
    return x, w, b, y, rs


def _ran_batch_loop(monkeypatch):
    calls = []
    real = conv_op.CONV.forward
    monkeypatch.setattr(conv_op.CONV, "forward", lambda *a: calls.append(1) or real(*a))
    return calls


@requires_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CASES)
def test_matches_pytorch(xs, ws, kw, with_bias, dtype, monkeypatch):
    x, w, b, y, rs = _data(xs, ws, kw, dtype)
    grad = rs.randn(*y.shape).astype(dtype)
    b = b if with_bias else None
    calls = _ran_batch_loop(monkeypatch)
    ours, theirs = _conv(ng, x, w, b, grad, **kw), _conv(torch, x, w, b, grad, **kw)
    assert calls, "the batch loop did not run"
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    for name, a, e in zip(("out", "x.grad", "w.grad", "b.grad"), ours, theirs):
        assert a.dtype == dtype
        assert_close(a, e, msg=name, **tol)


@pytest.mark.parametrize("xs,ws,kw", CASES[:4])
def test_gradients_match_finite_differences(xs, ws, kw):
    rs = np.random.RandomState(3)
    x, w = rs.randn(*xs), rs.randn(*ws)
    y = NF.conv2d(ng.tensor(x), ng.tensor(w), **kw).numpy()
    weight = rs.randn(*y.shape)

    def f(a, b):
        return NF.conv2d(ng.tensor(a), ng.tensor(b), **kw).numpy()

    X, W = ng.tensor(x, requires_grad=True), ng.tensor(w, requires_grad=True)
    (NF.conv2d(X, W, **kw) * ng.tensor(weight)).sum().backward()
    assert_close(X.grad, finite_difference(f, [x, w], 0, weight), rtol=1e-6, atol=1e-8)
    assert_close(W.grad, finite_difference(f, [x, w], 1, weight), rtol=1e-6, atol=1e-8)


@requires_torch
@pytest.mark.parametrize("where", ["input", "weight"])
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_values_stay_where_pytorch_has_them(where, bad):
    # input 5 wide, kernel 3, no padding: 3 outputs per row and 2 extra wide positions.
    # x[..., 4] is read by the weight's last column only, but the extra positions of its
    # first column reach it too; an inf in a weight reaches the extra positions of every
    # column of the input gradient. Both must add exactly nothing, as in PyTorch.
    x, w, b, y, rs = _data((2, 2, 5, 5), (3, 2, 3, 3), {}, np.float32, seed=1)
    if where == "input":
        x[0, 1, 2, 4] = bad
    else:
        w[1, 0, 1, 1] = bad
    grad = rs.randn(2, 3, 3, 3).astype(np.float32)
    ours, theirs = _conv(ng, x, w, b, grad), _conv(torch, x, w, b, grad)
    for name, a, e in zip(("out", "x.grad", "w.grad", "b.grad"), ours, theirs):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e), err_msg=name)
        np.testing.assert_array_equal(np.isinf(a), np.isinf(e), err_msg=name)
        assert_close(a, e, rtol=1e-4, atol=1e-5, msg=name)


def _bits_at(threads, x, w, grad, **kw):
    before = ng.get_num_threads()
    ng.set_num_threads(threads)
    try:
        X, W = ng.tensor(x, requires_grad=True), ng.tensor(w, requires_grad=True)
        y = NF.conv2d(X, W, **kw)
        y.backward(ng.tensor(grad))
        return [a.view(np.uint32) for a in (y.detach().numpy(), X.grad.numpy(), W.grad.numpy())]
    finally:
        ng.set_num_threads(before)


def test_threads_give_the_same_bits():
    # the weight gradient is summed per chunk of 4 samples and the chunks in order, so the
    # thread count does not change the result
    rs = np.random.RandomState(5)
    x = rs.randn(23, 3, 9, 9).astype(np.float32)
    w = rs.randn(4, 3, 3, 3).astype(np.float32)
    grad = rs.randn(23, 4, 9, 9).astype(np.float32)
    one, two = _bits_at(1, x, w, grad, padding=1), _bits_at(2, x, w, grad, padding=1)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_agrees_with_the_general_path(monkeypatch):
    rs = np.random.RandomState(7)
    x = rs.randn(6, 4, 8, 7).astype(np.float64)
    w = rs.randn(6, 2, 3, 3).astype(np.float64)
    b = rs.randn(6).astype(np.float64)
    grad = rs.randn(6, 6, 8, 7)
    kw = {"padding": 1, "groups": 2}
    fused = _conv(ng, x, w, b, grad, **kw)
    monkeypatch.setattr(conv_op, "batch_loop", lambda x, geo: False)
    general = _conv(ng, x, w, b, grad, **kw)
    theirs = _conv(torch, x, w, b, grad, **kw) if torch is not None else general
    for a, e, t in zip(fused, general, theirs):
        assert_close(a, e, rtol=1e-12, atol=1e-12)
        assert_close(a, t, rtol=1e-10, atol=1e-12)


def test_conv1d_runs_the_batch_loop(monkeypatch):
    rs = np.random.RandomState(9)
    x, w, b = rs.randn(3, 2, 11), rs.randn(4, 2, 3), rs.randn(4)
    calls = _ran_batch_loop(monkeypatch)
    X, W = ng.tensor(x, requires_grad=True), ng.tensor(w, requires_grad=True)
    y = NF.conv1d(X, W, ng.tensor(b), padding=2)
    y.sum().backward()
    assert calls
    ref = np.stack([[sum(np.convolve(np.pad(x[n, c], 2), w[o, c][::-1], "valid")
                         for c in range(2)) + b[o] for o in range(4)] for n in range(3)])
    assert_close(y, ref, rtol=1e-12, atol=1e-12)
    f = lambda a, c: NF.conv1d(ng.tensor(a), ng.tensor(c), padding=2).numpy()  # noqa: E731
    ones = np.ones(y.shape)
    assert_close(X.grad, finite_difference(f, [x, w], 0, ones), rtol=1e-6, atol=1e-8)
    assert_close(W.grad, finite_difference(f, [x, w], 1, ones), rtol=1e-6, atol=1e-8)


def test_only_the_needed_gradient_is_made():
    # the weight alone, then the input alone, against float64 finite differences
    rs = np.random.RandomState(11)
    x, w = rs.randn(2, 2, 5, 5), rs.randn(3, 2, 3, 3)
    ones = np.ones((2, 3, 5, 5))
    f = lambda a, b: NF.conv2d(ng.tensor(a), ng.tensor(b), padding=1).numpy()  # noqa: E731
    W = ng.tensor(w, requires_grad=True)
    NF.conv2d(ng.tensor(x), W, padding=1).sum().backward()
    assert_close(W.grad, finite_difference(f, [x, w], 1, ones), rtol=1e-6, atol=1e-8)
    X = ng.tensor(x, requires_grad=True)
    NF.conv2d(X, ng.tensor(w), padding=1).sum().backward()
    assert_close(X.grad, finite_difference(f, [x, w], 0, ones), rtol=1e-6, atol=1e-8)


def test_the_kernels_refuse_arrays_they_would_misread():
    # the kernels pass raw pointers to BLAS: a strided or mistyped array must be refused,
    # not read as if it were C-contiguous of the input's type
    x = np.ones((2, 1, 4, 4), np.float32)
    w2, b = np.ones((2, 9), np.float32), np.zeros(2, np.float32)
    out = np.empty((2, 2, 16), np.float32)
    args = (1, 3, 3, 1, 1, 1, 1, 4, 4)
    for bad_x, bad_w in ((x[:, :, :, ::-1], w2), (x, w2.astype(np.float64)),
                         (x, np.ones((9, 2), np.float32).T)):
        with pytest.raises(RuntimeError, match="C-contiguous"):
            conv_op.CONV.forward(bad_x, bad_w, b, True, *args, out)
    conv_op.CONV.forward(x, w2, b, True, *args, out)
    assert_close(out[0, 0].reshape(4, 4),
                 np.array([[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]]))


def test_openblas_threads_are_restored_after_overlapping_holders():
    # two Python threads convolving at once: the thread count OpenBLAS had before comes back
    import threading

    from numgrad.kernels.cpu import _blas
    before = _blas._THREADS["get"]()
    outer, inner = _blas.one_thread(), _blas.one_thread()
    outer.__enter__()
    inner.__enter__()
    assert _blas._THREADS["get"]() == 1
    outer.__exit__(None, None, None)  # the first to enter leaves first
    assert _blas._THREADS["get"]() == 1
    inner.__exit__(None, None, None)
    assert _blas._THREADS["get"]() == before
    rs = np.random.RandomState(13)
    x = rs.randn(16, 2, 6, 6).astype(np.float32)
    w = rs.randn(3, 2, 3, 3).astype(np.float32)
    want = NF.conv2d(ng.tensor(x), ng.tensor(w), padding=1).numpy()
    got = [None] * 4

    def run(k):
        got[k] = NF.conv2d(ng.tensor(x), ng.tensor(w), padding=1).numpy()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g in got:
        np.testing.assert_array_equal(g, want)
    assert _blas._THREADS["get"]() == before
