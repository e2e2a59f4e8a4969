"""Shape and linear-algebra ops (einsum, repeat, tile, repeat_interleave, meshgrid, flip, roll,
diagonal, diag, diag_embed, trace, prod, cumprod, addmm, baddbmm, addcmul, addcdiv, lerp,
cross, tril/triu_indices, out= on the matrix products) against PyTorch: values, gradients,
node names, warnings and errors. The op table (``op_cases.py``) covers finite differences,
gradcheck and gradgradcheck."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, to_numpy, torch

import numgrad as ng

pytestmark = requires_torch


def _arrays(shapes, seed=0, zeros=False):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = rng.uniform(-1, 1, size=s)
        if zeros and a.size > 2:
            a.reshape(-1)[[1, a.size // 2]] = 0.0
        out.append(a)
    return out


def _run(m, call, arrays, dtype="float64"):
    ts = [m.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = eval(call, {"m": m, "x": ts[0] if ts else None, "ts": ts})
    return out, ts


def _names(node):
    return [type(n).__name__ if n is not None else None for n, _ in node.next_functions]


def _compare(call, shapes, dtype="float64", zeros=False, names=True):
    arrays = _arrays(shapes, zeros=zeros)
    ours, ts = _run(ng, call, arrays, dtype)
    theirs, tts = _run(torch, call, arrays, dtype)
    single = dtype == "float32" or theirs.dtype == torch.float32
    tol = {"rtol": 1e-5, "atol": 1e-6} if single else {"rtol": 1e-10, "atol": 1e-12}
    assert_close(ours, theirs, **tol)
    assert str(ours.dtype) == str(theirs.dtype)
    if names:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
        assert _names(ours.grad_fn) == _names(theirs.grad_fn)
    w = np.random.default_rng(1).uniform(0.5, 1.5, size=tuple(theirs.shape))
    (ours * ng.tensor(w.astype(dtype))).sum().backward()
    (theirs * torch.tensor(w.astype(dtype))).sum().backward()
    for t, tt in zip(ts, tts):
        assert (t.grad is None) == (tt.grad is None)
        if tt.grad is not None:
            assert_close(t.grad, tt.grad, **tol)
    return ours, theirs


def _same_error(call, arrays=()):
    env = {"np": np}
    # PyTorch's own checks: with opt_einsum installed (jax brings it) PyTorch hands einsums of
    # 3+ operands to it first, and its ValueErrors depend on the environment
    opt = torch.backends.opt_einsum.enabled
    torch.backends.opt_einsum.enabled = False
    try:
        with pytest.raises(Exception) as theirs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                eval(call, {**env, "m": torch, "ts": [torch.tensor(a) for a in arrays]})
    finally:
        torch.backends.opt_einsum.enabled = opt
    with pytest.raises(Exception) as ours:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eval(call, {**env, "m": ng, "ts": [ng.tensor(a) for a in arrays]})
    assert ours.type is theirs.type, (ours.value, theirs.value)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


# ---------------------------------------------------------------------------------- einsum

EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bj->bi", [(2, 3, 4), (2, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("i,i->", [(3,), (3,)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->ij", [(3, 1), (3, 4)]),
    ("ij,ik->", [(3, 4), (3, 5)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iji->j", [(3, 4, 3)]),
    ("ba", [(3, 4)]),
    ("bAa", [(3, 4, 5)]),
    ("Ab,bA->A", [(3, 4), (4, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij->...ji", [(5, 2, 3)]),
    ("a...,b...->ab...", [(2, 3, 4), (5, 4)]),
    ("...,...", [(2, 3), (3,)]),
    ("...->...", [(2, 3)]),
    ("i...->i", [(2, 3, 4)]),
    ("ij -> ji", [(3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("ii,ij->", [(3, 3), (3, 4)]),
    ("", [()]),
    ("->", [()]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_einsum_matches_pytorch(eq, shapes, dtype):
    args = ", ".join(f"ts[{i}]" for i in range(len(shapes)))
    # PyTorch orders 3+ operands by opt_einsum's path: the same values, other inner nodes
    _compare(f"m.einsum({eq!r}, {args})", shapes, dtype, names=len(shapes) < 3 and shapes[0])


def test_einsum_reference_values_and_forms():
    a, b = _arrays([(3, 4), (4, 5)])
    want = np.einsum("ij,jk->ik", a, b)
    ta, tb = ng.tensor(a), ng.tensor(b)
    assert_close(ng.einsum("ij,jk->ik", ta, tb), want, rtol=1e-12)
    assert_close(ng.einsum("ij,jk->ik", [ta, tb]), want, rtol=1e-12)
    assert_close(ng.einsum("ij,jk->ik", (ta, tb)), want, rtol=1e-12)
    assert_close(ng.einsum(ta, [0, 1], tb, [1, 2], [0, 2]), want, rtol=1e-12)
    assert_close(ng.einsum(ta, [Ellipsis, 1], tb, [1, 2]), want, rtol=1e-12)
    c = _arrays([(2, 3, 3)])[0]
    assert_close(ng.einsum("bii->b", ng.tensor(c)), np.einsum("bii->b", c), rtol=1e-12)


def test_einsum_of_empty_and_integer_operands_matches_pytorch():
    for call in ("m.einsum('ij,jk', m.zeros(3, 0), m.zeros(0, 5))",
                 "m.einsum('ij->', m.zeros(0, 3))",
                 "m.einsum('ij,jk', m.ones(3, 4, dtype=m.int64), m.ones(4, 5, dtype=m.int64))",
                 "m.einsum('i,i', m.arange(4), m.arange(4))"):
        ours, theirs = eval(call, {"m": ng}), eval(call, {"m": torch})
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("call", [
    "m.einsum('ij,jk->ik', m.ones(3, 4))",
    "m.einsum('ij,jk->ik', m.ones(3, 4), m.ones(5, 6))",
    "m.einsum('ij', m.ones(3, 4), m.ones(4))",
    "m.einsum('ij,jk->ik', m.ones(3, 4), m.ones(4, 5), m.ones(2))",
    "m.einsum('ij->ik', m.ones(3, 4))",
    "m.einsum('ij->ii', m.ones(3, 4))",
    "m.einsum('ijk->i', m.ones(3, 4))",
    "m.einsum('ijk...->i', m.ones(3, 4))",
    "m.einsum('i1->i', m.ones(3))",
    "m.einsum('i-j', m.ones(3))",
    "m.einsum('ij->i->j', m.ones(3, 4))",
    "m.einsum('i.j->i', m.ones(3, 4))",
    "m.einsum('...i...->i', m.ones(3, 4))",
    "m.einsum('ij->i..', m.ones(3, 4))",
    "m.einsum('ii->i', m.ones(3, 4))",
    "m.einsum('ij,ij->ij', m.ones(3, 2), m.ones(3, 4))",
    "m.einsum('', m.ones(3))",
    "m.einsum('ij,jk', m.ones(3, 4), m.ones(4, 5, dtype=m.float64))",
    "m.einsum('i', [1.0])",
    "m.einsum('i')",
    "m.einsum(3, m.ones(3))",
])
def test_einsum_errors_match_pytorch(call):
    _same_error(call)


# ------------------------------------------------------------------------------ repetition


@pytest.mark.parametrize("call,shapes", [
    ("x.repeat(2, 1, 3)", [(3, 2)]),
    ("x.repeat((2, 3))", [(3, 2)]),
    ("x.repeat([1, 1])", [(3, 2)]),
    ("x.repeat(0, 2)", [(3, 2)]),
    ("x.repeat(2, 3)", [()]),
    ("m.tile(x, (2,))", [(3, 2)]),
    ("x.tile(2, 1, 1)", [(3, 2)]),
    ("m.tile(x, [])", [(3, 2)]),
    ("x.repeat_interleave(2)", [(3, 2)]),
    ("x.repeat_interleave(3, dim=0)", [(3, 2)]),
    ("m.repeat_interleave(x, 2, dim=-1, output_size=4)", [(3, 2)]),
    ("x.repeat_interleave(m.tensor([1, 0, 2]), dim=0)", [(3, 2)]),
    ("x.repeat_interleave(m.tensor([2]), dim=1)", [(3, 2)]),
    ("x.repeat_interleave(m.tensor(2))", [(3, 2)]),
    ("m.repeat_interleave(x, m.tensor([0, 3]), dim=1, output_size=3)", [(3, 2)]),
])
def test_repetition_matches_pytorch(call, shapes):
    _compare(call, shapes)


def test_repeat_reference_values():
    a = _arrays([(2, 3)])[0]
    assert_close(ng.tensor(a).repeat(2, 1, 2), np.tile(a, (2, 1, 2)), rtol=0, atol=0)
    assert_close(ng.tensor(a).repeat_interleave(2, 1), np.repeat(a, 2, 1), rtol=0, atol=0)
    assert_close(ng.repeat_interleave(ng.tensor(a), ng.tensor([3, 0]), 0),
                 np.repeat(a, [3, 0], 0), rtol=0, atol=0)


def test_repeat_copies_and_repeat_interleave_of_repeats_match_pytorch():
    x = ng.ones(2, 2)
    y = x.repeat(1, 1)
    y.add_(1)
    assert x.sum().item() == 4  # a copy, never a view
    for call in ("m.repeat_interleave(m.tensor([1, 2, 0, 3]))",
                 "m.repeat_interleave(m.tensor([0, 0]))",
                 "m.repeat_interleave(m.tensor([], dtype=m.int64))",
                 "m.repeat_interleave(m.tensor([2, 1], dtype=m.int32), output_size=3)",
                 "m.tensor(2.0).repeat_interleave(3)"):
        ours, theirs = eval(call, {"m": ng}), eval(call, {"m": torch})
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("call", [
    "m.ones(3, 4).repeat(2)", "m.ones(3, 4).repeat(-1, 2)", "m.ones(3, 4).repeat()",
    "m.ones(3, 4).repeat_interleave(-1)",
    "m.ones(3, 4).repeat_interleave(m.tensor([1, 2]), dim=0)",
    "m.ones(3, 4).repeat_interleave(m.tensor([[1]]), dim=0)",
    "m.ones(3, 4).repeat_interleave(m.tensor([1.0, 2, 3]), dim=0)",
    "m.ones(3, 4).repeat_interleave(m.tensor([1, -2, 3]), dim=0)",
    "m.repeat_interleave(m.tensor(3))", "m.repeat_interleave(m.tensor([1.0, 2]))",
    "m.ones(3, 4).repeat_interleave(2, dim=1, output_size=7)",
    "m.ones(3, 4).repeat_interleave(m.tensor([1, 2, 3]), dim=0, output_size=5)",
    "m.ones(3, 4).repeat_interleave(2, dim=2)",
    "m.ones(3, 4).repeat_interleave(m.tensor([1, 2, 3, 4]))",
])
def test_repetition_errors_match_pytorch(call):
    _same_error(call)


# ------------------------------------------------------------------------------- meshgrid


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_pytorch(indexing):
    arrays = _arrays([(3,), (4,), (2,)])
    for k in (1, 2, 3):
        ours = ng.meshgrid(*[ng.tensor(a, requires_grad=True) for a in arrays[:k]],
                           indexing=indexing)
        theirs = torch.meshgrid(*[torch.tensor(a, requires_grad=True) for a in arrays[:k]],
                                indexing=indexing)
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_close(o, t, rtol=0, atol=0)
            assert type(o.grad_fn).__name__ == type(t.grad_fn).__name__
            assert _names(o.grad_fn) == _names(t.grad_fn)
    grids = ng.meshgrid(ng.tensor(arrays[0]), ng.tensor(arrays[1]), indexing=indexing)
    want = np.meshgrid(arrays[0], arrays[1], indexing=indexing)
    for g, w in zip(grids, want):
        assert_close(g, w, rtol=0, atol=0)


def test_meshgrid_warns_without_indexing_as_pytorch():
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        ours = ng.meshgrid(ng.ones(2), ng.ones(3))
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        theirs = torch.meshgrid(torch.ones(2), torch.ones(3))
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]
    _compare("m.meshgrid(m.tensor(2.0, dtype=m.float64), x, indexing='ij')[1] * x", [(3,)])


@pytest.mark.parametrize("call", [
    "m.meshgrid(m.ones(3), m.ones(2, dtype=m.float64), indexing='ij')",
    "m.meshgrid(m.ones(3), indexing='foo')", "m.meshgrid(indexing='ij')",
    "m.meshgrid([], indexing='ij')",
])
def test_meshgrid_errors_match_pytorch(call):
    _same_error(call)


# ------------------------------------------------------------------------- flip, roll


@pytest.mark.parametrize("call,shapes", [
    ("x.flip(0)", [(3, 4)]), ("x.flip(0, 1)", [(3, 4)]), ("m.flip(x, (0, -1))", [(2, 3, 4)]),
    ("m.flip(x, [])", [(3, 4)]), ("x.flip(0)", [()]), ("m.fliplr(x)", [(3, 4, 2)]),
    ("x.flipud()", [(3,)]), ("x.roll(1)", [(3, 4)]), ("m.roll(x, -5)", [(3, 4)]),
    ("x.roll(1, 0)", [(3, 4)]), ("m.roll(x, (1, 2), (0, 1))", [(3, 4)]),
    ("m.roll(x, shifts=(1, 1), dims=(0, 0))", [(3, 4)]), ("x.roll(7, -1)", [(3, 4)]),
    ("x.roll(1)", [()]), ("x.roll(2, 1)", [(3, 0)]),
])
def test_flip_and_roll_match_pytorch(call, shapes):
    _compare(call, shapes)


@pytest.mark.parametrize("call", [
    "m.ones(3, 4).flip(0, 0)", "m.ones(3, 4).flip(2)", "m.ones(3, 4).flip()",
    "m.flip(m.ones(3, 4), 0)", "m.ones(3).fliplr()", "m.tensor(1.0).flipud()",
    "m.ones(3, 4).roll((1, 2), (0,))", "m.ones(3, 4).roll(1, 2)", "m.ones(3, 4).roll([], [])",
    "m.roll(m.ones(3, 4), 1.5, 0)", "m.tensor(1.0).roll(1, 0)", "m.ones(3, 4).roll()",
])
def test_flip_and_roll_errors_match_pytorch(call):
    _same_error(call)


# ------------------------------------------------------------------------------ diagonals


@pytest.mark.parametrize("call,shapes", [
    ("x.diagonal()", [(3, 4)]), ("m.diagonal(x, 1)", [(3, 4)]), ("x.diagonal(-2, 1, 0)", [(3, 4)]),
    ("x.diagonal(offset=1, dim1=-1, dim2=0)", [(2, 3, 4)]), ("x.diagonal(10)", [(3, 4)]),
    ("m.diag(x)", [(3, 4)]), ("m.diag(x, -1)", [(3, 4)]), ("m.diag(x, 2)", [(3,)]),
    ("x.diag(-1)", [(3,)]), ("m.diag_embed(x)", [(2, 3)]), ("m.diag_embed(x, 1, 0, 2)", [(3, 4)]),
    ("x.diag_embed(-2, dim1=1, dim2=0)", [(3,)]), ("x.trace()", [(3, 4)]),
    ("m.trace(x)", [(4, 2)]), ("x.diagonal().sum() * 1", [(0, 3)]),
])
def test_diagonals_match_pytorch(call, shapes):
    _compare(call, shapes)


def test_diagonal_is_a_view_and_nodes_show_pytorchs_saved_values():
    x = ng.zeros(3, 3)
    d = x.diagonal()
    d.add_(1)
    assert_close(x, np.eye(3), rtol=0, atol=0)
    assert d._base is x
    a = np.arange(12.0).reshape(3, 4)
    ours = ng.tensor(a, requires_grad=True).diagonal(1, 1, 0).grad_fn
    theirs = torch.tensor(a, requires_grad=True).diagonal(1, 1, 0).grad_fn
    for name in ("dim1", "dim2", "offset", "self_sym_sizes"):
        assert tuple(np.atleast_1d(getattr(ours, "_saved_" + name))) == tuple(
            np.atleast_1d(getattr(theirs, "_saved_" + name))), name
    assert ng.tensor([[1, 2], [3, 4]]).trace().dtype is ng.int64


@pytest.mark.parametrize("call", [
    "m.ones(3, 4).diagonal(0, 0, 0)", "m.ones(3, 4).diagonal(0, 0, 2)",
    "m.diag(m.ones(2, 2, 2))", "m.diag_embed(m.ones(3, 4), 0, 0, 0)",
    "m.diag_embed(m.ones(3, 4), 0, 0, 3)", "m.diag_embed(m.tensor(1.0))",
    "m.diagonal(m.tensor(1.0))", "m.diag(m.tensor(1.0))", "m.diag(m.ones(3), 1.5)",
    "m.ones(2, 2, 2).trace()", "m.trace(m.ones(3))",
])
def test_diagonal_errors_match_pytorch(call):
    _same_error(call)


# ------------------------------------------------------------------------------- products


@pytest.mark.parametrize("call,shapes", [
    ("x.prod()", [(3, 4)]), ("m.prod(x, 1)", [(3, 4)]), ("x.prod(0, True)", [(3, 4)]),
    ("x.prod(-1, keepdim=True)", [(2, 3, 4)]), ("x.prod()", [()]), ("x.prod(0)", [()]),
    ("x.prod(axis=1)", [(3, 4)]), ("m.prod(x, 1, dtype=m.float32)", [(3, 4)]),
    ("x.cumprod(1)", [(3, 4)]), ("m.cumprod(x, dim=0)", [(4, 3)]), ("x.cumprod(0)", [()]),
    ("x.cumprod(-1, dtype=m.float32)", [(3, 4)]),
])
@pytest.mark.parametrize("zeros", [False, True], ids=["", "zeros"])
def test_products_match_pytorch(call, shapes, zeros):
    _compare(call, shapes, zeros=zeros)


def test_product_gradients_with_zeros_match_pytorch_and_finite_differences():
    """No zero, one zero and two zeros in a line: PyTorch's gradients (and second
    derivatives), which equal the finite differences of the polynomial."""
    a = np.array([[0.5, 1.5, 2.0, -1.0], [0.5, 0.0, 2.0, -1.0], [0.0, 1.5, 0.0, -1.0]])
    for fn in (lambda m, t: m.prod(t, 1), lambda m, t: t.prod(),
               lambda m, t: m.cumprod(t, 1), lambda m, t: t.t().cumprod(0)):
        x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        (g,) = ng.autograd.grad(fn(ng, x).sum(), x, create_graph=True)
        (tg,) = torch.autograd.grad(fn(torch, tx).sum(), tx, create_graph=True)
        assert_close(g, tg, rtol=1e-12, atol=1e-12)
        (gg,) = ng.autograd.grad((g * g).sum(), x)
        (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
        assert_close(gg, tgg, rtol=1e-12, atol=1e-12)

        def forward(arr, fn=fn):
            return to_numpy(fn(ng, ng.tensor(arr)))
        assert_close(g, finite_difference(forward, [a], 0, 1.0), rtol=1e-6, atol=1e-7)


def test_product_dtypes_and_empty_inputs_match_pytorch():
    for call in ("m.ones(3, dtype=m.int32).prod()", "m.ones(3, dtype=m.bool).prod()",
                 "m.zeros(0).prod()", "m.zeros(2, 0).prod(1)", "m.zeros(2, 0).prod(0)",
                 "m.tensor([1, 2, 3]).cumprod(0)", "m.tensor([2, 3]).prod(0, dtype=m.float64)",
                 "m.tensor([[True, False], [True, True]]).cumprod(1)",
                 "m.zeros(2, 0).cumprod(1)"):
        ours, theirs = eval(call, {"m": ng}), eval(call, {"m": torch})
        assert str(ours.dtype) == str(theirs.dtype), call
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("call", [
    "m.ones(3, 4).prod((0, 1))", "m.ones(3, 4).prod(dim=None)", "m.ones(3, 4).prod(2)",
    "m.ones(3, 4).cumprod(2)", "m.ones(3, 4).cumprod()", "m.cumprod([1.0], 0)",
])
def test_product_errors_match_pytorch(call):
    _same_error(call)


@pytest.mark.parametrize("call,shapes", [
    ("m.cross(ts[0], ts[1], dim=1)", [(4, 3), (4, 3)]),
    ("m.cross(ts[0], ts[1], dim=-2)", [(3, 2), (3, 1)]),
    ("ts[0].cross(ts[1], dim=0)", [(3,), (3,)]),
    ("m.cross(ts[0], ts[1])", [(2, 3, 3), (2, 3, 3)]),
])
def test_cross_matches_pytorch(call, shapes):
    _compare(call, shapes)


def test_cross_warns_without_dim_as_pytorch():
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg"):
        ng.cross(ng.ones(4, 3), ng.ones(4, 3))
    a, b = _arrays([(5, 3), (5, 3)])
    assert_close(ng.cross(ng.tensor(a), ng.tensor(b), 1), np.cross(a, b), rtol=1e-12)


@pytest.mark.parametrize("call", [
    "m.cross(m.ones(4, 4), m.ones(4, 4), dim=1)", "m.cross(m.ones(4, 4), m.ones(4, 4))",
    "m.cross(m.ones(2, 3), m.ones(3), dim=1)", "m.cross(m.ones(2, 3), m.ones(3, 3), dim=1)",
    "m.cross(m.ones(3), m.ones(3, dtype=m.float64))",
])
def test_cross_errors_match_pytorch(call):
    _same_error(call)


# ------------------------------------------------------------------------- multiply-add


@pytest.mark.parametrize("call,shapes", [
    ("m.addmm(ts[0], ts[1], ts[2])", [(3, 5), (3, 4), (4, 5)]),
    ("m.addmm(ts[0], ts[1], ts[2], beta=0.5, alpha=2)", [(5,), (3, 4), (4, 5)]),
    ("ts[0].addmm(ts[1], ts[2], beta=0)", [(1, 5), (3, 4), (4, 5)]),
    ("m.baddbmm(ts[0], ts[1], ts[2])", [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("m.baddbmm(ts[0], ts[1], ts[2], beta=2, alpha=-0.5)", [(5,), (2, 3, 4), (2, 4, 5)]),
    ("m.addcmul(ts[0], ts[1], ts[2])", [(3, 4), (3, 4), (3, 4)]),
    ("ts[0].addcmul(ts[1], ts[2], value=-1.5)", [(1,), (3, 1), (4,)]),
    ("m.addcdiv(ts[0], ts[1], ts[2], value=0.5)", [(3, 4), (4,), (3, 4)]),
    ("m.lerp(ts[0], ts[1], 0.25)", [(3, 4), (3, 4)]),
    ("m.lerp(ts[0], ts[1], 0.75)", [(3, 1), (4,)]),
    ("ts[0].lerp(ts[1], ts[2])", [(3, 4), (3, 4), (3, 4)]),
    ("m.lerp(ts[0], ts[1], ts[2])", [(3, 1), (4,), (2, 1, 1)]),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multiply_add_matches_pytorch(call, shapes, dtype):
    _compare(call, shapes, dtype)


def test_multiply_add_in_place_and_ignored_input_match_pytorch():
    a, b, c = _arrays([(3, 4), (3, 4), (3, 4)])
    for call in ("x.addcmul_(y, z, value=0.5)", "x.addcdiv_(y, z, value=2)", "x.lerp_(y, 0.3)",
                 "x.lerp_(y, z)", "x.addmm_(y[:, :3], z[:3], alpha=2)"):
        results = []
        for m in (ng, torch):
            x, y, z = m.tensor(a), m.tensor(b), m.tensor(c)
            r = eval(call, {"x": x, "y": y, "z": z})
            assert r is x
            results.append(x)
        assert_close(*results, rtol=1e-12, atol=1e-12)
    nan = np.full((3, 5), np.nan)
    mats = _arrays([(3, 4), (4, 5)])
    ours = ng.addmm(ng.tensor(nan), *[ng.tensor(m) for m in mats], beta=0)
    theirs = torch.addmm(torch.tensor(nan), *[torch.tensor(m) for m in mats], beta=0)
    assert_close(ours, theirs, rtol=1e-12)
    assert not np.isnan(to_numpy(ours)).any()
    # lerp is exact at both ends, as PyTorch's formula
    x, y = ng.tensor([1e8, -3.0]), ng.tensor([1.0, 7.0])
    assert_close(ng.lerp(x, y, 1.0), y, rtol=0, atol=0)


@pytest.mark.parametrize("call", [
    "m.addmm(m.ones(3, 5), m.ones(3, 4), m.ones(5, 5))",
    "m.addmm(m.ones(3, 5), m.ones(4), m.ones(4, 5))",
    "m.addmm(m.ones(4, 5), m.ones(3, 4), m.ones(4, 5))",
    "m.addmm(m.ones(3, 5), m.ones(3, 4), m.ones(4, 5, dtype=m.float64))",
    "m.addmm(m.ones(3, 5, 1), m.ones(3, 4), m.ones(4, 5))",
    "m.baddbmm(m.ones(2, 3, 5), m.ones(3, 4), m.ones(2, 4, 5))",
    "m.baddbmm(m.ones(2, 3, 5), m.ones(2, 3, 4), m.ones(3, 4, 5))",
    "m.baddbmm(m.ones(2, 3, 5), m.ones(2, 3, 4), m.ones(2, 5, 5))",
    "m.addcmul(m.ones(3), m.ones(3), m.ones(2))",
    "m.addcdiv(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64))",
    "m.addcmul(m.ones(3), m.ones(3), m.ones(3), 2)",
    "m.lerp(m.ones(3), m.ones(3, dtype=m.float64), 0.5)",
    "m.lerp(m.ones(3), m.ones(3), m.ones(3, dtype=m.float64))",
    "m.lerp(m.ones(3), m.ones(2), 0.5)",
    "m.lerp(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64), 0.5)",
])
def test_multiply_add_errors_match_pytorch(call):
    _same_error(call)


# --------------------------------------------------------------------- triangle indices


@pytest.mark.parametrize("call", [
    "m.tril_indices(3, 4)", "m.tril_indices(3, 4, 1)", "m.triu_indices(3, 4, -1)",
    "m.triu_indices(4, 3)", "m.tril_indices(0, 3)", "m.triu_indices(3, 3, 10)",
    "m.tril_indices(3, 3, -10)", "m.tril_indices(3, 3, dtype=m.int32)", "m.triu_indices(1, 1)",
])
def test_triangle_indices_match_pytorch(call):
    ours, theirs = eval(call, {"m": ng}), eval(call, {"m": torch})
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("call", [
    "m.tril_indices(-1, 3)", "m.tril_indices(3, -1)", "m.tril_indices(3, 3, dtype=m.float32)",
    "m.tril_indices(3.0, 3)",
])
def test_triangle_indices_errors_match_pytorch(call):
    _same_error(call)


# --------------------------------------------------------------------- out= on products


@pytest.mark.parametrize("fn,shapes", [
    ("mm", [(3, 4), (4, 5)]), ("matmul", [(2, 3, 4), (4, 5)]), ("matmul", [(4,), (4,)]),
    ("bmm", [(2, 3, 4), (2, 4, 5)]),
])
def test_out_on_matrix_products_matches_pytorch(fn, shapes):
    arrays = _arrays(shapes)
    results = []
    for m in (ng, torch):
        out = m.empty(7, dtype=m.float64)
        with pytest.warns(UserWarning, match="was resized"):
            r = getattr(m, fn)(*[m.tensor(a) for a in arrays], out=out)
        assert r is out
        same = m.empty(tuple(out.shape), dtype=m.float64)
        getattr(m, fn)(*[m.tensor(a) for a in arrays], out=same)
        results.append((out, same))
    assert_close(results[0][0], results[1][0], rtol=1e-12)
    assert_close(results[0][1], results[1][1], rtol=1e-12)
    bad = f"m.{fn}(*ts, out=m.empty((), dtype=m.float32))"
    _same_error(bad, arrays)
    grad = f"m.{fn}(ts[0].requires_grad_(), ts[1], out=m.empty(1, dtype=m.float64))"
    _same_error(grad, arrays)


# ---- in-place reshapes: the tensor's new shape, strides, node (PyTorch's in-place names),
# version and gradient; a leaf that requires grad refuses them

def _source(m, kind):
    x = m.ones(1, 2, 1, 3, requires_grad=kind != "no grad")
    if kind == "view":
        return (x * 2)[0], x
    if kind in ("leaf view", "no grad"):
        return x[0], x
    return (x if kind == "leaf" else x * 2), x


def _reshaped(m, kind, call):
    try:
        y, x = _source(m, kind)
        v0 = y._version
        r = eval(call, {"y": y})
        got = [r is y, tuple(y.shape), tuple(y.stride()), y._version - v0]
        if y.grad_fn is not None:
            got += [y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()]
            (y * m.arange(6.0).reshape(y.shape)).sum().backward()
            got.append(to_numpy(x.grad).tolist())
        return got
    except RuntimeError as e:  # the outcome under test
        return str(e)


@pytest.mark.parametrize("kind", ["leaf", "non-leaf", "view", "leaf view", "no grad"])
@pytest.mark.parametrize("call", [
    "y.unsqueeze_(1)", "y.unsqueeze_(-1)", "y.squeeze_()", "y.squeeze_(0)", "y.squeeze_((0, 1))",
    "y.squeeze_(dim=-2)", "y.transpose_(0, 1)", "y.swapdims_(0, -1)", "y.swapaxes_(1, 0)",
    "y.squeeze_().t_()", "y.t_()"])
def test_inplace_reshapes_match_pytorch(call, kind):
    assert _reshaped(ng, kind, call) == _reshaped(torch, kind, call)
