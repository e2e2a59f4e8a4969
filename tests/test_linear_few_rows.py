"""Fast paths of token-by-token generation: ``x @ W.T`` with few rows runs as (W @ x.T).T
(``kernels/cpu/linalg.gemm``), and the causal mask of ``scaled_dot_product_attention`` is made
once per size. Values, strides and graphs stay those of the plain computation and PyTorch's."""

import numpy as np
import pytest
from conftest import assert_close, raised

import numgrad as ng
from numgrad.kernels.cpu import linalg as L
from numgrad.nn import functional as F
from numgrad.ops import attention as _attention
from numgrad.ops import nn_layers as NL

torch = pytest.importorskip("torch")

# (rows, in, out): the swapped layout's range and its edges
SHAPES = [(4, 128, 384), (16, 128, 512), (32, 512, 128), (64, 784, 256), (3, 128, 384),
          (2, 1024, 1024), (33, 128, 384), (48, 128, 512), (56, 512, 128)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_gemm_with_transposed_weight_matches_plain_product(m, k, n):
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    out = np.empty((m, n), np.float32)
    L.gemm(a, w.T, out)
    # the same dot products; OpenBLAS's kernels may sum them in another order when the
    # roles swap (bit for bit equal with its AVX-512 kernels, not with its Haswell ones):
    # within float32 rounding of the float64 sum, as the plain call is
    bound = (np.abs(a).astype(np.float64) @ np.abs(w.T).astype(np.float64)) * k * 2.0 ** -24
    exact = a.astype(np.float64) @ w.T.astype(np.float64)
    assert (np.abs(out - exact) <= bound).all()
    assert (np.abs(np.matmul(a, w.T) - exact) <= bound).all()


def test_swap_taken_only_where_it_pays(monkeypatch):
    monkeypatch.setattr(L, "_wide_vectors", lambda: True)  # the thresholds measured with AVX-512
    a = np.zeros((16, 128), np.float32)
    w = np.zeros((384, 128), np.float32)
    out = np.empty((16, 384), np.float32)
    assert L._swap_pays(a, w.T, out)
    assert not L._swap_pays(a[:3], w.T, out[:3])  # OpenBLAS's small-matrix kernel
    assert not L._swap_pays(a, np.ascontiguousarray(w.T), out)  # already the fast layout
    assert not L._swap_pays(a.astype(np.float64), w.T.astype(np.float64), out.astype(np.float64))
    assert not L._swap_pays(np.zeros((128, 128), np.float32), w.T, np.empty((128, 384), np.float32))
    # 33-56 rows: for weights of 40,000 elements or more; 64 rows: only for big weights
    big = np.zeros((48, 128), np.float32)
    assert L._swap_pays(big, w.T, np.empty((48, 384), np.float32))
    assert not L._swap_pays(big, w[:128].T, np.empty((48, 128), np.float32))
    assert not L._swap_pays(np.zeros((64, 128), np.float32), w.T, np.empty((64, 384), np.float32))
    monkeypatch.setattr(L, "_wide_vectors", lambda: False)  # AVX2: up to 10 rows
    assert L._swap_pays(a[:10], w.T, out[:10])
    assert not L._swap_pays(a[:11], w.T, out[:11])
    assert not L._swap_pays(a, w.T, out)


@pytest.mark.parametrize("rows", [1, 5, 16, 40])
def test_linear_few_rows_values_grads_strides_match_torch(rows):
    rng = np.random.default_rng(rows)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, rows, 128), (384, 128),
                                                                    (384,)))
    res = []
    for lib in (ng, torch):
        xs, ws, bs = (lib.tensor(v, requires_grad=True) for v in (x, w, b))
        y = lib.nn.functional.linear(xs, ws, bs)
        y.sum().backward()
        res.append((y, xs.grad, ws.grad, bs.grad))
    (y, *g), (ty, *tg) = res
    assert y.stride() == ty.stride() and y.is_contiguous()
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    for u, v in zip((y, *g), (ty, *tg)):
        assert_close(u.detach().numpy(), v.detach().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("three_d", [False, True])
def test_causal_sdpa_over_growing_lengths_matches_torch(three_d):
    rng = np.random.default_rng(0)
    for t in (1, 2, 7, 7, 12):  # 7 twice: the kept mask
        shape = (2, t, 8) if three_d else (1, 2, t, 8)
        q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
        res = []
        for lib in (ng, torch):
            qs, ks, vs = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
            o = lib.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
            o.pow(2).sum().backward()
            res.append((o, qs.grad, ks.grad, vs.grad))
        if not three_d:  # 3-D: numgrad's bmm records BmmBackward0, PyTorch's matmul an
            # UnsafeViewBackward0 over it (left as it was)
            assert type(res[0][0].grad_fn).__name__ == type(res[1][0].grad_fn).__name__
        for u, w in zip(*res):
            assert_close(u.detach().numpy(), w.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_causal_mask_kept_is_never_handed_to_a_graph():
    s = ng.zeros(3, 3, requires_grad=True)
    kept = _attention.causal_mask(3, 3, s, s.detach())._data
    saved = _attention.causal_mask(3, 3, s, s)._data
    assert saved is not kept and np.array_equal(saved, kept)
    assert kept.tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    wide = _attention.causal_mask(2, 4, s, s.detach())._data  # upper-left aligned
    assert wide.tolist() == [[False, True, True, True], [False, False, True, True]]


# (rows, in, out, dtype, bias): past the few-rows kernel (more rows, a longer x, float64),
# the swapped layout and the plain one, no bias
LINEAR_CASES = [(65, 128, 384, np.float32, True), (48, 1024, 512, np.float32, True),
                (3, 16, 8, np.float64, True), (80, 128, 512, np.float32, False)]


@pytest.mark.parametrize("m,k,n,dt,has_bias", LINEAR_CASES)
def test_linear_kernel_equals_product_then_bias(m, k, n, dt, has_bias):
    """``kernels/cpu/linalg.linear`` (BLAS called from the kernel, the bias added in the
    same call) gives gemm's product plus the bias: bit for bit for an inner dimension that
    fits one of BLAS's blocks (BLAS adds the product to the bias), within a float32 rounding
    of the sum past it (each block's partial sum added to out in turn)."""
    rng = np.random.default_rng(m + n)
    x, w, b = (rng.standard_normal(s).astype(dt) for s in ((m, k), (n, k), (n,)))
    want = np.empty((m, n), dt)
    L.gemm(x, w.T, want)
    if has_bias:
        want = (want + b).astype(dt)
    out = np.empty((m, n), dt)
    assert L.linear_fits(x, w.T, b if has_bias else None, out)
    L.linear(x, w.T, b if has_bias else None, out)
    if k <= 128 or not has_bias:
        assert np.array_equal(out, want)
    else:
        assert_close(out, want, rtol=0, atol=4 * np.finfo(dt).eps * np.abs(want).max())
    # one row: the few-rows kernel for float32 (NumPy's matrix-vector product else)
    assert L.linear_fits(x[:1], w.T, b, out[:1]) == (dt == np.float32 and k <= 32768)
    assert not L.linear_fits(x, np.ascontiguousarray(w.T), b, out)


# (rows, in, out): the few-rows kernel's 4 x 4 blocks, its leftover rows and weight rows,
# a one-column input, its limits (64 rows; 32,768 elements of x)
FEW_ROWS = [(2, 128, 384), (5, 128, 65), (7, 3, 5), (16, 512, 128), (64, 128, 512),
            (13, 1, 6), (64, 512, 10)]


@pytest.mark.parametrize("m,k,n", FEW_ROWS)
def test_few_rows_linear_within_rounding_of_float64_and_torch(m, k, n):
    """x @ W^T (+ bias) for few float32 rows runs as compiled dot products
    (``_few_rows_linear``, both tiles: 4 rows by 4 for AVX-512, 2 by 4 for AVX2, whichever
    this CPU has): each output within float32 rounding of the float64 sum (the sum
    reassociated: not BLAS's order), infinities and NaN carried, and F.linear's values,
    strides and node next to PyTorch's."""
    rng = np.random.default_rng(m * n + k)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,)))
    x[m // 2, 0] = np.inf if k > 1 else np.nan
    exact = x.astype(np.float64) @ w.T.astype(np.float64)
    size = np.abs(x).astype(np.float64) @ np.abs(w.T).astype(np.float64)
    kernels = [lambda x, wt, bias, out: L.linear(x, wt, bias, out)]
    kernels += [lambda x, wt, bias, out, kernel=kernel: kernel(
        x, wt.T, L._EMPTY[x.dtype] if bias is None else bias, bias is not None, out)
        for kernel in L._FEW_ROWS_LINEAR.values()]
    for bias, run in ((bias, run) for bias in (b, None) for run in kernels):
        out = np.empty((m, n), np.float32)
        run(x, w.T, bias, out)
        want = exact if bias is None else exact + b
        bound = (size if bias is None else size + np.abs(b)) * (k + 1) * 2.0 ** -24
        finite = np.isfinite(want)
        assert np.array_equal(np.isnan(out), np.isnan(want))
        assert np.array_equal(out[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        assert (np.abs(out[finite] - want[finite]) <= bound[finite]).all()
    x[m // 2, 0] = 0.5
    size = np.abs(x) @ np.abs(w.T)
    res = []
    for lib in (ng, torch):
        y = lib.nn.functional.linear(lib.tensor(x[None]), lib.tensor(w), lib.tensor(b))
        res.append(y)
    assert res[0].stride() == res[1].stride()
    # both within float32 rounding of the exact sum (in different orders)
    assert_close(res[0].numpy(), res[1].numpy(), rtol=1e-5, atol=1e-6 * size.max())


@pytest.mark.parametrize("wide", [True, False])
def test_few_rows_kernel_takes_only_its_range(wide, monkeypatch):
    """Float64, more rows than the CPU's limit (64 with AVX-512, 32 with AVX2) and an x past
    32,768 elements keep the BLAS kernel; the CPU's tile (by its vector width) runs the rest."""
    rows = 64 if wide else 32
    calls = []
    monkeypatch.setattr(L, "_wide_vectors", lambda: wide)
    monkeypatch.setattr(L, "_FEW_ROWS_LINEAR", {
        w: (lambda *a, w=w: calls.append((w, a[0].shape))) for w in (True, False)})
    for m, k, dt in ((rows, 512, np.float32), (rows + 1, 16, np.float32),
                     (24, 2048, np.float32), (4, 16, np.float64)):
        x, w = np.ones((m, k), dt), np.ones((8, k), dt)
        out = np.empty((m, 8), dt)
        L.linear(x, w.T, None, out)
    assert calls == [(wide, (rows, 512))]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_outer_product_kernel_equals_blas(dt):
    """An inner dimension of 1 (a weight gradient at batch 1) runs ``_outer``: each element
    the one rounded product BLAS writes, also for strided operands, infinities and NaN."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((7, 3)).astype(dt)[:, 1:2]  # a strided column
    b = rng.standard_normal((2, 9)).astype(dt)[::2, ::2]  # a strided row
    a[2, 0], a[4, 0], b[0, 1] = np.inf, np.nan, 0.0
    out = np.full((7, 5), 7.0, dt)
    assert L._outer_shaped(a, b, out)
    L.gemm(a, b, out)
    with np.errstate(all="ignore"):
        want = a.astype(dt) * b.astype(dt)
    np.testing.assert_array_equal(out, want)


def test_linear_at_batch_one_gradients_match_torch():
    """A Linear layer at batch 1: its weight gradient (an outer product) and input gradient
    equal PyTorch's."""
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, 33), (17, 33), (17,)))
    res = []
    for lib in (ng, torch):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = lib.nn.functional.linear(xt, wt, bt)
        (y * y).sum().backward()
        res.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()))
    for ours, theirs in zip(*res):
        assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


