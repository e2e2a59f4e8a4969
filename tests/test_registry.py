"""The op registry (``numgrad.ops.registry``) is the single description of declared ops: these
tests read it. Every declared public op needs a case in the op table (``op_cases.py``), which
``test_ops.py`` runs against NumPy, finite differences and PyTorch, ``test_higher_order.py``
through gradcheck and gradgradcheck, and ``cuda/test_ops_cuda.py`` on the (simulated) GPU.
Then every generated variant (method, in-place, ``out=``) is checked against PyTorch."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch
from op_cases import CASES

import numgrad as ng
from numgrad.autograd.graph import Node
from numgrad.ops.registry import REGISTRY

PUBLIC = [od for od in REGISTRY.values() if od.variants]
INTERNAL = [od for od in REGISTRY.values() if not od.variants]


def _cases_of(name):
    return [c for c in CASES if c[0] == name or c[0].startswith(name + "_")]


def _property_rows():
    """Row names of the PyTorch-parity property tables (``test_properties.py``)."""
    try:
        import test_properties
    except pytest.skip.Exception:  # hypothesis is not installed
        return set()
    return {op.name for ops in test_properties.TABLES.values() for op in ops}


def _node_classes(cls=Node):
    for sub in cls.__subclasses__():
        yield sub
        yield from _node_classes(sub)


# test_random_in_place_ops_match_pytorch; sampling ops: test_api_random.py
RANDOM = {"uniform", "normal", "random", "bernoulli", "multinomial", "exponential"}


@pytest.mark.parametrize("od", PUBLIC, ids=[od.name for od in PUBLIC])
def test_every_declared_op_has_a_case(od):
    cases = _cases_of(od.name)
    if od.name in RANDOM:
        return
    if od.kind == "handwritten" or od.node is None or od.node.__name__ == "NotImplemented":
        # a hand-written op, or one without a gradient (a comparison, floor_divide), is
        # checked against PyTorch by the op table or the property tables
        rows = _property_rows() if not cases else set()
        names = (od.name, *od.aliases)
        assert cases or any(r == n or r.startswith(n + "_") for r in rows
                            for n in names), f"{od.name}: add a case to tests/op_cases.py"
        return
    assert cases, f"{od.name}: add a case to tests/op_cases.py"
    if od.node is None:
        return
    names = set()
    rng = np.random.default_rng(0)
    for case in cases:
        ts = [ng.tensor(make(rng), requires_grad=True) for make in case[3]]
        out = case[1](ng, *ts)
        names.add(type(out.grad_fn).__name__)
    assert od.node.__name__ in names, f"{od.name}: no case records {od.node.__name__}"


@pytest.mark.parametrize("od", INTERNAL, ids=[od.name for od in INTERNAL])
def test_every_backward_op_is_reached_by_a_double_backward(od):
    """An internal op (a fused backward rule) must be what some case's first derivative
    records, so gradgradcheck on that case covers it."""
    rng = np.random.default_rng(0)
    for case in CASES:
        ts = [ng.tensor(make(rng), dtype=ng.float64, requires_grad=True) for make in case[3]]
        out = case[1](ng, *ts)
        if out.grad_fn is None or not out.dtype.is_floating_point:
            continue
        grads = ng.autograd.grad(out.sum(), ts, create_graph=True, allow_unused=True)
        if any(g is not None and type(g.grad_fn).__name__ == od.node.__name__ for g in grads):
            return
    pytest.fail(f"no case's gradient runs {od.name} ({od.node.__name__})")


@requires_torch
def test_random_in_place_ops_match_pytorch():
    """uniform_, normal_ and random_ draw PyTorch's streams; bernoulli_ draws 0/1 at rate p."""
    for call in ("m.zeros(7).uniform_(-1, 2)", "m.zeros(7, dtype=m.float64).normal_(1, 3)",
                 "m.zeros(6, dtype=m.int64).random_(0, 10)", "m.zeros(6).random_(5)"):
        results = []
        for m in (ng, torch):
            m.manual_seed(3)
            results.append(eval(call, {"m": m}))
        assert_close(*results, rtol=3e-7, atol=3e-7)
    assert RANDOM == {od.name for od in PUBLIC if od.name in RANDOM}
    ng.manual_seed(0)
    draws = ng.zeros(20000).bernoulli_(0.3).numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0}
    assert abs(draws.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / draws.size)


def test_declared_node_names_are_node_classes():
    """What a declaration says an op records names real node classes."""
    known = {c.__name__ for c in _node_classes()}
    for od in REGISTRY.values():
        assert set(od.nodes) <= known, (od.name, set(od.nodes) - known)


