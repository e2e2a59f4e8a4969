"""In-place ops, version counters, views and inference mode, compared with PyTorch."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng


def run_both(fn):
    """fn(m, x, w) with the same x, w (3 elements, requiring grad) in both libraries."""
    xs = np.array([0.3, -0.7, 1.2])
    ws = np.array([0.5, 1.5, -2.0])
    results = []
    for m in (ng, torch) if torch is not None else (ng,):
        x = m.tensor(xs, requires_grad=True)
        w = m.tensor(ws, requires_grad=True)
        results.append((fn(m, x, w), x, w))
    return results


def names(node):
    return (type(node).__name__,
            [type(n).__name__ if n is not None else None for n, _ in node.next_functions])


CASES = {
    "mul_": lambda m, x, w: (x * 1).mul_(w),
    "add_alpha": lambda m, x, w: (x * 1).add_(w, alpha=2),
    "div_": lambda m, x, w: (x * 1).div_(w),
    "pow_": lambda m, x, w: (x * 1).pow_(2),
    "chain": lambda m, x, w: (x * 1).clamp_(-0.5, 0.5).mul_(w).neg_().add_(2).div_(3).tanh_(),
    "relu_": lambda m, x, w: (x * w).relu_(),
    "iadd": lambda m, x, w: _iadd(x * 1, w),
    "imul_scalar": lambda m, x, w: _imul(x * 1, 3.0),
    "zero_": lambda m, x, w: (x * 1).zero_() + w,
    "fill_": lambda m, x, w: (x * 1).fill_(2.0) * w,
    "copy_": lambda m, x, w: (x * 1).copy_(w) * x,
    "copy_into_plain": lambda m, x, w: m.zeros(3, dtype=x.dtype).copy_(w * 2),
    "setitem_scalar": lambda m, x, w: _set(x * 1, 0, 5.0),
    "setitem_tensor": lambda m, x, w: _set(x * 1, 0, w[1]),
    "setitem_slice": lambda m, x, w: _set(x * 1, slice(1, None), w[:2] * 2),
    "setitem_plain": lambda m, x, w: _set(m.zeros(3, dtype=x.dtype), 1, w[0]),
    "setitem_adv": lambda m, x, w: _set(x * 1, [0, 2], w[:2]),
    "setitem_mask": lambda m, x, w: _set(x * 1, x > 0, 0.0),
    "view_mul_": lambda m, x, w: _view_op(x * 1),
    "view_of_view": lambda m, x, w: _view_view(x * w),
    "masked_fill_": lambda m, x, w: (x * 1).masked_fill_(x > 0, 0.5),
}


def _iadd(y, w):
    y += w
    return y


def _imul(y, s):
    y *= s
    return y


def _set(y, key, v):
    y[key] = v
    return y


def _view_op(y):
    v = y[1:]
    v.mul_(2)
    return y * v.sum()


def _view_view(y):
    y2 = y.view(3, 1)
    y2[0].add_(1)
    return y2.sum(1) * y


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_against_finite_differences(name):
    fn = CASES[name]
    xs = np.array([0.3, -0.7, 1.2])
    ws = np.array([0.5, 1.5, -2.0])

    def value(xa, wa):
        with ng.no_grad():
            return fn(ng, ng.tensor(xa, dtype=ng.float64), ng.tensor(wa, dtype=ng.float64))
    x = ng.tensor(xs, dtype=ng.float64, requires_grad=True)
    w = ng.tensor(ws, dtype=ng.float64, requires_grad=True)
    out = fn(ng, x, w)
    out.sum().backward()
    eps = 1e-6
    for t, base, other_first in ((x, xs, True), (w, ws, False)):
        num = np.zeros(3)
        for k in range(3):
            p = base.copy()
            p[k] += eps
            m = base.copy()
            m[k] -= eps
            fp = value(p, ws) if other_first else value(xs, p)
            fm = value(m, ws) if other_first else value(xs, m)
            num[k] = (fp.sum().item() - fm.sum().item()) / (2 * eps)
        got = t.grad.numpy() if t.grad is not None else np.zeros(3)
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6)


@requires_torch
@pytest.mark.parametrize("name", list(CASES))
def test_matches_pytorch(name):
    (ours, x, w), (theirs, tx, tw) = run_both(CASES[name])
    assert_close(ours, theirs, rtol=1e-6)
    assert names(ours.grad_fn) == names(theirs.grad_fn)
    assert ours._version == theirs._version
    ours.sum().backward()
    theirs.sum().backward()
    for a, b in ((x, tx), (w, tw)):
        if b.grad is None:
            assert a.grad is None
        else:
            assert_close(a.grad, b.grad, rtol=1e-6)


ERRORS = {
    "leaf": lambda m: m.ones(3, requires_grad=True).add_(1),
    "view_of_leaf": lambda m: m.ones(3, requires_grad=True)[0:2].mul_(2),
    "saved_input_modified": lambda m: _saved_modified(m),
    "saved_output_modified": lambda m: _output_modified(m),
    "saved_leaf_modified": lambda m: _leaf_modified(m),
    "int_add_float": lambda m: m.ones(3, dtype=m.int64).add_(1.5),
    "broadcast_into_smaller": lambda m: m.ones(3).add_(m.ones(2, 3)),
    "setitem_leaf": lambda m: m.ones(3, requires_grad=True).__setitem__(0, 2.0),
    "setitem_leaf_adv": lambda m: m.ones(3, requires_grad=True).__setitem__([0, 1], 2.0),
    "saved_result_then_modified": lambda m: (m.ones(3, requires_grad=True) * 1).sigmoid_()
    .tanh_().neg_().sum().backward(),
    "result_then_modified": lambda m: (m.ones(3, requires_grad=True) * 1).exp_().sub_(1).sum()
    .backward(),
}


def _saved_modified(m):
    x = m.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    z.sum().backward()


def _output_modified(m):
    x = m.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _leaf_modified(m):
    x = m.ones(3, requires_grad=True)
    d = x.detach()
    z = x * x
    d.add_(1)
    z.sum().backward()


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


@requires_torch
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_pytorch(name):
    assert _error(lambda: ERRORS[name](ng)) == _error(lambda: ERRORS[name](torch))


def test_error_text_without_torch():
    err = _error(lambda: _saved_modified(ng))
    assert err == (RuntimeError,
                   "one of the variables needed for gradient computation has been modified by an "
                   "inplace operation: [torch.FloatTensor [3]], which is output 0 of Add, is at "
                   "version 1; expected version 0 instead. Hint: enable anomaly detection to find "
                   "the operation that failed to compute its gradient, with "
                   "torch.autograd.set_detect_anomaly(True, check_nan=False).")


def test_versions_shared_by_views_and_detach_not_data():
    x = ng.zeros(4)
    v = x[1:3]
    d = x.detach()
    assert v._base is x and x._base is None
    v.add_(1)
    assert x._version == v._version == d._version == 1
    d.mul_(2)
    assert x._version == 2
    x.data.add_(1)
    assert x._version == 2  # .data has its own counter
    assert x.tolist() == [1.0, 3.0, 3.0, 1.0]


def test_views_share_storage():
    x = ng.arange(6.0).reshape(2, 3).clone()
    for view in (x.view(3, 2), x.reshape(6), x[0], x[:, 1], x.t(), x.transpose(0, 1),
                 x.permute(1, 0), x.unsqueeze(0), x[None].squeeze(0), x[:1].expand(4, 3)):
        assert view._base is x
        assert np.shares_memory(view.numpy(), x.numpy())
    assert x.is_contiguous() and not x.t().is_contiguous()
    c = x.t().contiguous()
    assert c.is_contiguous() and c._base is None
    assert x.contiguous() is x


def test_optimizer_style_update_under_no_grad():
    w = ng.ones(3, requires_grad=True)
    (w * w).sum().backward()
    with ng.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
    assert_close(w, np.full(3, 0.8, np.float32))
    assert w.is_leaf and w.requires_grad and w._version == 1


@requires_torch
def test_stale_view_is_regenerated_like_pytorch():
    def run(m):
        x = m.ones(3, requires_grad=True)
        y = x.clone()
        z = y.view(3, 1)
        y.mul_(2)
        out = (z * 3).sum()
        out.backward()
        return type(z.grad_fn).__name__, x.grad
    (n1, g1), (n2, g2) = run(ng), run(torch)
    assert n1 == n2 == "AsStridedBackward0"
    assert_close(g1, g2)


def test_inference_mode():
    with ng.inference_mode():
        x = ng.ones(3)
        y = x * 2
        assert x.is_inference() and y.is_inference() and not y.requires_grad
        assert ng.autograd.grad_mode.is_inference_mode_enabled()
    assert x.is_inference() and not ng.ones(1).is_inference()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter."):
        x._version  # noqa: B018
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        x.requires_grad_()
    w = ng.ones(3, requires_grad=True)
    (w + x).sum().backward()  # not saved: allowed
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (w * x).sum()
    assert x[0].is_inference() and not x.clone().is_inference()

    @ng.inference_mode()
    def f(t):
        return t * 2
    assert f(ng.ones(2)).is_inference()


# in-place ops whose other tensor operand requires grad while self does not: the node is
# recorded and the operand gets its gradient (it was silently dropped before)
_OPERAND_CASES = {
    "lerp_": lambda x, s: x.lerp_(s, 0.3),
    "lerp_weight": lambda x, s: x.lerp_(s, s),
    "clamp_min_tensor": lambda x, s: x.clamp_(min=s),
    "mul_": lambda x, s: x.mul_(s),
    "addcmul_": lambda x, s: x.addcmul_(s, s),
    "addcdiv_": lambda x, s: x.addcdiv_(s, s + 3, value=2),
    "scatter_": lambda x, s: x.scatter_(0, _index(x), s),
    "scatter_add_": lambda x, s: x.scatter_add_(0, _index(x), s),
    "scatter_reduce_": lambda x, s: x.scatter_reduce_(0, _index(x), s, "amax"),
}


def _index(x):
    return (torch if isinstance(x, torch.Tensor) else ng).tensor([2, 0, 1])


@requires_torch
@pytest.mark.parametrize("name", list(_OPERAND_CASES))
def test_inplace_records_a_node_for_an_operand_that_requires_grad(name):
    f = _OPERAND_CASES[name]
    out = []
    for lib in (torch, ng):
        s = lib.tensor([0.5, -1.5, 2.0], dtype=lib.float64, requires_grad=True)
        y = f(lib.tensor([1.0, 2.0, -3.0], dtype=lib.float64), s)
        y.pow(2).sum().backward()
        out.append((type(y.grad_fn).__name__, s.grad.numpy()))
    assert out[0][0] == out[1][0]
    assert_close(out[1][1], out[0][1])
