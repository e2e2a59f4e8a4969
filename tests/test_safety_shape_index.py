"""Shape and indexing ops on odd input (0-d tensors, empty dims, duplicate dims, mixed dtypes,
views) behave as in PyTorch: the same exception class and message, or the same values,
dtype, shape, ``requires_grad`` and gradients.

Each case is one function of the library module (``numgrad`` or ``torch``), run under both.
"""

import warnings

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

pytestmark = requires_torch


def _setitem(make, key, value):
    def run(t):
        x = make(t)
        x[key(t) if callable(key) else key] = value(t) if callable(value) else value
        return x
    return run


def _leaf_setitem(key, value=1.0):
    def run(t):
        x = t.zeros(2, 3, requires_grad=True)
        x[key] = value
    return run


ERRORS = [
    # shape ops on 0-d tensors: PyTorch's dim checks and messages
    ("flatten 0-d dim 1", lambda t: t.flatten(t.tensor(4.0), 0, 1)),
    ("narrow 0-d", lambda t: t.tensor(4.0).narrow(0, 0, 1)),
    ("narrow negative length", lambda t: t.zeros(3).narrow(0, 0, -1)),
    ("narrow start past the end", lambda t: t.zeros(3).narrow(0, 4, 0)),
    ("narrow start before the start", lambda t: t.zeros(3).narrow(0, -4, 0)),
    ("split 0-d", lambda t: t.tensor(4.0).split(1)),
    ("split sizes 0-d", lambda t: t.split(t.tensor(4.0), [1], 5)),
    ("split negative size before the dim", lambda t: t.zeros(3).split(-1, 5)),
    ("chunk 0-d", lambda t: t.tensor(4.0).chunk(2)),
    ("chunk zero chunks before the dim", lambda t: t.zeros(3).chunk(0, 5)),
    ("unflatten empty sizes", lambda t: t.zeros(3).unflatten(0, ())),
    ("unflatten 0-d", lambda t: t.tensor(4.0).unflatten(0, (1,))),
    ("unflatten product", lambda t: t.zeros(2, 6).unflatten(1, (4, -1))),
    ("unflatten two -1", lambda t: t.zeros(2, 6).unflatten(1, (-1, -1))),
    ("unflatten negative size", lambda t: t.zeros(2, 6).unflatten(1, (-2, 3))),
    ("reshape negative size", lambda t: t.zeros(6).reshape(-2, -3)),
    ("movedim repeated source", lambda t: t.movedim(t.zeros(2, 3), (0, -2), (0, 1))),
    ("movedim repeated destination", lambda t: t.movedim(t.zeros(2, 3), (0, 1), (1, 1))),
    ("movedim lengths", lambda t: t.movedim(t.zeros(2, 3), (0, 1), (0,))),
    ("movedim 0-d dim 1", lambda t: t.movedim(t.tensor(1.0), 1, 0)),
    ("permute without dims", lambda t: t.tensor(1.0).permute()),
    ("permute 0-d with a dim", lambda t: t.tensor(1.0).permute(0)),
    ("expand without sizes", lambda t: t.tensor(1.0).expand()),
    ("mT of 1-D", lambda t: t.zeros(3).mT),
    ("squeeze repeated dims", lambda t: t.zeros(1, 2).squeeze((0, -2))),
    ("squeeze repeated dims 0-d", lambda t: t.tensor(1.0).squeeze((0, 0))),
    # lists of tensors
    ("stack dim checked before sizes", lambda t: t.stack([t.tensor(4), t.zeros(0)], 1)),
    ("stack sizes", lambda t: t.stack([t.tensor(4), t.zeros(0)], 0)),
    ("hstack of nothing", lambda t: t.hstack([])),
    ("vstack of nothing", lambda t: t.vstack([])),
    ("cat 0-d at position 1", lambda t: t.cat([t.zeros(2, 3), t.tensor(2.0)])),
    ("cat 0-d after a skipped empty", lambda t: t.cat([t.zeros(0), t.tensor(2.0)])),
    ("hstack 2-D with 0-d", lambda t: t.hstack([t.zeros(2, 3), t.tensor(2.0)])),
    # take_along_dim
    ("take_along_dim 0-d", lambda t: t.take_along_dim(t.tensor(0.3), t.tensor(0), 0)),
    ("take_along_dim int32 index",
     lambda t: t.take_along_dim(t.zeros(2, 3), t.zeros(2, 1, dtype=t.int32), 0)),
    ("take_along_dim dims", lambda t: t.take_along_dim(t.zeros(2, 3), t.tensor([0]), 0)),
    ("take_along_dim broadcast",
     lambda t: t.take_along_dim(t.zeros(2, 3), t.zeros(1, 2, dtype=t.long), 0)),
    ("take_along_dim empty dim",
     lambda t: t.take_along_dim(t.zeros(2, 0), t.zeros(2, 1, dtype=t.long), 1)),
    ("take_along_dim flat view", lambda t: t.take_along_dim(t.zeros(2, 3).t(), t.tensor([1]))),
    ("take_along_dim flat past the end", lambda t: t.take_along_dim(t.zeros(2, 3), t.tensor([6]))),
    # index_select: PyTorch's kernels each have their message
    ("index_select 0-d two indices", lambda t: t.index_select(t.tensor(4), 0, t.tensor([0, 0]))),
    ("index_select 0-d no index",
     lambda t: t.index_select(t.tensor(4), 0, t.tensor([], dtype=t.long))),
    ("index_select 0-d negative", lambda t: t.index_select(t.tensor(4), 0, t.tensor([-1]))),
    ("index_select matrix index", lambda t: t.index_select(t.zeros(3), 0, t.tensor([[0]]))),
    ("index_select float index", lambda t: t.index_select(t.tensor(4), 0, t.tensor([0.0]))),
    ("index_select list index", lambda t: t.index_select(t.zeros(2, 2), 1, [0])),
    ("index_select dim 0", lambda t: t.index_select(t.zeros(2, 3), 0, t.tensor([5]))),
    ("index_select dim 1", lambda t: t.index_select(t.zeros(2, 3), 1, t.tensor([5]))),
    ("index_select dim 1 negative", lambda t: t.index_select(t.zeros(2, 3), 1, t.tensor([-1]))),
    ("index_select empty axis", lambda t: t.index_select(t.zeros(2, 0), 1, t.tensor([0]))),
    ("index_select empty self", lambda t: t.index_select(t.zeros(2, 0), 0, t.tensor([5]))),
    # getitem
    ("0-d slice step 0", lambda t: t.tensor(4.0)[::0]),
    ("0-d slice step -1", lambda t: t.tensor(4.0)[::-1]),
    ("0-d slice", lambda t: t.tensor(4.0)[:]),
    ("0-d slice in a tuple", lambda t: t.tensor(4.0)[(slice(None, None, 0),)]),
    ("index of an empty dim", lambda t: t.zeros(1, 0)[:, [5]]),
    # setitem: PyTorch's order of checks
    ("index put dtypes", _setitem(lambda t: t.zeros(3), [0], lambda t: t.tensor(1))),
    ("index put dtypes after the shape",
     _setitem(lambda t: t.zeros(2, 3), [0], lambda t: t.zeros(7, dtype=t.long))),
    ("index put dtypes before the bounds",
     _setitem(lambda t: t.zeros(1, 1), (0, [2, 0]), lambda t: t.tensor(4))),
    ("0-d mask is an index put",
     _setitem(lambda t: t.zeros(3), lambda t: t.tensor(True), lambda t: t.zeros(1, dtype=t.long))),
    ("negative step with an index",
     _setitem(lambda t: t.zeros(1, 1), ([0, 0], slice(None, None, -1)), 1.5)),
    ("uint8 overflow", _setitem(lambda t: t.zeros(2, dtype=t.uint8), Ellipsis, 300)),
    ("int nan", _setitem(lambda t: t.zeros(2, dtype=t.long), Ellipsis, float("nan"))),
    ("mask fill nan into int", _setitem(lambda t: t.zeros(3, dtype=t.long),
                                        lambda t: t.tensor([True, False, True]),
                                        lambda t: t.tensor(float("nan")))),
    ("slice of an expanded tensor", _setitem(lambda t: t.tensor([4]).expand(2), slice(None), 7)),
    ("leaf: bounds first", _leaf_setitem((5, [5]))),
    ("leaf: too many indices first", _leaf_setitem((0, 0, 0))),
    ("leaf: advanced", _leaf_setitem([5])),
    ("leaf: ellipsis", _leaf_setitem((Ellipsis,))),
    ("leaf: full slices", _leaf_setitem((slice(None), slice(0, 3)))),
    ("view of leaf: int", _leaf_setitem((0, [0]))),
    ("view of leaf: slice", _leaf_setitem(slice(-2, None))),
    ("view of leaf: None", _leaf_setitem(None)),
]


