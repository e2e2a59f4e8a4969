"""3-D layers against PyTorch: the padding modules (ConstantPad3d, ZeroPad3d, ReflectionPad3d,
ReplicationPad3d, CircularPad3d), max_pool3d/avg_pool3d/adaptive_avg_pool3d/
adaptive_max_pool3d and their modules, InstanceNorm3d: values, indices, gradients, reprs and
PyTorch's errors. float64 throughout (the pools run the 2-D kernels: no kernels of their own)."""

import numpy as np
import pytest
from conftest import assert_close, raised
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=True):
    return (ng.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _check(fn, a, tol=1e-12, indices=False):
    """fn(m, x) under both libraries: values (and indices), and the gradient of a weighted
    sum of the output."""
    nx, tx = _pair(a)
    nr, tr = fn(ng, nx), fn(torch, tx)
    if indices:
        (nr, ni), (tr, ti) = nr, tr
        np.testing.assert_array_equal(ni.numpy(), ti.numpy())
    assert_close(nr, tr.detach(), rtol=tol, atol=tol)
    w = np.random.default_rng(3).normal(size=tuple(tr.shape))
    (nr * ng.tensor(w)).sum().backward()
    (tr * torch.tensor(w)).sum().backward()
    assert_close(nx.grad, tx.grad, rtol=tol, atol=tol)


def _x(*shape, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: ties inside windows
        return rng.integers(-2, 3, shape).astype(np.float64)
    return rng.normal(size=shape)


# --- padding modules


PADS = [
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 3.5)),
    ("ZeroPad3d", (1,)),
    ("ReflectionPad3d", ((1, 0, 1, 2, 0, 1),)),
    ("ReplicationPad3d", (1,)),
    ("CircularPad3d", ((1, 1, 0, 2, 1, 0),)),
]


@pytest.mark.parametrize("name,args", PADS)
def test_padding_modules_match_torch(name, args):
    nm, tm = getattr(ng.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(nm) == repr(tm)
    assert nm.padding == tm.padding
    _check(lambda m, x: (nm if m is ng else tm)(x), _x(1, 2, 3, 3, 3))
    _check(lambda m, x: (nm if m is ng else tm)(x), _x(2, 3, 3, 3))  # unbatched


# --- pooling values, indices, gradients

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0)),
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 2, 1), dilation=(2, 1, 2), padding=(1, 0, 0)),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw", MAX_CASES)
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool3d_matches_torch(kw, ties):
    a = _x(2, 2, 5, 5, 4, ties=ties)
    _check(lambda m, x: m.nn.functional.max_pool3d(x, return_indices=True, **kw), a,
           indices=True)


def test_max_pool3d_unbatched_module_and_repr():
    n, t = ng.nn.MaxPool3d(2, 1, 1, return_indices=True), torch.nn.MaxPool3d(2, 1, 1,
                                                                           return_indices=True)
    assert repr(n) == repr(t)
    _check(lambda m, x: (n if m is ng else t)(x), _x(2, 3, 3, 3), indices=True)
    args = ((1, 2, 3), 1, 0, 2, True, True)
    assert repr(ng.nn.MaxPool3d(*args)) == repr(torch.nn.MaxPool3d(*args))


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0)),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3, 2), padding=(1, 1, 1), divisor_override=5),
    dict(kernel_size=2, divisor_override=-3),
]


@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool3d_matches_torch(kw):
    _check(lambda m, x: m.nn.functional.avg_pool3d(x, **kw), _x(2, 2, 5, 4, 5))