# (batch, heads, queries, keys, head size, causal, dtype)
# (20 causal rows against 20 keys: the products in two row blocks)
ATTENTION_CASES = [(1, 4, 1, 1, 32, True, np.float32), (1, 2, 7, 7, 16, True, np.float32),
                   (2, 3, 5, 9, 8, True, np.float32), (2, 3, 9, 5, 8, True, np.float32),
                   (2, 2, 6, 4, 4, False, np.float32), (1, 2, 20, 20, 8, True, np.float32)]


@pytest.mark.parametrize("b,h,t,s,d,causal,dt", ATTENTION_CASES)
def test_fused_attention_kernel_matches_composite_and_torch(b, h, t, s, d, causal, dt,
                                                            monkeypatch):
    """The flash op's one-kernel forward and backward (``kernels/cpu/linalg.attention``,
    ``attention_backward``) on the strided heads of a packed projection: the output and the
    gradients equal to the composite's (matmul, mul, masked_fill, softmax, matmul) and its
    derivative's ops within a few ulp (each softmax sums only the keys its query sees, the
    causal products run in row blocks), and both to PyTorch's; the heads' gradients have
    PyTorch's strides (laid out as the heads)."""
    from numgrad.kernels import LIN
    rng = np.random.default_rng(t * s)
    packed = rng.standard_normal((b, max(t, s), 3 * h * d)).astype(dt)

    def run(lib):
        base = lib.tensor(packed, requires_grad=True)
        q, k, v = (base[:, :n, i * h * d:(i + 1) * h * d].reshape(b, n, h, d).transpose(1, 2)
                   for i, n in ((0, t), (1, s), (2, s)))
        strides = []
        for a in (q, k, v):
            a.register_hook(lambda g: strides.append(g.stride()))
        o = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fits = lib is ng and L.attention_fits(q._data, k._data, v._data)
        (o * o).sum().backward()
        run.strides = sorted(strides)
        return o, base.grad, fits

    o, g, fits = run(ng)
    strides = run.strides
    assert fits
    monkeypatch.setattr(LIN, "attention_fits", lambda *a: False)
    o2, g2, _ = run(ng)
    monkeypatch.undo()
    assert_close(o.detach().numpy(), o2.detach().numpy(), rtol=1e-6, atol=1e-6)
    # the backward kernel sums rowsum(dO O) in another order: a few ulp apart (of the
    # largest gradient, where dO V^T - rowsum cancels)
    assert_close(g.numpy(), g2.numpy(), rtol=1e-5, atol=1e-5 * np.abs(g2.numpy()).max())
    to, tg, _ = run(torch)
    assert type(o.grad_fn).__name__ == type(to.grad_fn).__name__
    assert strides == run.strides
    tol = 1e-5 if dt == np.float32 else 1e-12
    assert_close(o.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
    assert_close(g.numpy(), tg.numpy(), rtol=10 * tol, atol=10 * tol)


@pytest.mark.parametrize("shape", [(6, 16), (2, 3, 16), (2, 2, 3, 16), (1, 16), (3, 0, 16)])
def test_linear_without_graph_equals_ops_path_and_torch(shape, monkeypatch):
    """F.linear where nothing records it calls the linear kernel directly: the values of the
    ops path (reshape, addmm, view) bit for bit, a view of a (rows, out) result for inputs
    of more than two dims (as PyTorch's), no history (also for one float32 row: the
    few-rows kernel); a transposed input and an empty input take the ops path."""
    rng = np.random.default_rng(len(shape))
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (shape, (8, 16), (8,)))
    xs, ws, bs = ng.tensor(x), ng.tensor(w, requires_grad=True), ng.tensor(b)
    with ng.no_grad():
        y = F.linear(xs, ws, bs)
        y0 = F.linear(xs, ws)  # no bias: matmul's fold (no view)
        with monkeypatch.context() as mp:
            mp.setattr(NL, "_linear_no_graph", lambda *a: None)
            want = F.linear(xs, ws, bs)
            want0 = F.linear(xs, ws)
        yt = F.linear(xs.transpose(0, -1).contiguous().transpose(0, -1), ws, bs)
    ty = torch.nn.functional.linear(*(torch.tensor(a) for a in (x, w, b)))
    assert np.array_equal(y.numpy(), want.numpy())
    assert_close(yt.numpy(), y.numpy(), rtol=1e-5, atol=1e-5)  # (BLAS: another sum order)
    assert y.grad_fn is None and not y.requires_grad and y.stride() == ty.stride()
    assert (y._base is not None) == ty._is_view() == (want._base is not None)
    assert_close(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)
    ty0 = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w))
    assert np.array_equal(y0.numpy(), want0.numpy()) and y0.stride() == ty0.stride()
    assert (y0._base is not None) == ty0._is_view() == (want0._base is not None)
    # a weight that requires grad with grad mode on: the graph (PyTorch's node)
    g = F.linear(xs, ws, bs)
    tg = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w, requires_grad=True),
                                    torch.tensor(b))
    assert type(g.grad_fn).__name__ == type(tg.grad_fn).__name__
    assert np.array_equal(g.detach().numpy(), want.numpy())