def _outcome(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn(lib), None
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's below
        return "raised", type(e), str(e)


def _builtin(cls):
    return next(c for c in cls.__mro__ if c.__module__ == "builtins")


@pytest.mark.parametrize("name, fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_pytorch(name, fn):
    got, want = _outcome(fn, ng), _outcome(fn, torch)
    assert want[0] == "raised", f"{name}: PyTorch succeeded"
    assert got[0] == "raised", f"{name}: numgrad returned {got[1]!r}"
    assert got[1] is _builtin(want[1]), f"{name}: {got[1].__name__}: {got[2]}"
    # PyTorch appends a C++ backtrace to some messages
    assert got[2] == want[2].split("\nException raised from")[0]


def _np(t):
    return t.detach().numpy()


def _same(got, want, where):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), where
        for k, (a, b) in enumerate(zip(got, want)):
            _same(a, b, f"{where}[{k}]")
        return
    assert tuple(got.shape) == tuple(want.shape), f"{where}: {got.shape} vs {want.shape}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], where
    assert got.requires_grad == want.requires_grad, f"{where}: requires_grad"
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6, err_msg=where)


def _leaves(lib, *arrays):
    return [lib.tensor(np.asarray(a, np.float32), requires_grad=True) for a in arrays]


def _flat(out):
    return [t for o in out for t in _flat(o)] if isinstance(out, (tuple, list)) else [out]


