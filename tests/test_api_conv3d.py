"""``F.conv3d``, ``nn.Conv3d``, ``nn.LazyConv1d/2d/3d`` and ``LazyConvTranspose1d/2d``
against PyTorch (values, gradients, initial weights for one seed, reprs, padding modes,
errors) and float64 finite differences."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, raised, requires_torch, to_numpy, torch

import numgrad as ng

# (input shape, weight shape, bias, keyword arguments)
CASES = [
    ((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), True, {"groups": 2}),
    ((1, 3, 6, 5, 5), (4, 3, 2, 3, 3), True,
     {"stride": (2, 1, 2), "padding": (1, 0, 2), "dilation": (2, 1, 1)}),
    ((3, 5, 4, 4), (2, 3, 3, 3, 3), False, {"padding": "same"}),  # unbatched
    ((2, 2, 4, 4, 4), (2, 2, 2, 2, 2), True, {"padding": "same"}),  # even kernel
    ((2, 3, 5, 5, 5), (3, 1, 3, 3, 3), True, {"groups": 3, "stride": 2, "padding": 1}),
    ((0, 2, 4, 4, 4), (2, 2, 2, 2, 2), True, {}),  # empty batch
]


def _conv3d(m, x, w, b, dtype, **kw):
    xt = m.tensor(x, dtype=dtype, requires_grad=True)
    wt = m.tensor(w, dtype=dtype, requires_grad=True)
    bt = m.tensor(b, dtype=dtype, requires_grad=True) if b is not None else None
    y = m.nn.functional.conv3d(xt, wt, bt, **kw)
    g = m.tensor(np.random.default_rng(9).standard_normal(tuple(y.shape)), dtype=dtype)
    (y * g).sum().backward()
    return [y, xt.grad, wt.grad] + ([bt.grad] if bt is not None else [])


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv3d_matches_pytorch(case):
    # float64 here (to 1e-10); the module tests below run float32
    xs, ws, has_bias, kw = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[0]) if has_bias else None
    ours = _conv3d(ng, x, w, b, ng.float64, **kw)
    theirs = _conv3d(torch, x, w, b, torch.float64, **kw)
    for a, e in zip(ours, theirs):
        assert_close(a, e, rtol=1e-10, atol=1e-10)


def test_conv3d_finite_differences():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((1, 2, 3, 3, 4)), rng.standard_normal((2, 1, 2, 2, 2)), \
        rng.standard_normal(2)
    kw = {"stride": (1, 2, 1), "padding": (1, 0, 1), "dilation": (1, 1, 2), "groups": 2}

    def fn(x, w, b):
        return ng.nn.functional.conv3d(ng.tensor(x), ng.tensor(w), ng.tensor(b), **kw).numpy()

    y, gx, gw, gb = _conv3d(ng, x, w, b, ng.float64, **kw)
    weight = np.random.default_rng(9).standard_normal(tuple(y.shape))
    for i, g in enumerate((gx, gw, gb)):
        np.testing.assert_allclose(to_numpy(g), finite_difference(fn, [x, w, b], i, weight),
                                   rtol=1e-6, atol=1e-7)


MODULES = [((3, 2, 3), {}), (3, {"stride": (1, 2, 1), "padding": 1, "groups": 2, "bias": False}),
           ((3, 2, 3), {"padding": "same", "padding_mode": "reflect"}),
           ((3, 2, 3), {"padding": (1, 0, 1), "padding_mode": "circular"}),
           (3, {"padding": 1, "padding_mode": "replicate", "dilation": (1, 2, 1)})]


@requires_torch
@pytest.mark.parametrize("case", MODULES, ids=[str(i) for i in range(len(MODULES))])
def test_conv3d_module_matches_pytorch(case):
    k, kw = case
    results = []
    for m in (torch, ng):
        m.manual_seed(0)
        conv = m.nn.Conv3d(4, 6, k, **kw)
        x = m.randn(2, 4, 5, 6, 7, requires_grad=True)
        y = conv(x)
        y.pow(2).sum().backward()
        results.append((repr(conv), list(conv.state_dict()), y, x.grad, conv.weight.grad,
                        conv.weight))
    (tr, tk, *tv), (orr, ok, *ov) = results
    assert (orr, ok) == (tr, tk)
    for a, e in zip(ov, tv):
        assert_close(a, e, rtol=1e-4, atol=1e-4)


def _errors(m):
    F = m.nn.functional
    x, w = m.randn(2, 4, 5, 6, 7), m.randn(6, 2, 3, 2, 3)
    return [lambda: F.conv3d(x, w), lambda: F.conv3d(x[0, 0], w),
            lambda: F.conv3d(x, w[:, :, 0], groups=2),
            lambda: F.conv3d(x, m.randn(6, 4, 6, 1, 1)),
            lambda: F.conv3d(x, w, groups=2, padding=(1, 2)),
            lambda: F.conv3d(x, w, groups=2, stride=0),
            lambda: F.conv3d(x, w, groups=2, bias=m.zeros(5)),
            lambda: F.conv3d(x, w, groups=2, padding="same", stride=2),
            lambda: F.conv3d(x, w, groups=2, padding="foo"),
            lambda: F.conv3d(x, w, groups=3), lambda: F.conv3d(x, w, groups=0),
            lambda: F.conv3d(x, w, groups=2, dilation=0),
            lambda: F.conv3d(x, w, groups=2, padding=-1),
            lambda: F.conv3d(x, w.double(), groups=2),
            lambda: F.conv3d(x, w, "a"), lambda: F.conv3d(x, w, None, 1.5),
            lambda: F.conv3d(x[:, :, :0], w, groups=2),
            lambda: m.nn.Conv3d(4, 6, 3, groups=3),
            lambda: m.nn.Conv3d(4, 6, 3)(m.randn(2, 4, 5, 6)),
            lambda: m.nn.LazyConv3d(6, 3, groups=4)(m.randn(2, 3, 4, 4, 4)),
            lambda: m.nn.LazyConv3d(6, 3)(m.randn(4, 4, 4)),
            lambda: m.nn.LazyConvTranspose2d(6, 3, groups=4)(m.randn(1, 3, 4, 4))]


@requires_torch
def test_conv3d_errors_match_pytorch():
    for ours, theirs in zip(_errors(ng), _errors(torch)):
        expected = raised(theirs)
        assert expected is not None
        assert raised(ours) == expected


@requires_torch
@pytest.mark.parametrize("cls, shape, kw", [
    ("LazyConv1d", (2, 4, 9), {}), ("LazyConv2d", (4, 5, 6), {"groups": 2, "padding": 1}),
    ("LazyConv3d", (2, 4, 5, 6, 5), {"stride": 2, "bias": False}),
    ("LazyConvTranspose1d", (2, 4, 9), {}),
    ("LazyConvTranspose2d", (4, 5, 6), {"groups": 2, "padding": 1, "stride": 2,
                                        "output_padding": 1})])
def test_lazy_conv_matches_pytorch(cls, shape, kw):
    results = []
    for m in (torch, ng):
        m.manual_seed(0)
        conv = getattr(m.nn, cls)(6, 3, **kw)
        before = (repr(conv), conv.has_uninitialized_params())
        y = conv(m.randn(*shape))
        results.append((before, repr(conv), type(conv).__name__, y, conv.weight))
    (*t, ty, tw), (*o, oy, ow) = results
    assert o == t
    assert_close(ow, tw, rtol=0, atol=0)
    assert_close(oy, ty, rtol=1e-4, atol=1e-5)


# --- the graph: one ConvolutionBackward0 node, as PyTorch's


def _node(y):
    """(name, next_functions' names) of ``y.grad_fn`` (or of node ``y``)."""
    fn = getattr(y, "grad_fn", y)
    return type(fn).__name__, [(None if n is None else type(n).__name__, i)
                               for n, i in fn.next_functions]


def _conv_one(m, fn, x_grad=True, bias=True, seed=2):
    """fn(m, x, w, b) on float64 tensors of library ``m``, and those tensors."""
    rng = np.random.default_rng(seed)
    x, w, b = rng.standard_normal((2, 2, 3, 3, 4)), rng.standard_normal((2, 2, 2, 1, 2)), \
        rng.standard_normal(2)
    ts = (m.tensor(x, requires_grad=x_grad), m.tensor(w, requires_grad=True),
          m.tensor(b, requires_grad=True) if bias else None)
    return fn(m, *ts), ts


def _conv(m, x, w, b):
    return m.nn.functional.conv3d(x, w, b)


NODE_CASES = [
    ("plain", lambda m, x, w, b: m.nn.functional.conv3d(x, w, b, stride=(1, 2, 1)), True, True),
    ("no bias", lambda m, x, w, b: m.nn.functional.conv3d(x, w, b, padding=1), True, False),
    ("input without grad", lambda m, x, w, b: m.nn.functional.conv3d(x, w, b), False, True),
    ("unbatched", lambda m, x, w, b: m.nn.functional.conv3d(x[0], w, b), True, True),
    ("same", lambda m, x, w, b: m.nn.functional.conv3d(x, w, b, padding="same"), True, True),
    ("transposed", lambda m, x, w, b: m.nn.functional.conv_transpose3d(x, w, b, stride=2),
     True, True),
    ("transposed no bias", lambda m, x, w, b: m.nn.functional.conv_transpose3d(x[0], w),
     True, False),
]


@requires_torch
@pytest.mark.parametrize("case", NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_conv3d_node_and_next_functions_match_pytorch(case):
    import warnings
    _, fn, x_grad, bias = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's padding='same' copy warning
        (ny, nts), (ty, tts) = (_conv_one(m, fn, x_grad, bias) for m in (ng, torch))
    assert _node(ny) == _node(ty)
    if ty.grad_fn.name() == "SqueezeBackward1":  # unbatched: the convolution below
        assert _node(ny.grad_fn.next_functions[0][0]) == _node(ty.grad_fn.next_functions[0][0])
    if ty.grad_fn.name() == "ConvolutionBackward0":  # what PyTorch saves, under its names
        assert_close(ny.grad_fn._saved_weight, ty.grad_fn._saved_weight.detach())
    g = np.random.default_rng(4).standard_normal(tuple(ty.shape))
    ny.backward(ng.tensor(g))
    ty.backward(torch.tensor(g))
    for a, e in zip(nts, tts):
        if e is not None and e.grad is not None:
            assert_close(a.grad, e.grad, rtol=1e-12, atol=1e-12)
        elif e is not None:
            assert a.grad is None


@requires_torch
def test_conv3d_module_node():
    torch.manual_seed(0)
    ng.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3, 3)).astype(np.float32)
    for cls in ("Conv3d", "ConvTranspose3d"):
        n = getattr(ng.nn, cls)(2, 3, 2)(ng.tensor(x))
        t = getattr(torch.nn, cls)(2, 3, 2)(torch.tensor(x))
        assert _node(n) == _node(t)


