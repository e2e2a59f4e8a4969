"""Selection, counting and comparison ops (``numgrad/ops/selection.py``) against PyTorch: values,
indices (PyTorch's choice among ties), dtypes, gradients, node names and errors."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, to_numpy, torch

import numgrad as ng


def _same(ours, theirs, exact=True):
    """Equal results: tensors (dtype, shape, values with NaN in the same places), or
    tuples/named tuples of them."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        if hasattr(theirs, "_fields") or type(theirs).__module__ == "torch.return_types":
            assert type(ours).__name__ == type(theirs).__name__
        for a, b in zip(ours, theirs):
            _same(a, b, exact)
        return
    assert str(ours.dtype) == str(theirs.dtype), (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    a, b = to_numpy(ours), theirs.detach().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _both(call, **arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = eval(call, {"m": ng, **{k: ng.tensor(v) for k, v in arrays.items()}})
        theirs = eval(call, {"m": torch, **{k: torch.tensor(v) for k, v in arrays.items()}})
    return ours, theirs


def _ties(rng, shape, levels=5, nan=0.0, dtype=np.float32):
    a = rng.integers(0, levels, size=shape).astype(dtype)
    if nan:
        a[rng.random(shape) < nan] = np.nan
    return a


# ----------------------------------------------------------------------------------------
# topk
# ----------------------------------------------------------------------------------------


@requires_torch
def test_topk_picks_pytorchs_indices_among_ties_and_nans():
    """Both of PyTorch's paths (partial sort for small k, selection + sort otherwise), sorted
    and unsorted, on lines full of ties and NaN."""
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 400))
        k = int(rng.integers(0, n + 1)) if trial % 3 else int(rng.integers(0, max(n // 64, 1)))
        a = _ties(rng, (2, n), levels=int(rng.integers(1, 30)), nan=0.05 * (trial % 2))
        largest, srt = bool(trial % 4 < 2), bool(trial % 5)
        ours = ng.topk(ng.tensor(a), k, largest=largest, sorted=srt)
        theirs = torch.topk(torch.tensor(a), k, largest=largest, sorted=srt)
        _same(ours, theirs)


@requires_torch
@pytest.mark.parametrize("call", [
    "m.topk(x, 2)", "x.topk(3, dim=0)", "m.topk(x, 1, 1, False)", "m.topk(x, 4, -1, True, False)",
    "m.topk(x, k=0)", "m.topk(x, 5)", "m.topk(i, 2, 0)", "m.topk(x[0, 0, 0], 1)",
    "m.topk(x[0, 0, 0], 0)", "m.topk(m.zeros(0, 3), 2)", "m.topk(x.double(), 3, 1)",
])
def test_topk_calls_match_pytorch(call):
    rng = np.random.default_rng(1)
    _same(*_both(call, x=_ties(rng, (3, 4, 5)), i=rng.integers(0, 4, (6, 2))))


@requires_torch
def test_topk_gradient_node_and_saved_values_match_pytorch():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 70)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    v, tv = ng.topk(x, 2, 1).values, torch.topk(tx, 2, 1).values
    assert type(v.grad_fn).__name__ == type(tv.grad_fn).__name__ == "TopkBackward0"
    assert v.grad_fn._saved_self_sym_sizes == tuple(tv.grad_fn._saved_self_sym_sizes)
    assert v.grad_fn._saved_dim == 1
    (v * ng.tensor(w)).sum().backward()
    (tv * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad)


def test_topk_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    a = rng.permutation(24).reshape(4, 6) / 7.0
    w = rng.uniform(0.5, 1.5, (4, 3))
    x = ng.tensor(a, requires_grad=True)
    (ng.topk(x, 3, largest=False).values * ng.tensor(w)).sum().backward()

    def f(arr):
        return ng.topk(ng.tensor(arr), 3, largest=False).values.numpy()
    assert_close(x.grad, finite_difference(f, [a], 0, w))


# ----------------------------------------------------------------------------------------
# kthvalue, median, nanmedian, mode, cummax, cummin
# ----------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("fn", ["kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"])
def test_selections_pick_pytorchs_indices_among_ties(fn):
    rng = np.random.default_rng(4)
    for trial in range(60):
        n = int(rng.integers(1, 120))
        a = _ties(rng, (3, n), levels=int(rng.integers(1, 12)), nan=0.1 * (trial % 2))
        args = (int(rng.integers(1, n + 1)),) if fn == "kthvalue" else ()
        ours = getattr(ng, fn)(ng.tensor(a), *args, 1 if fn.startswith("cum") else -1)
        theirs = getattr(torch, fn)(torch.tensor(a), *args, 1 if fn.startswith("cum") else -1)
        _same(ours, theirs)


@requires_torch
@pytest.mark.parametrize("call", [
    "m.kthvalue(x, 2)", "m.kthvalue(x, 3, 0, True)", "x.kthvalue(1, dim=1)", "m.kthvalue(s, 1)",
    "m.kthvalue(m.zeros(2, 0), 1, 0)", "m.median(x)", "m.median(x, 1)", "x.median(0, keepdim=True)",
    "m.median(i)", "m.median(i, 0)", "m.median(m.zeros(0))", "m.median(s)", "m.median(s, 0)",
    "m.median(n)", "m.median(n, 1)", "m.nanmedian(n)", "m.nanmedian(n, 1)",
    "m.nanmedian(m.tensor([float('nan')] * 3))", "m.mode(x)", "m.mode(x, 0, True)", "x.mode(1)",
    "m.mode(i, 0)", "m.mode(s)", "m.mode(m.tensor([True, False, True]))", "m.cummax(x, 1)",
    "m.cummin(x, 0)", "x.cummax(-1)", "m.cummin(i, 0)", "m.cummax(s, 0)", "m.cummax(n, 1)",
    "m.cummin(n, 1)", "m.cummax(m.zeros(0), 0)", "m.cummax(m.tensor([True, False]), 0)",
])
def test_selection_calls_match_pytorch(call):
    rng = np.random.default_rng(5)
    n = _ties(rng, (3, 5), nan=0.3)
    _same(*_both(call, x=_ties(rng, (4, 5)), i=rng.integers(0, 3, (5, 2)), s=np.float32(2.5),
                 n=n))


@requires_torch
@pytest.mark.parametrize("call", [
    "m.kthvalue(x, 2, 1)", "m.kthvalue(x, 1, 0, True)", "m.median(x)", "m.median(x, 0)",
    "m.nanmedian(x)", "m.nanmedian(x, 1, True)", "m.mode(x, 1)", "m.cummax(x, 1)", "m.cummin(x, 0)",
    "m.median(t)", "m.median(t, 1)",
])
def test_selection_gradients_and_nodes_match_pytorch(call):
    """Including ties: the global median shares its gradient among the equal elements."""
    rng = np.random.default_rng(6)
    x = rng.permutation(20).reshape(4, 5).astype(np.float64)
    t = _ties(rng, (4, 5), levels=3, dtype=np.float64)
    outs = []
    for m in (ng, torch):
        xs = {"x": m.tensor(x, requires_grad=True), "t": m.tensor(t, requires_grad=True)}
        r = eval(call, {"m": m, **xs})
        v = r if not isinstance(r, tuple) else r[0]
        w = m.tensor(np.arange(1.0, v.numel() + 1).reshape(tuple(v.shape)))
        (v * w).sum().backward()
        outs.append((type(v.grad_fn).__name__, xs["x"].grad, xs["t"].grad))
    assert outs[0][0] == outs[1][0]
    for a, b in zip(outs[0][1:], outs[1][1:]):
        if b is None:
            assert a is None
        else:
            assert_close(a, b, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------
# all, any, count_nonzero
# ----------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("call", [
    "m.all(x)", "m.any(x)", "x.all(1)", "x.any(dim=0)", "m.all(x, (0, 2))",
    "m.any(x, [1, 2], True)",
    "x.all(dim=-1, keepdim=True)", "m.all(x, ())", "m.any(x, dim=[])", "m.all(b, 1)", "m.any(b)",
    "m.all(u)", "m.any(u, 0)", "m.all(m.zeros(0, 3), 0)", "m.any(m.zeros(0, 3), 0)",
    "m.all(m.tensor(float('nan')))", "m.all(m.tensor(2.0), 0)", "m.any(m.tensor(0.0), (0,))",
    "m.all(x, axis=1, keepdims=True)", "m.count_nonzero(x)", "m.count_nonzero(x, 1)",
    "m.count_nonzero(x, (0, 2))", "x.count_nonzero(dim=[0])", "m.count_nonzero(b, -1)",
    "m.count_nonzero(m.tensor(3.0), 0)", "m.count_nonzero(m.zeros(0, 2), 0)",
])
def test_truth_reductions_match_pytorch(call):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, (3, 4, 2)).astype(np.float32)
    x[0, 0, 0] = np.nan
    _same(*_both(call, x=x, b=rng.random((3, 4)) < 0.7,
                 u=rng.integers(0, 3, (3, 4)).astype(np.uint8)))