def test_integer_pools_match_torch():
    """int64 averages divide each window's exact sum once, truncating (PyTorch's integer
    kernel); int64 maxima and their indices."""
    a = np.random.default_rng(0).integers(-50, 50, (2, 2, 5, 4, 5))
    F, T = ng.nn.functional, torch.nn.functional
    for kw in AVG_CASES:
        np.testing.assert_array_equal(F.avg_pool3d(ng.tensor(a), **kw).numpy(),
                                      T.avg_pool3d(torch.tensor(a), **kw).numpy())
    for kw in MAX_CASES[:2]:
        n, t = F.max_pool3d(ng.tensor(a), return_indices=True, **kw), T.max_pool3d(
            torch.tensor(a), return_indices=True, **kw)
        np.testing.assert_array_equal(n[0].numpy(), t[0].numpy())
        np.testing.assert_array_equal(n[1].numpy(), t[1].numpy())


def test_avg_pool3d_unbatched_module_and_repr():
    args = ((1, 2, 2), 1, (0, 1, 1), True, False, 3)
    n, t = ng.nn.AvgPool3d(*args), torch.nn.AvgPool3d(*args)
    assert repr(n) == repr(t) and repr(ng.nn.AvgPool3d(2)) == repr(torch.nn.AvgPool3d(2))
    _check(lambda m, x: (n if m is ng else t)(x), _x(2, 3, 4, 3))


ADAPTIVE_SIZES = [(2, 3, 4), (1, None, 2), 3, (3, 2, 1), 1]


@pytest.mark.parametrize("size", ADAPTIVE_SIZES)
def test_adaptive_pools_match_torch(size):
    a = _x(2, 2, 5, 6, 4)
    _check(lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, size), a)
    _check(lambda m, x: m.nn.functional.adaptive_max_pool3d(x, size, True), a, indices=True)


def test_adaptive_modules_unbatched_ties_and_repr():
    for size in ((1, None, 2), 2):
        assert repr(ng.nn.AdaptiveAvgPool3d(size)) == repr(torch.nn.AdaptiveAvgPool3d(size))
        assert repr(ng.nn.AdaptiveMaxPool3d(size, True)) == repr(
            torch.nn.AdaptiveMaxPool3d(size, True))
    a = _x(2, 5, 3, 4, ties=True)
    _check(lambda m, x: m.nn.AdaptiveMaxPool3d((2, 2, 3), True)(x), a, indices=True)
    _check(lambda m, x: m.nn.AdaptiveAvgPool3d((2, 2, 3))(x), a)


def test_empty_batches_and_outputs():
    for fn in (lambda m, x: m.nn.functional.max_pool3d(x, 2),
               lambda m, x: m.nn.functional.avg_pool3d(x, 2),
               lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 2),
               lambda m, x: m.nn.functional.adaptive_max_pool3d(x, 2)):
        n, t = fn(ng, ng.zeros(0, 2, 3, 3, 3, dtype=ng.float64)), fn(
            torch, torch.zeros(0, 2, 3, 3, 3, dtype=torch.float64))
        assert tuple(n.shape) == tuple(t.shape)
    for fn in (ng.nn.functional.adaptive_avg_pool3d, ng.nn.functional.adaptive_max_pool3d):
        assert tuple(fn(ng.ones(1, 2, 3, 3, 3), 0).shape) == (1, 2, 0, 0, 0)


def test_gradcheck_max_and_avg_pool3d():
    a = ng.tensor(_x(1, 1, 3, 3, 4, seed=5), requires_grad=True)
    F = ng.nn.functional
    assert ng.autograd.gradcheck(lambda x: F.max_pool3d(x, 2, 1, 1), (a,))
    assert ng.autograd.gradcheck(lambda x: F.avg_pool3d(x, 2, 1, 1, True, False), (a,))
    assert ng.autograd.gradgradcheck(lambda x: F.avg_pool3d(x, (2, 1, 2)), (a,))
    assert ng.autograd.gradcheck(lambda x: F.adaptive_avg_pool3d(x, (2, 2, 3)), (a,))


@settings(max_examples=20, deadline=None)
@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
       pad=st.booleans(), ceil_mode=st.booleans(), include=st.booleans(),
       seed=st.integers(0, 100))