def _check_grads(fn, arrays):
    """fn(lib, *leaves) under both libraries: equal results and leaf gradients."""
    results = []
    for lib in (ng, torch):
        leaves = _leaves(lib, *arrays)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib, *leaves)
        outs = [o for o in _flat(out) if o.requires_grad]
        rng = np.random.default_rng(0)
        grads = [lib.tensor(rng.standard_normal(tuple(o.shape)).astype(np.float32))
                 for o in outs]
        if outs:
            lib.autograd.backward(outs, grads)
        results.append((out, [leaf.grad for leaf in leaves]))
    (nout, ngrads), (tout, tgrads) = results
    _same(nout, tout, "result")
    for k, (a, b) in enumerate(zip(ngrads, tgrads)):
        assert (a is None) == (b is None), f"grad of leaf {k}"
        if b is not None:
            _same(a, b, f"grad of leaf {k}")


WORKS = [
    ("flatten 0-d", lambda L, x: L.flatten(x, -1, 0), [4.0]),
    ("movedim 0-d is an alias", lambda L, x: L.movedim(x, 0, -1), [4.0]),
    ("movedim", lambda L, x: L.movedim(x, (0, 1), (2, 0)), np.ones((2, 3, 4))),
    ("mT 0-d is the identity", lambda L, x: (x * 2).mT, 4.0),
    ("x[()] of 0-d", lambda L, x: x[()], 4.0),
    ("x[...] of 0-d", lambda L, x: x[(Ellipsis,)], 4.0),
    ("expand 0-d to ()", lambda L, x: x.expand(()), 4.0),
    ("permute 0-d by ()", lambda L, x: L.permute(x, ()), 4.0),
    ("unflatten -1", lambda L, x: x.unflatten(1, (3, -1)), np.ones((2, 6))),
    ("cat of only skipped empties", lambda L, a, b: L.cat([a, b]), [], []),
    ("cat with a skipped empty", lambda L, a, b: L.cat([a, b], 1), [], np.ones((2, 3))),
    ("chunk of an empty dim", lambda L, x: x.chunk(3, 1), np.ones((2, 0))),
    ("chunk", lambda L, x: x.chunk(3), np.arange(5.0)),
    ("split sizes", lambda L, x: x.split([1, 0, 2]), np.arange(3.0)),
    ("hstack of 0-d", lambda L, a, b: L.hstack([a, b]), 1.0, 2.0),
    ("vstack of 0-d and 1-D", lambda L, a, b: L.vstack([a, b]), 1.0, [2.0]),
    ("vstack of empty 1-D", lambda L, a, b: L.vstack([a, b]), [], []),
    ("take_along_dim broadcasts",
     lambda L, x: L.take_along_dim(x, L.tensor([[0], [2]]), 1), np.arange(6.0).reshape(2, 3)),
    ("take_along_dim broadcasts the input",
     lambda L, x: L.take_along_dim(x, L.tensor([[0, 1], [1, 0]]), 0), [[1.0, 2.0]]),
    ("take_along_dim reads indices modulo the size",
     lambda L, x: x.take_along_dim(L.tensor([7, -4, 5, 2**40 + 1]), 0), [10.0, 11.0, 12.0]),
    ("take_along_dim flat", lambda L, x: L.take_along_dim(x, L.tensor([[5], [0]])),
     np.arange(6.0).reshape(2, 3)),
    ("scatter_add empty index, size-1 src", lambda L, x, s: x.scatter_add(
        0, L.zeros(1, 0, dtype=L.long), s), [[0.3]], [[5.0]]),
    ("index_select 0-d", lambda L, x: L.index_select(x, 0, L.tensor([0])), 4.0),
    ("index_select 0-d index", lambda L, x: x.index_select(1, L.tensor(1)), np.ones((2, 3))),
    ("index_select empty index of empty self",
     lambda L, x: x.index_select(0, L.tensor([], dtype=L.long)), np.ones((0, 3))),
    ("masked_select 0-d", lambda L, x: L.masked_select(x, L.tensor(True)), 4.0),
    ("masked_select 0-d and mask", lambda L, x: L.masked_select(x, L.tensor([True, False])),
     4.0),
    ("0-d mask True", lambda L, x: x[L.tensor(True)], np.ones((2, 3))),
    ("0-d mask False", lambda L, x: x[L.tensor(False)], np.ones((2, 3))),
    ("0-d mask after an int", lambda L, x: x[1, L.tensor(True)], np.ones((2, 3))),
    ("0-d uint8 mask", lambda L, x: x[L.tensor(1, dtype=L.uint8)], np.ones(2)),
    ("Python bool key", lambda L, x: x[True], np.ones(2)),
    ("0-d mask of 0-d", lambda L, x: x[L.tensor(True)], 4.0),
    ("out-of-range index reading nothing", lambda L, x: x[[2, 0]], np.ones((1, 0))),
    ("out-of-range index with an empty slice", lambda L, x: x[[5], 0:0], np.ones((2, 3))),
]