def test_truth_reductions_do_not_record_a_graph():
    x = ng.ones(2, 3, requires_grad=True)
    for r in (ng.all(x, 1), x.any(), ng.count_nonzero(x, 0)):
        assert not r.requires_grad and r.grad_fn is None


# ----------------------------------------------------------------------------------------
# unique, unique_consecutive
# ----------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("call", [
    "m.unique(x)", "m.unique(x, return_inverse=True)", "m.unique(x, return_counts=True)",
    "m.unique(x, sorted=False, return_inverse=True, return_counts=True)", "x.unique()",
    "i.unique(return_inverse=True, return_counts=True)", "m.unique(n, return_inverse=True, "
    "return_counts=True)", "m.unique(b)", "m.unique(m.tensor(3.0), return_inverse=True)",
    "m.unique(m.zeros(0), return_inverse=True, return_counts=True)",
    "m.unique(m.tensor([-0.0, 0.0]))",
    "m.unique(r, dim=0, return_inverse=True, return_counts=True)",
    "m.unique(r, dim=1, return_inverse=True, return_counts=True)", "m.unique(r3, dim=1)",
    "m.unique(m.zeros(2, 0, 3), dim=1)", "m.unique_consecutive(c)",
    "m.unique_consecutive(c, return_inverse=True, return_counts=True)",
    "m.unique_consecutive(r, dim=0, return_counts=True)", "m.unique_consecutive(i, dim=1)",
])
def test_unique_matches_pytorch(call):
    rng = np.random.default_rng(8)
    r = rng.integers(0, 2, (6, 3))
    r[3] = r[1]
    _same(*_both(call, x=_ties(rng, (3, 4)), i=rng.integers(0, 4, (2, 5)),
                 n=np.array([3.0, np.nan, 1.0, np.nan, 3.0]), b=rng.random(6) < 0.5, r=r,
                 r3=rng.integers(0, 2, (2, 5, 2)), c=np.array([1, 1, 2, 2, 3, 1, 1, 2])))


