"""Gradients at the edges and the exception classes of misuse, each compared with PyTorch:
variance with no degrees of freedom, cumprod and prod through zeros, infs and NaNs, norm's
p=0 and dtype=, outer/sum_to_size misuse, attention over empty batches and sequences,
convolutions and group norm on empty or single-value inputs, optimizer hyperparameters of
the wrong type, and a hypothesis hunt over reductions (values, NaN/inf positions and
gradients in float64)."""

import math
import warnings

import numpy as np
import pytest
from conftest import finite_difference, requires_torch, torch

import numgrad as ng

pytestmark = requires_torch


def _same(got, want, rtol=1e-9, atol=1e-12):
    """Equal NaN and +-inf positions, close finite values, same shape and dtype."""
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w))
    np.testing.assert_array_equal(np.isneginf(g), np.isneginf(w))
    f = np.isfinite(w)
    np.testing.assert_allclose(g[f], w[f], rtol=rtol, atol=atol)


def _run(L, fn, arrays, weight):
    """fn's output and the gradients of sum(weight * output), under library L."""
    xs = [L.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(L, *xs)
        if y.requires_grad:
            y.backward(L.tensor(np.broadcast_to(np.asarray(weight, y.detach().numpy().dtype),
                                                tuple(y.shape)).copy()))
    return y.detach().numpy(), [None if x.grad is None else x.grad.numpy() for x in xs]


def _both(fn, *arrays, weight=1.0, rtol=1e-9, atol=1e-12):
    (yn, gn), (yt, gt) = (_run(L, fn, arrays, weight) for L in (ng, torch))
    _same(yn, yt, rtol, atol)
    for a, b in zip(gn, gt):
        assert (a is None) == (b is None)
        if b is not None:
            _same(a, b, rtol, atol)
    return yn, gn


def _raises_like(fn):
    """numgrad raises PyTorch's exception: the same class and message."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)) as got:
        fn(ng)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


# ----------------------------------------------------------------------------------------
# var / std without degrees of freedom
# ----------------------------------------------------------------------------------------

X3 = np.array([1.0, 2.0, 4.0])


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("kwargs", [
    dict(correction=2), dict(correction=3), dict(correction=5), dict(correction=3.5),
    dict(dim=0, correction=3), dict(dim=0, correction=5), dict(dim=(0,), correction=5),
    dict(dim=[], correction=3), dict(dim=None, correction=4), dict(dim=0, correction=5,
                                                                    keepdim=True)],
    ids=str)
@pytest.mark.parametrize("weight", [1.0, -2.0, 0.0])
def test_var_std_without_degrees_of_freedom(fn, kwargs, weight):
    _both(lambda L, x: getattr(x, fn)(**kwargs), X3, weight=weight)


@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_std_of_one_value_and_of_equal_values(fn):
    _both(lambda L, x: getattr(x, fn)(unbiased=True), np.array([3.0]))
    _both(lambda L, x: getattr(x, fn)(0, unbiased=True, keepdim=True), np.array([[3.0, 1.0]]))
    _both(lambda L, x: getattr(x, fn)(0), np.array(3.0))
    _both(lambda L, x: getattr(x, fn)(correction=4), np.ones((2, 2)))
    _both(lambda L, x: getattr(x, fn)((0, 1), correction=4), np.array([[1.0, 2.0], [3.0, 3.0]]))


def test_var_saves_the_dim_as_given():
    for L in (ng, torch):
        x = L.ones(2, 3, requires_grad=True)
        assert x.var((0, 1)).grad_fn._saved_dim == (0, 1)
        assert x.var([]).grad_fn._saved_dim == ()
        assert x.var(None).grad_fn._saved_dim is None


# ----------------------------------------------------------------------------------------
# cumprod and prod through zeros, infs and NaNs
# ----------------------------------------------------------------------------------------

CUMPROD = [[math.inf, 0, 2], [0, 0, 3], [2, 0, 3, 0], [0, 2, 3], [1, 2, 0], [math.inf, 2, 3],
           [0, math.inf, 0], [math.nan, 0, 1], [0, math.inf, 0, 1], [0, math.inf, 2, 0],
           [2, 0, math.nan, 0], [0, 1e30, 1e30, 0], [1.5, -2, 0.5, 3], [3], [0], [math.inf]]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("values", CUMPROD, ids=str)
def test_cumprod_gradient_matches_pytorch(values, create_graph, dtype):
    x0 = np.array(values, dtype)
    g0 = np.linspace(-1, 2, x0.size).astype(dtype)
    grads = []
    for L in (ng, torch):
        x = L.tensor(x0, requires_grad=True)
        (gx,) = L.autograd.grad(x.cumprod(0), x, L.tensor(g0), create_graph=create_graph)
        grads.append(gx.detach().numpy())
    _same(grads[0], grads[1], rtol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_gradient_along_each_dim(dim):
    x = np.array([[0, 2, 3], [1, 0, math.inf], [2, 3, 0], [math.inf, 0, 1], [0.5, -2, 4]])
    _both(lambda L, a: a.cumprod(dim), x, weight=-1.5)
    _both(lambda L, a: L.cumprod(a, dim, dtype=L.float64), x.astype(np.float32))


def test_cumprod_gradient_with_zeros_matches_finite_differences():
    x = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 3.0, 0.0, 2.0]])
    w = np.array([[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.5]])
    t = ng.tensor(x, requires_grad=True)
    (t.cumprod(1) * ng.tensor(w)).sum().backward()
    want = finite_difference(lambda a: np.cumprod(a, 1), [x], 0, w)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("values", [[math.nan], [math.inf, 2.0], [0.0, 0.0, math.inf],
                                    [0.0, 2.0, math.nan], [0.0, 0.0, 3.0]], ids=str)
def test_prod_gradient_with_specials(values):
    x = np.array(values)
    _both(lambda L, a: a.prod(), x, weight=-1.0)
    _both(lambda L, a: a.reshape(1, -1).prod(1), x, weight=2.0)
    _both(lambda L, a: a.prod(0, keepdim=True), x)


# ----------------------------------------------------------------------------------------
# norm: p=0 has no gradient, dtype= computes in that dtype
# ----------------------------------------------------------------------------------------


def test_norm_p0_leaves_no_gradient():
    for L in (ng, torch):
        x = L.tensor([1.0, 0.0, 2.0], requires_grad=True)
        y = x.norm(p=0)
        assert y.requires_grad and y.item() == 2.0
        y.backward()
        assert x.grad is None
        assert L.autograd.grad(x.norm(0), x, allow_unused=True) == (None,)
        (z,) = L.autograd.grad(x.norm(0), x, allow_unused=True, materialize_grads=True)
        assert z.tolist() == [0.0, 0.0, 0.0]
        (x.norm(0) + (x * x).sum()).backward()
        assert x.grad.tolist() == [2.0, 0.0, 4.0]
    _raises_like(lambda L: L.autograd.grad(L.ones(3, requires_grad=True).norm(0),
                                           L.ones(3, requires_grad=True)))


@pytest.mark.parametrize("kwargs", [{}, dict(p=1), dict(p=3), dict(p=math.inf, dim=0),
                                    dict(p="fro"), dict(p=2, dim=1, keepdim=True)], ids=str)
def test_norm_dtype_computes_in_that_dtype(kwargs):
    x = np.array([[1.0, -0.5, 2.0], [0.0, 3.0, -1.0]], np.float32)
    y, (g,) = _both(lambda L, a: a.norm(dtype=L.float64, **kwargs), x, weight=-1.5, rtol=1e-6)
    assert y.dtype == np.float64 and g.dtype == np.float32


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float16"),
                                    ("float32", "int64"), ("int64", "float64")], ids=str)
def test_norm_dtype_errors(dtypes):
    src, dst = dtypes
    _raises_like(lambda L: L.ones(3, dtype=getattr(L, src)).norm(dtype=getattr(L, dst)))
    _raises_like(lambda L: L.ones(3, dtype=getattr(L, src)).norm(1, dtype=getattr(L, dst)))


# ----------------------------------------------------------------------------------------
# outer, sum_to_size
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", [((2, 2), (2,)), ((2,), (2, 2)), ((), (2,)), ((2,), ()),
                                    ((2, 2), (2, 2))], ids=str)
def test_outer_of_non_vectors_raises(shapes):
    a, b = shapes
    _raises_like(lambda L: L.outer(L.ones(a), L.ones(b)))
    _raises_like(lambda L: L.ones(a).outer(L.ones(b)))


def test_outer_of_vectors_and_of_a_number():
    _both(lambda L, a, b: L.outer(a, b), np.arange(3.0), np.array([2.0, -1.0]), weight=-1.0)
    _both(lambda L, a, b: L.outer(a, b), np.arange(3.0), np.zeros(0))
    _raises_like(lambda L: L.outer(L.ones(2), 3))


@pytest.mark.parametrize("size", [(4,), ((4,),), (3, 2, 1), (1, 3, 2), (0,), (-1,), (3, -1),
                                  (2, 1), ("a",), (2.0,), (True,), ((True, 2),), ((3, "a"),),
                                  (3, None), ((1,), 2), ()], ids=str)
def test_sum_to_size_errors(size):
    _raises_like(lambda L: L.ones(3, 2).sum_to_size(*size))


@pytest.mark.parametrize("shape,size", [((3, 2), (3, 1)), ((3, 2), (1, 2)), ((3, 2), (2,)),
                                        ((3, 2), ((),)), ((3, 2), ([1, 2],)), ((0, 2), (1, 2)),
                                        ((2, 0), (2, 1))], ids=str)
def test_sum_to_size_values_and_gradients(shape, size):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    _both(lambda L, a: a.sum_to_size(*size), x, weight=2.0)
    _raises_like(lambda L: L.ones(()).sum_to_size(1))


# ----------------------------------------------------------------------------------------
# multi-head attention over empty batches and sequences
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lns", [(0, 2, 3), (2, 0, 3), (0, 0, 0), (2, 0, 0), (3, 2, 0)], ids=str)
@pytest.mark.parametrize("mask", ["none", "attn", "attn3d", "padding", "both"])
@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_on_empty_batches_and_sequences(batch_first, lns, mask, need_weights):
    tgt, n, src = lns
    q = np.random.default_rng(1).standard_normal((tgt, n, 4)).astype(np.float32)
    k = np.random.default_rng(2).standard_normal((src, n, 4)).astype(np.float32)
    if batch_first:
        q, k = q.transpose(1, 0, 2).copy(), k.transpose(1, 0, 2).copy()
    am = {"attn": np.zeros((tgt, src), bool), "both": np.zeros((tgt, src), bool),
          "attn3d": np.zeros((n * 2, tgt, src), bool)}.get(mask)
    kpm = np.zeros((n, src), bool) if mask in ("padding", "both") else None

    def run(L):
        L.manual_seed(0)
        m = L.nn.MultiheadAttention(4, 2, batch_first=batch_first)
        Q, K = L.tensor(q, requires_grad=True), L.tensor(k, requires_grad=True)
        o, w = m(Q, K, K, attn_mask=None if am is None else L.tensor(am),
                 key_padding_mask=None if kpm is None else L.tensor(kpm),
                 need_weights=need_weights)
        (o.sum() + (w.sum() if w is not None else 0)).backward()
        return [o, w, Q.grad, K.grad, m.in_proj_weight.grad]

    try:
        want = run(torch)
    except Exception:
        _raises_like(run)
        return
    for a, b in zip(run(ng), want):
        assert (a is None) == (b is None)
        if b is not None:
            _same(a.detach().numpy(), b.detach().numpy(), rtol=1e-5)


# ----------------------------------------------------------------------------------------
# convolutions and group norm on empty or single-value inputs
# ----------------------------------------------------------------------------------------

CONV = [
    ("conv1d empty length", "conv1d", (1, 2, 0), (3, 2, 1), {}),
    ("conv1d empty length, padded", "conv1d", (1, 2, 0), (3, 2, 1), dict(padding=1)),
    ("conv1d unbatched empty length, padded", "conv1d", (2, 0), (3, 2, 1), dict(padding=1)),
    ("conv1d kernel longer than input", "conv1d", (1, 2, 2), (3, 2, 3), {}),
    ("conv1d zero kernel", "conv1d", (1, 2, 2), (3, 2, 0), {}),
    ("conv1d zero kernel, empty length", "conv1d", (1, 2, 0), (3, 2, 0), {}),
    ("conv1d empty batch", "conv1d", (0, 2, 4), (3, 2, 3), {}),
    ("conv1d no channels", "conv1d", (1, 0, 4), (3, 0, 3), {}),
    ("conv1d no channels, unbatched", "conv1d", (0, 4), (3, 0, 3), {}),
    ("conv1d empty batch, groups", "conv1d", (0, 4, 5), (2, 2, 3), dict(groups=2)),
    ("conv2d empty height", "conv2d", (1, 2, 0, 3), (3, 2, 1, 1), {}),
    ("conv2d empty height, padded", "conv2d", (1, 2, 0, 3), (3, 2, 1, 1), dict(padding=1)),
    ("conv2d zero kernel", "conv2d", (1, 2, 2, 2), (3, 2, 0, 1), {}),
    ("conv2d dilated kernel too big", "conv2d", (1, 2, 2, 3), (3, 2, 2, 1), dict(dilation=2)),
    ("conv2d empty batch", "conv2d", (0, 2, 5, 5), (3, 2, 2, 2), dict(stride=2)),
    ("conv2d no channels", "conv2d", (2, 0, 4, 4), (4, 0, 3, 3), dict(groups=2)),
    ("conv2d no channels, unbatched", "conv2d", (0, 4, 4), (3, 0, 3, 3), {}),
    ("conv2d same, empty height", "conv2d", (1, 2, 0, 2), (3, 2, 1, 1), dict(padding="same")),
    ("conv_transpose1d empty length", "conv_transpose1d", (1, 2, 0), (2, 3, 2), {}),
    ("conv_transpose1d unbatched empty", "conv_transpose1d", (2, 0), (2, 3, 2), {}),
    ("conv_transpose1d output too small", "conv_transpose1d", (1, 2, 1), (2, 3, 2),
     dict(padding=2)),
    ("conv_transpose1d unbatched too small", "conv_transpose1d", (2, 1), (2, 3, 1),
     dict(padding=1)),
    ("conv_transpose1d zero kernel", "conv_transpose1d", (1, 2, 3), (2, 3, 0), {}),
    ("conv_transpose1d no output channels", "conv_transpose1d", (1, 2, 3), (2, 0, 2), {}),
    ("conv_transpose1d empty batch", "conv_transpose1d", (0, 2, 3), (2, 3, 2), {}),
    ("conv_transpose1d empty batch and length", "conv_transpose1d", (0, 2, 0), (2, 3, 2), {}),
    ("conv_transpose1d empty batch, output size 0", "conv_transpose1d", (0, 2, 1), (2, 3, 2),
     dict(padding=1)),
    ("conv_transpose1d empty batch, negative output", "conv_transpose1d", (0, 2, 1), (2, 3, 2),
     dict(padding=2)),
    ("conv_transpose2d empty height", "conv_transpose2d", (1, 2, 0, 3), (2, 3, 1, 1), {}),
    ("conv_transpose2d zero kernel", "conv_transpose2d", (1, 2, 3, 3), (2, 3, 1, 0), {}),
    ("conv_transpose2d no output channels", "conv_transpose2d", (1, 2, 3, 3), (2, 0, 2, 2), {}),
    ("conv_transpose2d empty batch", "conv_transpose2d", (0, 2, 2, 3), (2, 3, 1, 1),
     dict(stride=2)),
    ("conv_transpose2d empty batch, negative output", "conv_transpose2d", (0, 2, 1, 1),
     (2, 3, 2, 2), dict(padding=2)),
    ("conv_transpose2d output too small", "conv_transpose2d", (1, 2, 1, 1), (2, 3, 2, 2),
     dict(padding=2)),
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("name,fn,xs,ws,kw", CONV, ids=[c[0] for c in CONV])
def test_convolution_edges(name, fn, xs, ws, kw, bias):
    oc = ws[1] * kw.get("groups", 1) if "transpose" in fn else ws[0]
    arrays = [np.linspace(-1, 1, int(np.prod(s))).reshape(s).astype(np.float32)
              for s in (xs, ws) + (((oc,),) if bias else ())]

    def f(L, *t):
        return getattr(L.nn.functional, fn)(*t, **kw)

    try:
        _run(torch, f, arrays, 1.0)
    except Exception:
        _raises_like(lambda L: _run(L, f, arrays, 1.0))
        return
    _, grads = _both(f, *arrays, weight=-2.0, rtol=1e-5)
    assert all(g is not None for g in grads)
    out = f(ng, *(ng.tensor(a, requires_grad=True) for a in arrays))
    assert type(out.grad_fn).__name__ in ("ConvolutionBackward0", "SqueezeBackward1")


def test_conv_layers_on_an_empty_batch():
    for cls, shape in (("Conv1d", (0, 2, 5)), ("Conv2d", (0, 2, 4, 4)),
                       ("ConvTranspose2d", (0, 2, 3, 3))):
        outs = []
        for L in (ng, torch):
            L.manual_seed(0)
            m = getattr(L.nn, cls)(2, 3, 2)
            y = m(L.zeros(shape))
            y.sum().backward()
            outs.append((tuple(y.shape), m.weight.grad.abs().sum().item(),
                         tuple(m.bias.grad.shape)))
        assert outs[0] == outs[1]


@pytest.mark.parametrize("shape,groups", [((1, 2), 0), ((1, 3), 3), ((1, 2), 3), ((1, 4, 1), 4),
                                          ((2, 4, 1), 4), ((1, 4, 2), 4), ((0, 4), 4),
                                          ((1, 0), 2), ((1, 4, 0), 4), ((2, 2), 2)], ids=str)
def test_group_norm_needs_more_than_one_value_per_group(shape, groups):
    x = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(np.float32)

    def f(L, a):
        return L.nn.functional.group_norm(a, groups)

    try:
        _run(torch, f, [x], 1.0)
    except Exception:
        _raises_like(lambda L: f(L, L.tensor(x)))
        return
    _both(f, x, weight=-1.0, rtol=1e-4, atol=1e-5)


def test_group_norm_module_refuses_one_value_per_group():
    _raises_like(lambda L: L.nn.GroupNorm(2, 2)(L.ones(1, 2)))
    _raises_like(lambda L: L.nn.GroupNorm(3, 3)(L.ones(1, 3, 1)))


# ----------------------------------------------------------------------------------------
# optimizers: hyperparameters of the wrong type or range
# ----------------------------------------------------------------------------------------

OPTIMIZERS = {"SGD": dict(lr=0.1), "Adam": {}, "AdamW": {}, "RMSprop": {}, "Adagrad": {}}
KEYS = {"SGD": ["lr", "weight_decay", "momentum", "dampening"],
        "Adam": ["lr", "weight_decay", "eps", "betas"], "AdamW": ["lr", "weight_decay", "eps"],
        "RMSprop": ["lr", "weight_decay", "eps", "momentum", "alpha"],
        "Adagrad": ["lr", "weight_decay", "eps", "lr_decay"]}


def _step(L, name, kwargs, key=None, value=None, steps=1):
    p = L.nn.Parameter(L.tensor([1.0, -2.0, 3.0]))
    opt = getattr(L.optim, name)([p], **kwargs)
    if key is not None:
        opt.param_groups[0][key] = value
    for _ in range(steps):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("value", ["x", None, [1]], ids=repr)
def test_optimizer_step_with_a_hyperparameter_of_the_wrong_type(name, value):
    base = dict(OPTIMIZERS[name])
    for key in KEYS[name]:
        kwargs = dict(base, momentum=0.9) if key == "dampening" else base
        if key == "betas":
            for betas in ("x", (value, 0.9), (0.9, value)):
                _raises_like(lambda L, kw=kwargs, k=key, b=betas: _step(L, name, kw, k, b))
            continue
        try:
            want = _step(torch, name, kwargs, key, value, steps=2)
        except Exception:
            _raises_like(lambda L, kw=kwargs, k=key: _step(L, name, kw, k, value, steps=2))
        else:
            np.testing.assert_allclose(_step(ng, name, kwargs, key, value, steps=2), want)


def test_sgd_first_step_reads_no_momentum():
    """PyTorch's first SGD step copies the gradient into the buffer: a bad momentum fails
    only at the second step."""
    for L in (ng, torch):
        np.testing.assert_allclose(_step(L, "SGD", dict(lr=0.1, momentum=0.9), "momentum", "x"),
                                   [0.8, -1.6, 2.4], rtol=1e-6)
    _raises_like(lambda L: _step(L, "SGD", dict(lr=0.1, momentum=0.9), "momentum", "x", 2))


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("kwargs", [dict(lr=-1.0), dict(lr="x"), dict(lr=math.nan),
                                    dict(eps=-1.0), dict(weight_decay=-1.0),
                                    dict(betas=(1.0, 0.9)), dict(betas=(0.9, -0.1)),
                                    dict(momentum=-1.0), dict(alpha=-1.0), dict(lr_decay=-1.0),
                                    dict(initial_accumulator_value=-1.0),
                                    dict(nesterov=True)], ids=str)
def test_optimizer_constructor_values(name, kwargs):
    kw = dict(OPTIMIZERS[name], **kwargs)
    try:
        want = _step(torch, name, kw)
    except Exception:
        _raises_like(lambda L: _step(L, name, kw))
    else:
        _same(_step(ng, name, kw), want, rtol=1e-6)


# ----------------------------------------------------------------------------------------
# the hunt: random reductions of small shapes with special values, float64
# ----------------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

VALUES = st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.5, 1.0, 1.5, 3.0]),
                   st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan]),
                   st.floats(-4, 4, allow_nan=False))


@st.composite
def _reduction(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    nd = len(shape)
    flat = draw(st.lists(VALUES, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    x = np.array(flat, np.float64).reshape(shape)
    one = st.integers(-max(nd, 1), max(nd, 1) - 1)
    dims = st.one_of(st.none(), one,
                     st.permutations(range(nd)).flatmap(
                         lambda p: st.integers(0, nd).map(lambda k: tuple(p[:k]))))
    keep = draw(st.booleans())
    name = draw(st.sampled_from(["sum", "mean", "var", "std", "prod", "cumsum", "cumprod",
                                 "norm", "amax", "amin", "logsumexp"]))
    if name in ("sum", "mean", "amax", "amin"):
        d = draw(dims)
        fn = (lambda L, a: getattr(a, name)()) if d is None else \
            (lambda L, a: getattr(a, name)(d, keepdim=keep))
    elif name in ("var", "std"):
        d, c = draw(dims), draw(st.sampled_from([0, 1, 2, 3, 5, 0.5]))
        fn = lambda L, a: getattr(a, name)(d, correction=c, keepdim=keep)  # noqa: E731
    elif name == "prod":
        d = draw(st.one_of(st.none(), one))
        fn = (lambda L, a: a.prod()) if d is None else (lambda L, a: a.prod(d, keepdim=keep))
    elif name in ("cumsum", "cumprod"):
        d = draw(one)
        fn = lambda L, a: getattr(a, name)(d)  # noqa: E731
    elif name == "norm":
        p = draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5, math.inf, -math.inf, -1.0, "fro"]))
        d = draw(dims)
        d = None if d == () else d
        fn = lambda L, a: a.norm(p, d, keepdim=keep)  # noqa: E731
    else:
        d = draw(dims)
        d = () if d is None else d
        fn = lambda L, a: L.logsumexp(a, d, keepdim=keep)  # noqa: E731
    return x, fn, draw(st.sampled_from([1.0, -1.0, 2.0, 0.0]))


@pytest.mark.properties
@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
@given(_reduction())
def test_reductions_match_pytorch_at_the_edges(case):
    x, fn, weight = case
    try:
        _run(torch, fn, [x], weight)
    except Exception:
        _raises_like(lambda L: _run(L, fn, [x], weight))
        return
    _both(fn, x, weight=weight)