def test_namespace_and_methods_come_from_the_registry():
    for od in PUBLIC:
        for name in (od.name, *od.aliases):
            if "function" in od.variants:
                assert getattr(ng, name) is od.fn
            if "method" in od.variants:
                assert getattr(ng.Tensor, name) is (od.method or od.fn)
            if "inplace" in od.variants:
                assert callable(getattr(ng.Tensor, name + "_"))
            assert hasattr(ng, name + "_") == ("inplace_function" in od.variants)
    for od in INTERNAL:
        assert not hasattr(ng, od.name)
    assert set(od.name for od in REGISTRY.values()) >= {
        "erf", "erfc", "log10", "log1p", "expm1", "rsqrt", "triu", "tril", "argsort", "sort",
        "cumsum", "var", "std", "exp", "tanh"}


@requires_torch
@pytest.mark.parametrize("call", [
    "m.expm1(x)", "m.erf(x)", "m.rsqrt(x)", "m.tril(x.reshape(2, 3), -1)",
    "m.triu(x.reshape(3, 2), 1)", "m.cumsum(x, 0)", "m.var(x.reshape(2, 3), 1, keepdim=True)",
    "m.std(x.reshape(2, 3), 0, correction=0)", "m.sort(x, descending=True).values",
    "m.nn.functional.softplus(x, 2, 3)", "m.floor(x)", "m.ceil(x)", "m.trunc(x)", "m.round(x)",
    "m.polygamma(2, x)",
])
def test_generated_nodes_show_pytorchs_saved_values(call):
    """A generated node's name and its ``_saved_*`` values (read off the derivative formulas'
    parameter names) are PyTorch's."""
    a = np.array([0.5, 1.5, 0.25, 2.0, 1.0, 0.75])
    ours = eval(call, {"m": ng, "x": ng.tensor(a, requires_grad=True)}).grad_fn
    theirs = eval(call, {"m": torch, "x": torch.tensor(a, requires_grad=True)}).grad_fn
    assert type(ours).__name__ == type(theirs).__name__
    for name in type(ours)._names_of_saved:
        mine, ref = getattr(ours, "_saved_" + name), getattr(theirs, "_saved_" + name)
        if isinstance(ref, torch.Tensor):
            np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
        elif name == "self_sym_sizes":
            assert tuple(mine) == tuple(ref)
        elif isinstance(ref, int):  # PyTorch shows a saved negative int as its uint64 bits
            ref = ref - 2**64 if ref >= 2**63 else ref
            assert mine == ref, name
        else:
            assert mine == ref, name


# (an op with number arguments, polygamma(n, x), has its own cases)
UNARY = [od for od in PUBLIC if od.kind == "unary" and "function" in od.variants
         and not od.params]


@requires_torch
@pytest.mark.parametrize("od", UNARY, ids=[od.name for od in UNARY])
def test_unary_variants_match_pytorch(od):
    """function, method, in-place on a leaf's clone and on a view, and out=, on float and
    integer input, against PyTorch."""
    a = np.random.default_rng(3).uniform(0.2, 1.5, size=(3, 4))
    for dtype in ("float32", "float64", "int64"):
        arr = (a * 3).astype(dtype) if dtype == "int64" else a.astype(dtype)
        x, tx = ng.tensor(arr), torch.tensor(arr)
        assert_close(getattr(ng, od.name)(x), getattr(torch, od.name)(tx), rtol=1e-6)
        assert str(getattr(x, od.name)().dtype) == str(getattr(tx, od.name)().dtype)
    # in place, through a view of a non-leaf, with the gradient flowing through it
    leaf = ng.tensor(a, requires_grad=True)
    tleaf = torch.tensor(a, requires_grad=True)
    outs = []
    for t in (leaf, tleaf):
        y = t * 1.0
        getattr(y[1:], od.name + "_")()
        try:
            y.sum().backward()
        except NotImplementedError as e:  # asinh_, acosh_, atanh_: no derivative in PyTorch
            outs.append((y, str(e), type(y.grad_fn).__name__))
        else:
            outs.append((y, t.grad, type(y.grad_fn).__name__))
    assert_close(outs[0][0], outs[1][0])
    if isinstance(outs[1][1], str):
        assert outs[0][1] == outs[1][1]
    else:
        assert_close(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]
    if "out" not in od.variants:
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            getattr(torch, od.name)(tx, out=tx)
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            getattr(ng, od.name)(x, out=x)
        return
    # out=: written in place, resized with PyTorch's warning, refused with grad
    o, to = ng.empty(3, 4, dtype=ng.float64), torch.empty(3, 4, dtype=torch.float64)
    r = getattr(ng, od.name)(ng.tensor(a), out=o)
    getattr(torch, od.name)(torch.tensor(a), out=to)
    assert r is o
    assert_close(o, to)
    small = ng.empty(2)
    with pytest.warns(UserWarning, match="was resized"):
        getattr(ng, od.name)(ng.tensor(a), out=small)
    assert small.shape == (3, 4)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        getattr(ng, od.name)(leaf, out=ng.empty(3, 4, dtype=ng.float64))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        getattr(ng, od.name)(ng.tensor(a), out=ng.empty(3, 4, dtype=ng.int64))