# ----------------------------------------------------------------------------------------
# histc, histogram
# ----------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("call", [
    "m.histc(x)", "m.histc(x, 7)", "m.histc(x, 4, -1, 1)", "x.histc(bins=5, min=0.25, max=0.75)",
    "m.histc(x, 4, 2, 2)", "m.histc(m.zeros(0), 3)", "m.histc(m.ones(3), 3)", "m.histc(e, 10)",
    "m.histc(e, 10, 0, 1)", "m.histc(x.double(), 13, -0.5, 0.9)",
    "m.histogram(x, 3)", "m.histogram(x, 1000)", "m.histogram(x, 37, range=(-0.3, 0.8))",
    "m.histogram(x, 4, density=True)", "m.histogram(x, 5, weight=w)",
    "m.histogram(x, 5, weight=w, density=True)", "m.histogram(x, m.tensor([-1.0, 0.0, 0.5, 2.0]))",
    "m.histogram(x, m.tensor([2.0, 1.0]))", "m.histogram(m.ones(3), 2)",
    "m.histogram(m.zeros(0), 2)",
    "m.histogram(e, 10)", "m.histogram(e, 64)", "m.histogram(x.double(), 200, range=(-1, 1))",
])
def test_histograms_match_pytorch(call):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((50, 4)).astype(np.float32)
    e = (np.arange(11) / 10).astype(np.float32)  # values on the bin edges
    w = rng.uniform(0, 2, (50, 4)).astype(np.float32)
    ours, theirs = _both(call, x=x, e=e, w=w)
    if isinstance(ours, tuple):  # the edges of 16 or more bins may differ by 1 ulp
        assert type(ours).__name__ == type(theirs).__name__ == "histogram"
        edges_exact = ours.bin_edges.numel() < 16
        _same(ours.bin_edges, theirs.bin_edges, exact=edges_exact)
        ours, theirs = ours.hist, theirs.hist
    _same(ours, theirs, exact="weight" not in call and "density" not in call)