@requires_torch
def test_conv3d_node_retain_graph_hooks_inplace_and_anomaly():
    def run(m, retain):
        y, ts = _conv_one(m, _conv)
        y.sum().backward(retain_graph=retain)
        return raised(y.sum().backward), [t.grad for t in ts]

    for retain in (False, True):
        (ne, ngs), (te, tgs) = run(ng, retain), run(torch, retain)
        assert ne == te  # PyTorch's error without retain_graph; a second accumulation with it
        assert (ne is None) == retain
        for a, e in zip(ngs, tgs):
            assert_close(a, e, rtol=1e-12, atol=1e-12)

    # node hooks: the pre-hook's doubled gradient reaches the inputs; the post-hook sees them
    seen = []
    for m in (ng, torch):
        y, ts = _conv_one(m, _conv)
        calls = []
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        y.grad_fn.register_hook(lambda gi, go, calls=calls: calls.append(len(gi)))
        y.sum().backward()
        seen.append((calls, [t.grad for t in ts]))
    assert seen[0][0] == seen[1][0] == [3]
    for a, e in zip(seen[0][1], seen[1][1]):
        assert_close(a, e, rtol=1e-12, atol=1e-12)

    # in-place on a saved input (input, weight) after the forward: PyTorch's error; on the
    # bias (not saved): none
    for target in (0, 1, 2):
        errs = []
        for m in (ng, torch):
            _, ts = _conv_one(m, lambda m, *ts: None)
            ins = [t * 1 for t in ts]
            y = m.nn.functional.conv3d(*ins)
            with m.no_grad():
                ins[target].add_(1)
            errs.append(raised(y.sum().backward))
        assert errs[0] == errs[1]
        assert (errs[0] is None) == (target == 2)

    # anomaly mode: the node runs as any other
    grads = []
    for m in (ng, torch):
        with pytest.warns(UserWarning, match="Anomaly"), m.autograd.detect_anomaly():
            y, ts = _conv_one(m, _conv)
            y.sum().backward()
        grads.append(ts[1].grad)
    assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@requires_torch
def test_conv3d_gradgradcheck():
    rng = np.random.default_rng(6)
    x = ng.tensor(rng.standard_normal((1, 2, 2, 3, 2)), requires_grad=True)
    w = ng.tensor(rng.standard_normal((2, 1, 2, 2, 1)), requires_grad=True)
    b = ng.tensor(rng.standard_normal(2), requires_grad=True)
    assert ng.autograd.gradgradcheck(
        lambda a, c, d: ng.nn.functional.conv3d(a, c, d, padding=(1, 0, 1), groups=2),
        (x, w, b))
    assert ng.autograd.gradgradcheck(
        lambda a, c: ng.nn.functional.conv_transpose3d(a, c, stride=2), (x, w))