def test_pools_match_torch_on_random_geometry(k, s, pad, ceil_mode, include, seed):
    p = tuple(v // 2 for v in k) if pad else 0
    a = _x(1, 2, 4, 5, 4, seed=seed, ties=seed % 2 == 0)
    _check(lambda m, x: m.nn.functional.max_pool3d(x, k, s, p, 1, ceil_mode, True), a,
           indices=True)
    _check(lambda m, x: m.nn.functional.avg_pool3d(x, k, s, p, ceil_mode, include), a)


# --- InstanceNorm3d


@pytest.mark.parametrize("kw", [{}, dict(affine=True, track_running_stats=True)])
def test_instance_norm3d_matches_torch(kw):
    n, t = ng.nn.InstanceNorm3d(2, **kw).double(), torch.nn.InstanceNorm3d(2, **kw).double()
    assert repr(n) == repr(t)
    _check(lambda m, x: (n if m is ng else t)(x), _x(2, 2, 3, 2, 3), tol=1e-10)
    _check(lambda m, x: (n if m is ng else t)(x), _x(2, 3, 2, 3), tol=1e-10)
    if kw:
        assert_close(n.running_mean, t.running_mean, rtol=1e-12, atol=1e-12)
        assert_close(n.running_var, t.running_var, rtol=1e-12, atol=1e-12)
        assert_close(n.weight.grad, t.weight.grad, rtol=1e-10, atol=1e-10)


# --- errors

X5 = (1, 2, 4, 5, 6)
ERRORS = [
    lambda m, F: F.max_pool3d(m.zeros(*X5), (2, 2)),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, stride=(1, 1)),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, padding=(1, 1)),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, dilation=(1, 1)),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, padding=2),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 0),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, stride=-1),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, dilation=0),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 5),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, padding=-1),
    lambda m, F: F.max_pool3d(m.zeros(4, 5, 6), 2),
    lambda m, F: F.max_pool3d(m.zeros(1, 0, 3, 3, 3), 2),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2.0),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 2, ceil_mode=1),
    lambda m, F: F.max_pool3d(m.zeros(*X5), 3, 1, 2),
    lambda m, F: F.avg_pool3d(m.zeros(*X5), (2, 2)),
    lambda m, F: F.avg_pool3d(m.zeros(*X5), 2, stride=(1, 1)),
    lambda m, F: F.avg_pool3d(m.zeros(*X5), 2, padding=(1, 1)),
    lambda m, F: F.avg_pool3d(m.zeros(*X5), 5),
    lambda m, F: F.avg_pool3d(m.zeros(*X5), 2, divisor_override=0),
    lambda m, F: F.avg_pool3d(m.zeros(*X5), 2, None, 0, False, None),
    lambda m, F: F.avg_pool3d(m.zeros(1, 2, 0, 3, 3), 2),
    lambda m, F: F.avg_pool3d(m.zeros(4, 5, 6), 2),
    lambda m, F: F.avg_pool3d(m.zeros(*X5, dtype=m.int32), 2),
    lambda m, F: F.avg_pool3d(m.zeros(*X5, dtype=m.bool), 2),
    lambda m, F: F.max_pool3d(m.zeros(*X5, dtype=m.bool), 2),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(*X5), (2, 3)),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(4, 5, 6), 2),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(*X5), -1),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(*X5, dtype=m.int64), 2),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(*X5, dtype=m.int64), 1),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(2, 2), 1),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(1, 2, 0, 3, 3), 2),
    lambda m, F: F.adaptive_avg_pool3d(m.zeros(*X5), 2.5),
    lambda m, F: F.adaptive_max_pool3d(m.zeros(*X5), (2, 3)),
    lambda m, F: F.adaptive_max_pool3d(m.zeros(4, 5, 6), 2),
    lambda m, F: F.adaptive_max_pool3d(m.zeros(*X5), -1),
    lambda m, F: F.adaptive_max_pool3d(m.zeros(*X5, dtype=m.int64), 2),
    lambda m, F: F.adaptive_max_pool3d(m.zeros(1, 2, 0, 3, 3), 2),
    lambda m, F: m.nn.InstanceNorm3d(4, affine=True)(m.zeros(1, 3, 2, 2, 2)),
    lambda m, F: m.nn.InstanceNorm3d(3)(m.zeros(3, 2, 2)),
    lambda m, F: m.nn.ReflectionPad3d(1)(m.zeros(2, 2)),
    lambda m, F: m.nn.ReflectionPad3d(2)(m.zeros(1, 1, 2, 2, 2)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    t = raised(ERRORS[i], torch, torch.nn.functional)
    assert t is not None
    assert raised(ERRORS[i], ng, ng.nn.functional) == t


# --- LPPool1d/2d/3d, MaxUnpool1d/2d/3d

LP_CASES = [
    ("lp_pool1d", (1, 2, 7), dict(norm_type=2, kernel_size=3, stride=2, ceil_mode=True)),
    ("lp_pool1d", (2, 6), dict(norm_type=float("inf"), kernel_size=2)),
    ("lp_pool2d", (1, 2, 5, 4), dict(norm_type=1.5, kernel_size=(2, 3), stride=1)),
    ("lp_pool2d", (1, 2, 5, 4), dict(norm_type=3, kernel_size=2, ceil_mode=True)),
    ("lp_pool2d", (1, 2, 4, 4), dict(norm_type=-float("inf"), kernel_size=2)),
    ("lp_pool3d", (1, 2, 3, 4, 4), dict(norm_type=2, kernel_size=(1, 2, 2))),
]


@pytest.mark.parametrize("fn,shape,kw", LP_CASES)
def test_lp_pools_match_torch(fn, shape, kw):
    a = np.abs(_x(*shape)) + 0.1  # x^p of a negative x is nan for a fractional p
    _check(lambda m, x: getattr(m.nn.functional, fn)(x, **kw), a)
    _check(lambda m, x: getattr(m.nn.functional, fn)(x, **kw), _x(*shape) * 0)  # all-zero


def test_lp_pool_modules_repr_and_forward():
    for name, args in (("LPPool1d", (1.5, 2, 1, True)), ("LPPool2d", (2, (2, 3))),
                       ("LPPool3d", (2, 2))):
        n, t = getattr(ng.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(n) == repr(t)
    n, t = ng.nn.LPPool2d(2, (2, 3)), torch.nn.LPPool2d(2, (2, 3))
    _check(lambda m, x: (n if m is ng else t)(x), _x(1, 2, 4, 6))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_matches_torch(nd):
    shape = (2, 2) + (4,) * nd
    a = _x(*shape, seed=nd)
    for kw in (dict(kernel_size=2), dict(kernel_size=2, stride=2, output_size=(5,) * nd)):
        def fn(m, x, kw=kw):
            F = m.nn.functional
            pool = getattr(F, f"max_pool{nd}d")
            y, i = pool(x, 2, return_indices=True)
            return getattr(F, f"max_unpool{nd}d")(y * 2, i, **kw)
        _check(fn, a)
    name = f"MaxUnpool{nd}d"
    for args in ((2,), (2, 1, 0)):
        assert repr(getattr(ng.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
    n, t = getattr(ng.nn, name)(2), getattr(torch.nn, name)(2)
    _check(lambda m, x: (n if m is ng else t)(
        *getattr(m.nn.functional, f"max_pool{nd}d")(x, 2, return_indices=True)), a[0])


def _bad_index(m, nd, value):
    i = m.zeros((1, 2) + (2,) * nd, dtype=m.int64)
    i.view(-1)[5] = value
    return i


UNPOOL_ERRORS = [
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, 16), 2),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, -1), 2),
    lambda m, F: F.max_unpool1d(m.ones(1, 2, 2), _bad_index(m, 1, 4), 2),
    lambda m, F: F.max_unpool3d(m.ones(1, 2, 2, 2, 2), _bad_index(m, 3, 64), 2),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, 0), 2, output_size=(6, 5)),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, 0), 2, output_size=(5,)),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, 0).int(), 2),
    lambda m, F: F.max_unpool3d(m.ones(1, 2, 2, 2, 2), _bad_index(m, 3, 0).int(), 2),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, 0)[..., :1], 2),
    lambda m, F: F.max_unpool2d(m.ones(2, 2), _bad_index(m, 2, 0)[0, 0], 2),
    lambda m, F: F.max_unpool3d(m.ones(2, 2, 2), _bad_index(m, 3, 0)[0, 0], 2),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2, dtype=m.int64), _bad_index(m, 2, 0), 2),
    lambda m, F: F.max_unpool2d(m.ones(1, 0, 2, 2), m.zeros(1, 0, 2, 2, dtype=m.int64), 2),
    lambda m, F: F.max_unpool2d(m.ones(1, 2, 2, 2), _bad_index(m, 2, 0), 2.5),
    lambda m, F: F.max_unpool3d(m.ones(1, 2, 2, 2, 2), _bad_index(m, 3, 0), 2, stride=0),
    lambda m, F: F.lp_pool1d(m.ones(1, 2, 6), 2, 7),
    lambda m, F: F.lp_pool1d(m.ones(1, 2, 6), 2, (2, 2)),
]