# ----------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("call", [
    "m.topk(x, 6)", "m.topk(x, -1)", "m.topk(x, 2, dim=2)", "m.topk(x, 2.0)", "m.topk([1.0], 1)",
    "m.topk(m.tensor([True, False]), 1)", "m.topk(m.tensor(3.0), 2)", "m.topk(m.zeros(0, 3), 1, 0)",
    "m.kthvalue(x, 6)", "m.kthvalue(x, 0)", "m.kthvalue(m.zeros(2, 0), 1)", "m.kthvalue(x, 1, 2)",
    "m.median(m.zeros(0, 2), 0)", "m.median(m.tensor([True]))", "m.mode(m.zeros(0))",
    "m.mode(m.zeros(2, 0))", "m.cummax(x)", "m.cummin(x, 3)", "m.all(x, 3)", "m.any(x, (0, 0))",
    "m.count_nonzero(x, (1, 1))", "m.unique(x, dim=2)", "m.unique(m.zeros(2, 0, 3), dim=0)",
    "m.histc(m.tensor([1, 2]), 4)", "m.histc(x, 4, 3, 0)", "m.histc(x, 0)", "m.histc(x, -1)",
    "m.histc(x, 4, 0, float('inf'))", "m.histc(m.tensor([1.0, float('nan')]), 2)",
    "m.histogram(x, 3, range=(2.0, 1.0))", "m.histogram(x, 0)", "m.histogram(x, m.tensor([1.0]))",
    "m.histogram(m.tensor([1, 2]), 2)", "m.histogram(x, 2, weight=m.ones(3))",
    "m.histogram(x, 3, range=(0.0, float('inf')))", "m.histogram(x, m.tensor([[0.0, 1.0]]))",
    "m.histogram(x, 3, weight=m.ones(4, 5, dtype=m.float64))",
])
def test_errors_match_pytorch(call):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    with pytest.raises(Exception) as theirs:
        eval(call, {"m": torch, "x": torch.tensor(x)})
    with pytest.raises(Exception) as ours:
        eval(call, {"m": ng, "x": ng.tensor(x)})
    assert ours.type is theirs.type, (ours.value, theirs.value)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


@requires_torch
@pytest.mark.parametrize("key", [
    "[m.tensor([0, 1]), m.tensor([0, 1, 2])]", "[[0, 1], [0, 1, 2]]", "[[0, 1], :, [1, 2, 3]]",
    "[m.tensor([0, 1]), m.tensor([[0, 1, 2]])]",
    "[m.tensor([0, 1]), m.tensor([True, False, True, False, True])]",
])
@pytest.mark.parametrize("store", [False, True])
def test_index_tensors_that_do_not_broadcast_raise_pytorchs_error(key, store):
    errors = []
    for m in (torch, ng):
        x = m.zeros(4, 5, 6)
        with pytest.raises(IndexError) as info:
            exec(f"x{key} = 1.0" if store else f"x{key}", {"m": m, "x": x})
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert errors[0].startswith("shape mismatch: indexing tensors could not be broadcast")