def test_linear_without_graph_keeps_errors():
    x, w = np.ones((2, 3, 4), np.float32), np.ones((5, 4), np.float32)
    cases = [(x, np.ones((5, 3), np.float32), np.ones(5, np.float32)),  # inner sizes
             (x, w, np.ones(4, np.float32)),  # bias size
             (x, w.astype(np.float64), np.ones(5, np.float32)),  # dtypes
             (x, w, np.ones(5, np.float64))]
    for a, b, c in cases:
        got = []
        for lib in (ng, torch):
            with lib.no_grad():
                got.append(raised(lib.nn.functional.linear, *(lib.tensor(v) for v in (a, b, c))))
        assert got[0] is not None and got[0] == got[1], got


@pytest.mark.parametrize("shape,ns,dt,affine", [
    ((6, 16), (16,), np.float32, "both"), ((2, 3, 16), (16,), np.float32, "weight"),
    ((2, 3, 4, 8), (4, 8), np.float64, "both"), ((3, 16), (16,), np.float32, "none"),
    ((3, 16), (16,), np.float32, "transposed")])
def test_layer_norm_without_graph_equals_ops_path_and_torch(shape, ns, dt, affine,
                                                            monkeypatch):
    """F.layer_norm where nothing records it calls the layer-norm kernel directly: the
    values and strides of the op path bit for bit, PyTorch's values, no history; with grad
    mode on and a parameter requiring grad, the op (PyTorch's node); a normalized shape
    given as floats keeps PyTorch's error."""
    from numgrad.ops import norms
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(dt)
    w, b = (rng.standard_normal(ns).astype(dt) for _ in range(2))
    if affine == "transposed":  # a non-contiguous input
        x = np.ascontiguousarray(x.T).T
    ws, bs = ng.tensor(w, requires_grad=True), ng.tensor(b, requires_grad=True)
    params = {"both": (ws, bs), "weight": (ws, None)}.get(affine, (None, None))
    xs = ng.tensor(x)
    with ng.no_grad():
        y = F.layer_norm(xs, ns, *params)
        with monkeypatch.context() as mp:
            mp.setattr(norms, "layer_norm_no_graph", lambda *a: None)
            want = F.layer_norm(xs, ns, *params)
    assert y.grad_fn is None and not y.requires_grad
    assert np.array_equal(y.numpy(), want.numpy()) and y.stride() == want.stride()
    tparams = [None if p is None else torch.tensor(p.detach().numpy()) for p in params]
    ty = torch.nn.functional.layer_norm(torch.tensor(x), ns, *tparams)
    tol = 1e-5 if dt == np.float32 else 1e-12
    assert_close(y.numpy(), ty.numpy(), rtol=tol, atol=tol)
    if params[0] is not None:
        g = F.layer_norm(xs, ns, *params)
        assert type(g.grad_fn).__name__ == "NativeLayerNormBackward0"
        assert np.array_equal(g.detach().numpy(), want.numpy())
    bad = tuple(float(d) for d in ns)
    with ng.no_grad(), torch.no_grad():
        got = [raised(lib.nn.functional.layer_norm, t, bad)
               for lib, t in ((ng, xs), (torch, torch.tensor(x)))]
    assert got[0] is not None and got[0] == got[1], got