@pytest.mark.parametrize("i", range(len(UNPOOL_ERRORS)))
def test_unpool_and_lp_errors_match_torch(i):
    t = raised(UNPOOL_ERRORS[i], torch, torch.nn.functional)
    assert t is not None
    assert raised(UNPOOL_ERRORS[i], ng, ng.nn.functional) == t


# --- conv_transpose3d / ConvTranspose3d

CT_CASES = [
    dict(),
    dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2)),
    dict(dilation=(2, 1, 2), padding=1),
    dict(groups=2, stride=2, padding=1, output_padding=1),
]


@pytest.mark.parametrize("kw", CT_CASES)
def test_conv_transpose3d_matches_torch(kw):
    rng = np.random.default_rng(7)
    x, w, b = (rng.normal(size=(2, 4, 2, 3, 2)), rng.normal(size=(4, 3, 2, 2, 2)),
               rng.normal(size=3 * kw.get("groups", 1)))
    nw, tw = _pair(w)
    nb, tb = _pair(b)

    def fn(m, a):
        W, B = (nw, nb) if m is ng else (tw, tb)
        return m.nn.functional.conv_transpose3d(a, W, B, **kw)
    _check(fn, x)
    assert_close(nw.grad, tw.grad, rtol=1e-12, atol=1e-12)
    assert_close(nb.grad, tb.grad, rtol=1e-12, atol=1e-12)
    _check(fn, x[0])  # unbatched