@pytest.mark.parametrize("name, fn, arrays", [(w[0], w[1], w[2:]) for w in WORKS],
                         ids=[w[0] for w in WORKS])
def test_edge_cases_match_pytorch(name, fn, arrays):
    _check_grads(fn, arrays)


def _put(key, value):
    def fn(L, a, *rest):
        x = a.clone()
        x[key(L) if callable(key) else key] = value(L, *rest) if callable(value) else value
        return x
    return fn


SETITEM = [
    ("advanced into a view", lambda L, a, v: _put((slice(None), [0, 0]), lambda L, v: v)(
        L, a, v)[0], np.ones((2, 3)), [2.0]),
    ("advanced into a view of a clone", lambda L, a, v: _into_view(L, a, v),
     np.arange(6.0).reshape(2, 3), [5.0, 6.0]),
    ("one-element value through a mask", _put(lambda L: L.tensor([True, False, True]),
                                              lambda L, v: v), [1.0, 2.0, 3.0], [7.0]),
    ("0-d value", _put((0,), lambda L, v: v[0]), [1.0, 2.0], [7.0]),
    ("value with leading ones", _put([0], lambda L, v: v.reshape(1, 1, 2)),
     np.ones((2, 2)), [7.0, 8.0]),
    ("Python True key", _put(True, lambda L, v: v), [1.0, 2.0], [7.0, 8.0]),
    ("0-d mask key", _put(lambda L: L.tensor(True), lambda L, v: v), [1.0, 2.0], [7.0, 8.0]),
    ("out-of-range index writing nothing", _put([2, 0], lambda L, v: v.reshape(2, 0)),
     np.ones((1, 0)), []),
]


def _into_view(L, a, v):
    x = a * 1
    x[1][[0, 2]] = v
    return x


@pytest.mark.parametrize("name, fn, arrays", [(w[0], w[1], w[2:]) for w in SETITEM],
                         ids=[w[0] for w in SETITEM])
def test_setitem_matches_pytorch(name, fn, arrays):
    _check_grads(fn, arrays)


@pytest.mark.parametrize("make, key, value", [
    (lambda L: L.tensor([4]).expand(2), [1], 9),
    (lambda L: L.tensor([4]).expand(2), 0, 7),
    (lambda L: L.tensor([4]).expand(2), lambda L: L.tensor([True, False]), 9),
    (lambda L: L.tensor([[4, 5]]).expand(2, 2), ([0, 1], 0), lambda L: L.tensor([1, 2])),
    (lambda L: L.zeros(2, dtype=L.uint8), Ellipsis, -2),
    (lambda L: L.zeros(3, dtype=L.long), lambda L: L.tensor([True, False, True]),
     lambda L: L.tensor(1.5)),
    (lambda L: L.zeros(3), False, 1.0),
])
def test_setitem_values_match_pytorch(make, key, value):
    got, want = (_outcome(_setitem(make, key, value), lib) for lib in (ng, torch))
    assert got[0] == want[0] == "ok", (got, want)
    np.testing.assert_array_equal(_np(got[1]), _np(want[1]))
    assert str(got[1].dtype).split(".")[-1] == str(want[1].dtype).split(".")[-1]