@pytest.mark.parametrize("shape", [(2, 5), (7,), (0, 3), ()])
def test_embedding_without_graph_equals_ops_path_and_torch(shape, monkeypatch):
    """F.embedding where nothing records it gathers the rows with the gather kernel
    directly: the rows of the ops path bit for bit, PyTorch's rows and strides, no history;
    out-of-range indices keep PyTorch's error."""
    rng = np.random.default_rng(len(shape))
    w = rng.standard_normal((9, 4)).astype(np.float32)
    idx = rng.integers(0, 9, shape)
    ws, iw = ng.tensor(w, requires_grad=True), ng.tensor(idx)
    with ng.no_grad():
        y = F.embedding(iw, ws)
        with monkeypatch.context() as mp:
            mp.setattr(NL, "unwatched", lambda: False)
            want = F.embedding(iw, ws)
    ty = torch.nn.functional.embedding(torch.tensor(idx), torch.tensor(w))
    assert np.array_equal(y.numpy(), want.numpy()) and np.array_equal(y.numpy(), ty.numpy())
    assert y.grad_fn is None and y.stride() == ty.stride() and y.shape == ty.shape
    assert type(F.embedding(iw, ws).grad_fn).__name__ == "EmbeddingBackward0"
    bad = np.full(shape or (1,), 9)
    with ng.no_grad():
        got = raised(F.embedding, ng.tensor(bad), ws)
    assert got == raised(torch.nn.functional.embedding, torch.tensor(bad), torch.tensor(w))