def test_conv_transpose3d_gradcheck():
    rng = np.random.default_rng(8)
    x = ng.tensor(rng.normal(size=(1, 2, 2, 2, 2)), requires_grad=True)
    w = ng.tensor(rng.normal(size=(2, 1, 2, 1, 2)), requires_grad=True)
    assert ng.autograd.gradcheck(
        lambda a, b: ng.nn.functional.conv_transpose3d(a, b, stride=2, padding=(1, 0, 0),
                                                       output_padding=(1, 0, 1)), (x, w))


def test_conv_transpose3d_module_weights_repr_output_size():
    args = (4, 6, (2, 3, 2))
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, bias=True, dilation=(1, 2, 1))
    ng.manual_seed(0)
    torch.manual_seed(0)
    n, t = ng.nn.ConvTranspose3d(*args, **kw), torch.nn.ConvTranspose3d(*args, **kw)
    assert repr(n) == repr(t)
    assert_close(n.weight, t.weight.detach(), rtol=0, atol=0)
    assert_close(n.bias, t.bias.detach(), rtol=0, atol=0)
    x = _x(1, 4, 2, 2, 2).astype(np.float32)
    assert_close(n(ng.tensor(x), output_size=(3, 6, 2)),
                 t(torch.tensor(x), output_size=(3, 6, 2)).detach(), rtol=1e-5, atol=1e-5)
    assert repr(ng.nn.ConvTranspose3d(2, 3, 2)) == repr(torch.nn.ConvTranspose3d(2, 3, 2))