@requires_torch
@pytest.mark.parametrize("call", [
    "m.var(x, axis=1, keepdims=True)", "m.std(x, 1, True, True)", "m.var(x, False)",
    "m.var(x, (0, 1), correction=0.5)", "m.std(x, correction=2)", "x.var(dim=0, unbiased=False)",
    "m.sum(x, axis=0, keepdims=True)", "m.mean(x, axis=1)", "x.amax(axis=0, keepdims=True)",
    "m.cumsum(x, axis=1)", "m.argsort(x, axis=0, descending=True)",
    "m.sort(x, axis=0, stable=True).values", "m.cumsum(m.tensor([[True, False], [True, True]]), 1)",
    "m.cumsum(m.tensor([1, 2, 3], dtype=m.int32), 0)", "m.cumsum(x, 0, dtype=m.float64)",
    "m.sort(m.tensor([3.0, float('nan'), 1.0, 3.0, -0.0, 0.0]), descending=True).values",
    "m.sort(m.tensor([3.0, float('nan'), 1.0, 3.0, -0.0, 0.0])).indices",
    "m.sort(m.tensor([2, 1, 2, 0, 1, 2]), stable=True).indices",
    "m.argsort(m.tensor([True, False, True]))", "m.sort(m.tensor(3.0)).values",
    "m.cumsum(m.tensor(3.0), 0)", "m.tril(m.ones(2, 3, dtype=m.int64), 5)",
    "m.triu(m.ones(3, 3, dtype=m.bool), -1)", "m.tril(m.zeros(0, 3))", "m.cumsum(m.zeros(2, 0), 1)",
    "m.var(m.tensor([1.0]))", "m.var(m.zeros(0))", "x.clone().cumsum_(1)", "x.clone().tril_(-1)",
    "x.clone().triu_(diagonal=1)",
])
def test_signatures_and_edge_cases_match_pytorch(call):
    x = np.random.default_rng(5).uniform(-1, 1, size=(3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = eval(call, {"m": ng, "x": ng.tensor(x)})
        theirs = eval(call, {"m": torch, "x": torch.tensor(x)})
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    if ours.dtype.is_floating_point:
        assert_close(ours, theirs, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@requires_torch
@pytest.mark.parametrize("call", [
    "m.tril(m.ones(3))", "m.tril(m.ones(2, 2), 1.5)", "m.cumsum(m.ones(2, 2), 2)",
    "m.cumsum([1.0], 0)", "m.var(m.tensor([1, 2]))", "m.sort(m.ones(2), 1)",
    "m.argsort(m.ones(2, 2), dim=-3)",
    "m.erf([1.0])", "m.std(m.ones(2), dim=(0, 0))", "m.var(m.ones(2), 2)",
])
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as theirs:
        eval(call, {"m": torch})
    with pytest.raises(Exception) as ours:
        eval(call, {"m": ng})
    assert ours.type is theirs.type, (ours.value, theirs.value)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


def test_unbiased_and_correction_together_is_a_type_error():
    with pytest.raises(TypeError, match="var"):
        ng.var(ng.ones(2, 2), 1, unbiased=True, correction=1)


@requires_torch
def test_degrees_of_freedom_warning_matches_pytorch():
    for values, correction in (([1.0], 1), ([1.0, 2.0], 2)):
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            ours = ng.std(ng.tensor(values), correction=correction)
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            theirs = torch.std(torch.tensor(values), correction=correction)
        assert_close(ours, theirs)


@requires_torch
def test_sort_and_cumsum_of_large_lines_match_pytorch():
    """Lines longer than one merge pass, in float32, with ties and dims in the middle."""
    rng = np.random.default_rng(11)
    a = np.round(rng.standard_normal((3, 1000, 5)), 1).astype(np.float32)
    for dim in (0, 1, 2):
        for desc in (False, True):
            ours = ng.sort(ng.tensor(a), dim=dim, descending=desc, stable=True)
            theirs = torch.sort(torch.tensor(a), dim=dim, descending=desc, stable=True)
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
            np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        assert_close(ng.cumsum(ng.tensor(a), dim), torch.cumsum(torch.tensor(a), dim),
                     rtol=1e-5, atol=1e-5)
    x = ng.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    w = rng.standard_normal(a.shape).astype(np.float32)
    (ng.sort(x, 1).values * ng.tensor(w)).sum().backward()
    (torch.sort(tx, dim=1, stable=True).values * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad)