@pytest.mark.parametrize("causal,scale", [(True, None), (False, 0.3)])
def test_sdpa_without_graph_equals_flash_op_and_torch(causal, scale, monkeypatch):
    """scaled_dot_product_attention where nothing records it runs the attention kernel
    directly: the flash op's output bit for bit (strided heads of a packed projection),
    PyTorch's values, no history; a mask, dropout or grad takes the checked path."""
    rng = np.random.default_rng(7)
    packed = rng.standard_normal((2, 5, 3 * 2 * 4)).astype(np.float32)
    base = ng.tensor(packed)
    q, k, v = (base[:, :, i * 8:(i + 1) * 8].reshape(2, 5, 2, 4).transpose(1, 2)
               for i in range(3))
    sdpa = F.scaled_dot_product_attention
    with ng.no_grad():
        y = sdpa(q, k, v, is_causal=causal, scale=scale)
        with monkeypatch.context() as mp:
            mp.setattr(NL, "unwatched", lambda: False)
            want = sdpa(q, k, v, is_causal=causal, scale=scale)
    tq, tk, tv = (torch.tensor(t.numpy()) for t in (q, k, v))
    ty = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal,
                                                          scale=scale)
    assert np.array_equal(y.numpy(), want.numpy()) and y.grad_fn is None
    assert y.stride() == want.stride()  # (PyTorch's flash output is laid out (b, t, h, e))
    assert_close(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-6)
    qg = q.detach().requires_grad_()
    assert type(sdpa(qg, k, v, is_causal=causal).grad_fn).__name__ == \
        "ScaledDotProductFlashAttentionForCpuBackward0"
    for kw in ({"dropout_p": "0"}, {"is_causal": 1}, {"scale": "1"}):
        got = raised(sdpa, q, k, v, **kw)
        assert got is not None and got == raised(
            torch.nn.functional.scaled_dot_product_attention, tq, tk, tv, **kw)