CT_X, CT_W = (1, 4, 2, 2, 2), (4, 3, 2, 2, 2)
CT_ERRORS = [
    lambda m, F: F.conv_transpose3d(m.ones(2, 2, 2), m.ones(*CT_W)),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), m.ones(4)),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), stride=0),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), padding=-1),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), output_padding=2),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), groups=3),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), stride=(1, 1)),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), padding="same"),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), padding=3),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X, dtype=m.float64), m.ones(*CT_W)),
    lambda m, F: F.conv_transpose3d(m.ones(1, 3, 2, 2, 2), m.ones(*CT_W)),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(4, 3, 2, 2)),
    lambda m, F: F.conv_transpose3d(m.ones(*CT_X), m.ones(*CT_W), None, 1.5),
    lambda m, F: m.nn.ConvTranspose3d(4, 6, 2)(m.ones(*CT_X), output_size=(4, 3, 3)),
    lambda m, F: m.nn.ConvTranspose3d(4, 6, 2, padding_mode="reflect"),
]


@pytest.mark.parametrize("i", range(len(CT_ERRORS)))
def test_conv_transpose3d_errors_match_torch(i):
    t = raised(CT_ERRORS[i], torch, torch.nn.functional)
    assert t is not None
    assert raised(CT_ERRORS[i], ng, ng.nn.functional) == t


def test_lazy_conv_transpose3d_matches_torch():
    out = []
    for m in (ng, torch):
        m.manual_seed(0)
        layer = m.nn.LazyConvTranspose3d(6, 2, stride=2, groups=2)
        first = repr(layer)
        y = layer(m.ones(1, 4, 2, 2, 2))
        out.append((first, repr(layer), type(layer).__name__, tuple(y.shape),
                    layer.weight.detach().numpy().copy(), y.detach().numpy(),
                    raised(lambda m=m: m.nn.LazyConvTranspose3d(6, 2)(m.ones(2, 2)))))
    (*a, wa, ya, ea), (*b, wb, yb, eb) = out
    assert a == b and ea == eb
    np.testing.assert_array_equal(wa, wb)
    np.testing.assert_allclose(ya, yb, rtol=1e-5, atol=1e-5)


# --- the graph: PyTorch's one node per 3-D pool / unpool, with its next_functions


def _node(fn):
    return type(fn).__name__, [(None if n is None else type(n).__name__, i)
                               for n, i in fn.next_functions]


def _unpool(m, x, nd, unbatched=False):
    F = m.nn.functional
    x = x[(0,) * (3 - nd)]  # (N, C, ...) with nd spatial dims
    y, i = getattr(F, f"max_pool{nd}d")(x, 2, return_indices=True)
    if unbatched:
        y, i = y[0], i[0]
    return getattr(F, f"max_unpool{nd}d")(y, i, 2, output_size=tuple(x.shape[-nd:]))


GRAPHS = [
    ("max", lambda m, x: m.nn.functional.max_pool3d(x, 2, 1, 1)),
    ("max indices", lambda m, x: m.nn.functional.max_pool3d(x, (2, 1, 2), return_indices=True)),
    ("max unbatched", lambda m, x: m.nn.functional.max_pool3d(x[0], 2)),
    ("avg", lambda m, x: m.nn.functional.avg_pool3d(x, 2, 1, 1, divisor_override=3)),
    ("avg unbatched", lambda m, x: m.nn.functional.avg_pool3d(x[0], 2)),
    ("adaptive avg", lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (2, 1, 3))),
    ("adaptive avg 1", lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 1)),
    ("adaptive avg empty", lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (0, 2, 2))),
    ("adaptive max", lambda m, x: m.nn.functional.adaptive_max_pool3d(x, 2, True)),
    ("adaptive max unbatched", lambda m, x: m.nn.functional.adaptive_max_pool3d(x[0], (2, 3, 1))),
    ("unpool1d", lambda m, x: _unpool(m, x, 1)),
    ("unpool2d", lambda m, x: _unpool(m, x, 2)),
    ("unpool3d", lambda m, x: _unpool(m, x, 3)),
    ("unpool2d unbatched", lambda m, x: _unpool(m, x, 2, True)),
    ("unpool1d unbatched", lambda m, x: _unpool(m, x, 1, True)),
    ("module", lambda m, x: m.nn.MaxPool3d(2, return_indices=True)(x)),
]


@pytest.mark.parametrize("fn", [g[1] for g in GRAPHS], ids=[g[0] for g in GRAPHS])
def test_3d_pool_nodes_match_torch(fn):
    nx, tx = _pair(_x(2, 2, 3, 4, 4, seed=7))
    nr, tr = fn(ng, nx), fn(torch, tx)
    if isinstance(tr, tuple):
        (nr, ni), (tr, ti) = nr, tr
        np.testing.assert_array_equal(ni.numpy(), ti.numpy())
    nf, tf = nr.grad_fn, tr.grad_fn
    while True:  # the chain down to the input (selects and squeezes around the pool)
        assert _node(nf) == _node(tf)
        if tf.next_functions[0][0] is None or not tf.next_functions[0][0].next_functions:
            break
        nf, tf = nf.next_functions[0][0], tf.next_functions[0][0]
    assert_close(nr, tr.detach(), rtol=1e-12, atol=1e-12)
    if tr.numel() == 0:  # PyTorch's backward refuses an empty adaptive pool's gradient
        return
    w = np.random.default_rng(3).normal(size=tuple(tr.shape))
    (nr * ng.tensor(w)).sum().backward()
    (tr * torch.tensor(w)).sum().backward()
    assert_close(nx.grad, tx.grad, rtol=1e-12, atol=1e-12)


def test_3d_pool_nodes_free_keep_and_check_like_torch():
    """retain_graph frees or keeps the node (PyTorch's error on a second backward), and an
    in-place change of what PyTorch saves (max_pool3d's input, max_unpool's indices) raises
    its error; a change of the unpooled values (not saved) does not."""
    a = _x(1, 1, 2, 2, 4, seed=8)
    for retain in (False, True):
        res = []
        for m in (ng, torch):
            x = m.tensor(a, requires_grad=True)
            y = m.nn.functional.max_pool3d(x, 2)
            y.sum().backward(retain_graph=retain)
            res.append((raised(y.sum().backward), x.grad.numpy().tolist()))
        assert res[0] == res[1]
    for which in ("input", "indices", "values"):
        res = []
        for m in (ng, torch):
            x = m.tensor(a, requires_grad=True)
            xi = x * 1
            y, i = m.nn.functional.max_pool3d(xi, 2, return_indices=True)
            yv = y * 1
            u = m.nn.functional.max_unpool3d(yv, i, 2, output_size=(2, 2, 4))
            with m.no_grad():
                {"input": xi, "indices": i, "values": yv}[which].add_(1)
            res.append(raised(u.sum().backward))
        assert res[0] == res[1]
        assert (res[0] is None) == (which == "values")


def test_max_pool3d_gradgradcheck():
    a = ng.tensor(_x(1, 1, 3, 3, 4, seed=5), requires_grad=True)
    F = ng.nn.functional
    assert ng.autograd.gradgradcheck(lambda x: F.max_pool3d(x, 2, 1, 1), (a,))
    assert ng.autograd.gradgradcheck(lambda x: F.adaptive_max_pool3d(x, (2, 1, 3)), (a,))
