"""Elementwise and in-place ops on odd input: PyTorch's values, dtypes, gradients and errors.

Integer division, remainder and powers are exact (never through a float); dtypes PyTorch has
no kernel for (bool abs, float bitwise ops) raise its exception classes and messages.
"""

import warnings

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

I64_MIN = -(2**63)
BIG = [2**62 + 3, -(2**62) - 3, 2**62 + 1, -(2**62) + 7, 2**53 + 1, -7, 7, 0, I64_MIN]
BIG_DIV = [2, 2, -3, 5, 1, 2, -2, -4, 3]


def _outcome(L, fn):
    """(dtype name, values) of ``fn(L)``, or (exception class, message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(L)
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e).__mro__[[c.__module__ for c in type(e).__mro__].index("builtins")], \
            str(e)
    return str(r.dtype).replace("torch.", ""), r.detach().numpy().tolist()


def _same_as_torch(fn):
    got, want = _outcome(ng, fn), _outcome(torch, fn)
    if isinstance(want[0], type):
        assert got[0] is want[0] and got[1] == want[1], (got, want)
        return
    assert got[0] == want[0], (got, want)
    np.testing.assert_allclose(np.array(got[1], float), np.array(want[1], float),
                               rtol=1e-6, equal_nan=True)
    if got[0].startswith(("int", "uint")):
        assert got[1] == want[1]  # exact, beyond 2**53


# ---- the kernel bug: integer rounding division and remainder are exact ------------------


def test_floor_divide_beyond_2_53_is_exact():
    assert (ng.tensor([2**53 + 1]) // 1).tolist() == [9007199254740993]
    assert (ng.tensor([2**62 + 3]) // ng.tensor([-2])).tolist() == [-(2**61) - 2]
    assert (ng.tensor([-(2**62) - 3]) % 2).tolist() == [1]
    assert ng.div(ng.tensor([-(2**62) - 3]), 2, rounding_mode="trunc").tolist() == [-(2**61) - 1]


def test_int_min_by_minus_one_wraps():
    # INT_MIN // -1 overflows (SIGFPE in C): numgrad wraps to INT_MIN, as PyTorch's floor
    for mode in ("floor", "trunc"):
        assert ng.div(ng.tensor([I64_MIN]), -1, rounding_mode=mode).tolist() == [I64_MIN]
    assert (ng.tensor([I64_MIN]) % -1).tolist() == [0]
    i32 = ng.tensor([-(2**31)], dtype=ng.int32)
    assert (i32 // -1).tolist() == [-(2**31)] and (i32 // -1).dtype is ng.int32


def test_integer_zero_divisor_raises():
    for fn in (lambda: ng.tensor([3, 4]) // ng.tensor([1, 0]), lambda: ng.tensor([3]) % 0,
               lambda: ng.div(ng.tensor([3]), 0, rounding_mode="trunc")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn()


@requires_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("op", ["floordiv", "div_floor", "div_trunc", "mod", "remainder_s",
                                "rfloordiv"])
def test_integer_division_parity(op, dtype):
    if dtype == "int64":
        a, b = BIG[:-1], BIG_DIV[:-1]
    elif dtype == "int32":
        a, b = [2**31 - 1, -(2**31) + 5, -7, 7, 0, -(2**31)], [2, -3, 2, -2, 5, 7]
    else:
        a, b = [200, 7, 255, 0, 9], [3, 2, 16, 1, 255]
    fns = {"floordiv": lambda L, x, y: x // y,
           "div_floor": lambda L, x, y: L.div(x, y, rounding_mode="floor"),
           "div_trunc": lambda L, x, y: L.div(x, y, rounding_mode="trunc"),
           "mod": lambda L, x, y: x % y, "remainder_s": lambda L, x, y: L.remainder(x, -3),
           "rfloordiv": lambda L, x, y: 1000 // y}
    fn = fns[op]
    _same_as_torch(lambda L: fn(L, L.tensor(a, dtype=getattr(L, dtype)),
                                L.tensor(b, dtype=getattr(L, dtype))))


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [lambda L, x, y: x // y, lambda L, x, y: x % y,
                                lambda L, x, y: L.div(x, y, rounding_mode="trunc")])
def test_float_rounding_division_parity(fn, dtype):
    # PyTorch rounds fmod-based quotients: 1 // 0.1 == 9, not floor(1 / 0.1) == 10
    a = [1.0, -1.0, 0.3, 5.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 7.5, 0.7, -5.0]
    b = [0.1, 0.1, 0.1, -0.0, 2.0, 2.0, 2.0, 1.0, np.inf, np.inf, 0.3, -0.1, 0.0]
    _same_as_torch(lambda L: fn(L, L.tensor(a, dtype=getattr(L, dtype)),
                                L.tensor(b, dtype=getattr(L, dtype))))


@requires_torch
def test_rounding_division_gradients():
    def run(L):
        a = L.tensor([5.5, -3.2, 7.0, 0.3], requires_grad=True)
        b = L.tensor([2.0, 2.0, -3.0, 0.1], requires_grad=True)
        out = (L.div(a, b, rounding_mode="floor") + a % b + L.remainder(a, 2.5)).sum()
        out.backward()
        return a.grad.tolist(), b.grad.tolist()
    for got, want in zip(run(ng), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    x = ng.tensor([1.5], requires_grad=True)
    y = x // 2
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        y.sum().backward()


# ---- dtypes without a kernel in PyTorch --------------------------------------------------


BOOL_ERRORS = [
    (lambda L, b: L.abs(b), NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda L, b: L.floor(b), NotImplementedError,
     "\"floor_vml_cpu\" not implemented for 'Bool'"),
    (lambda L, b: b.round(), NotImplementedError, "\"round_vml_cpu\" not implemented for 'Bool'"),
    (lambda L, b: L.relu(b), RuntimeError, "Boolean inputs not supported for relu"),
    (lambda L, b: b // b, NotImplementedError, "\"div_floor_cpu\" not implemented for 'Bool'"),
    (lambda L, b: b % True, NotImplementedError, "\"remainder_cpu\" not implemented for 'Bool'"),
    (lambda L, b: b ** b, NotImplementedError, "\"pow\" not implemented for 'Bool'"),
    (lambda L, b: True ** b, NotImplementedError, "\"pow\" not implemented for 'Bool'"),
    (lambda L, b: b - b, RuntimeError, "with two bool tensors is not supported"),
    (lambda L, b: 2 - b, RuntimeError, "with a bool tensor is not supported"),
    (lambda L, b: L.tensor([1.0, 2.0]) - b, RuntimeError, "with a bool tensor is not supported"),
    (lambda L, b: L.clamp(b, b, b), NotImplementedError,
     "\"clamp_cpu\" not implemented for 'Bool'"),
    (lambda L, b: L.clamp(b, max=True), NotImplementedError,
     "\"clamp_max_scalar_cpu\" not implemented for 'Bool'"),
    (lambda L, b: L.tensor([1.5]) & 2, NotImplementedError,
     "\"bitwise_and_cpu\" not implemented for 'Float'"),
    (lambda L, b: ~L.tensor([1.5]), TypeError, "~ (operator.invert) is only implemented"),
    (lambda L, b: L.maximum(L.tensor([1.0]), 2), TypeError,
     "maximum(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda L, b: L.logical_or(L.tensor([1.0]), 2), TypeError,
     "logical_or(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda L, b: L.tensor([1, 2]).masked_fill(b, 1e30), RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    (lambda L, b: L.tensor([1, 2], dtype=L.uint8).fill_(300), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
]


@pytest.mark.parametrize("fn, cls, msg", BOOL_ERRORS)
def test_refused_dtypes(fn, cls, msg):
    with pytest.raises(cls) as info:
        fn(ng, ng.tensor([True, False]))
    assert msg in str(info.value)
    if torch is not None:
        with pytest.raises(cls) as tinfo:
            fn(torch, torch.tensor([True, False]))
        assert msg in str(tinfo.value)


@requires_torch
@pytest.mark.parametrize("fn", [
    lambda L: L.tensor([5, -3, 0, 7]) & L.tensor([3, 6, 1, -1]),
    lambda L: L.tensor([5, 3, 0, 200], dtype=L.uint8) | 2,
    lambda L: 6 ^ L.tensor([5, -3, 2**62, 7]),
    lambda L: L.tensor([True, False]) & 2,
    lambda L: L.tensor([True, False]) ^ True,
    lambda L: ~L.tensor([5, 0, 255], dtype=L.uint8),
    lambda L: ~L.tensor([5, -1, I64_MIN]),
    lambda L: ~L.tensor([True, False]),
    lambda L: L.tensor([0, 2, -1, 1, -2, 0]) ** L.tensor([-2, -3, -3, -5, 2, 0]),
    lambda L: 0 ** L.tensor([-2, 3, 0]),
    lambda L: L.tensor([True, False]) ** True,
    lambda L: L.logical_and(L.tensor([4, 0]), L.tensor([0.3, 0.3])),
    lambda L: L.where(L.tensor([5, 0], dtype=L.uint8), L.tensor([1.0, 2.0]), L.tensor([3, 4])),
    lambda L: L.tensor([1, 2, 3]).masked_fill(L.tensor([True, False, True]), 2.7),
    lambda L: L.tensor([1, 2], dtype=L.uint8).masked_fill(L.tensor([True, False]), -129),
    lambda L: L.tensor([True, False]).masked_fill(L.tensor([False, True]), 0.5),
    lambda L: L.tensor([4, 5]).copy_(2.5),
    lambda L: L.zeros(0, dtype=L.int64).sub_(L.tensor([4, 2]), alpha=2),
])
def test_value_parity(fn):
    _same_as_torch(fn)


# ---- gradients ---------------------------------------------------------------------------


def _grads(L, fn, *arrays):
    ts = [L.tensor(a, requires_grad=True) for a in arrays]
    out = fn(L, *ts)
    out.backward(L.ones(tuple(out.shape), dtype=out.dtype))
    return [t.grad.numpy() for t in ts]


@requires_torch
@pytest.mark.parametrize("e", [0.5, -0.5, 1.5, 2, 3, -1, -2, 0, 1, -1.5])
def test_pow_scalar_gradient_specials(e):
    x = np.array([0.3, -1.0, np.nan, 0.0, -0.0, np.inf, -np.inf, 2.0], np.float32)
    got, want = (_grads(L, lambda L, t: t ** e, x) for L in (ng, torch))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, equal_nan=True)


@requires_torch
def test_pow_gradient_rounds_a_float32_exponent():
    # PyTorch computes b - 1 in b's dtype (float32) before promoting to the float64 result
    a, b = np.array(0.3), np.array(-0.1, np.float32)
    got, want = (_grads(L, lambda L, x, y: x ** y, a, b) for L in (ng, torch))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


@requires_torch
def test_clamp_tensor_bounds_gradients():
    x = np.array([0.3, -1.0, 2.0, np.nan, 0.5, 1.0], np.float32)
    lo = np.array([0.0, 0.0, 3.0, 0.0, 0.5, np.nan], np.float32)
    hi = np.array([1.0, -0.5, 2.5, 1.0, 0.2, 2.0], np.float32)  # some below lo
    for fn in (lambda L, a, b, c: L.clamp(a, b, c), lambda L, a, b, c: L.clamp(a, min=b) + c,
               lambda L, a, b, c: L.clamp(a, max=c) + b):
        got, want = (_grads(L, fn, x, lo, hi) for L in (ng, torch))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, equal_nan=True)


@requires_torch
def test_clamp_backward_in_place_mask_error():
    # PyTorch builds the masks in place: a broadcasting max makes its backward fail
    for L in (ng, torch):
        x = L.tensor(0.3, requires_grad=True)
        out = L.clamp(x, L.tensor(0.1), L.tensor([0.5]))
        with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match"):
            out.sum().backward()


def test_mse_loss_empty_backward():
    x = ng.zeros(0, requires_grad=True)
    loss = ng.nn.functional.mse_loss(x, ng.zeros(0, dtype=ng.int64))
    assert np.isnan(loss.item())
    loss.backward()
    assert x.grad.shape == (0,)


def test_fill_and_zero_write_expanded_views():
    x = ng.tensor([4]).expand(3)
    assert x.fill_(2.5).tolist() == [2, 2, 2]
    assert x.zero_().tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="more than one element"):
        ng.tensor([4.0]).expand(3).neg_()


def test_integer_inplace_records_no_gradient():
    i = ng.tensor(4)
    i.copy_(ng.tensor(0.3, requires_grad=True))
    assert not i.requires_grad and i.item() == 0


@requires_torch
@pytest.mark.parametrize("call", [
    "L.sub(2, x, alpha=3)", "L.add(2, u, alpha=2)", "L.add(2.5, u, alpha=2)",
    "L.div(7, u, rounding_mode='floor')", "L.div(-7, x, rounding_mode='trunc')",
    "L.logical_and(2, x)", "L.logical_or(x, 0)", "L.maximum(1.5, x)", "L.eq(u, 2.5)",
    "L.add(u, True, alpha=2.5)", "L.sub(True, b)", "L.div(u, u)", "L.lt(u, 2.5)",
])
def test_number_operands_of_declared_arithmetic_match_pytorch(call):
    """The promotion layer's number operands: a number first (with alpha or rounding_mode),
    Python scalars of each category against uint8, int64, bool and float tensors."""
    def make(L):
        return {"L": L, "x": L.tensor([-2.5, 0.0, 3.0]), "u": L.tensor([1, 2, 3], dtype=L.uint8),
                "b": L.tensor([True, False])}
    assert _outcome(ng, lambda L: eval(call, make(L))) == \
        _outcome(torch, lambda L: eval(call, make(L)))


# ---- ops declared over the promotion layer (issue 32): every form against PyTorch ---------


@requires_torch
@pytest.mark.parametrize("fn", [
    # in place into uint8: computed in the promoted int32, then cast (not uint8 arithmetic)
    lambda L: L.tensor([7, 3, 200], dtype=L.uint8).remainder_(
        L.tensor([3, 2, -1], dtype=L.int32)),
    lambda L: L.tensor([7, 3, 200], dtype=L.uint8).__ifloordiv__(
        L.tensor([3, 2, -1], dtype=L.int32)),
    lambda L: L.fmod(L.tensor([-7, 7, -7, I64_MIN]), L.tensor([3, -3, -3, -1])),
    lambda L: L.fmod(L.tensor([-7.5, 7.5]), 2),
    lambda L: L.fmod(L.tensor([1, 2]), 0),
    lambda L: L.tensor([1, -8, 3, 5]) << L.tensor([1, 70, -1, 63]),
    lambda L: L.tensor([-8, 8, 3]) >> L.tensor([70, 70, 1]),
    lambda L: L.tensor([5, 200], dtype=L.uint8) >> L.tensor([1, 9], dtype=L.uint8),
    lambda L: 2 << L.tensor([1, 3]),
    lambda L: L.tensor([True]) << 1,
    lambda L: L.tensor([1.5]) >> 1,
    lambda L: L.hypot(L.tensor([3.0, 5.0]), L.tensor([4.0, 12.0], dtype=L.float64)),
    lambda L: L.hypot(L.tensor([3, 5]), L.tensor([4, 12])),
    lambda L: L.hypot(L.tensor([3.0]), 4),
    lambda L: L.rsub(L.tensor([1, 2]), L.tensor([5, 5]), alpha=3),
    lambda L: L.rsub(L.tensor([1.5, 2.0]), 5, alpha=3),
    lambda L: L.pow(L.tensor([2, 3]), -1),
    lambda L: L.pow(2, L.tensor([1, 2]), out=L.zeros(2, dtype=L.int64)),
    lambda L: L.bitwise_and(L.tensor([1, 2]), L.tensor([1.5, 2.5]),
                            out=L.zeros(2, dtype=L.int64)),
    lambda L: L.clamp_min(L.tensor([1, 5]), L.tensor([2, 2])),
    lambda L: L.clamp_max(L.tensor([1, 5]), 2.5),
    lambda L: L.clamp(L.tensor([1, 5]), 2, 3, out=L.zeros(2)),
    lambda L: L.where(L.tensor([True, False]), L.tensor([1, 2]), L.tensor([3, 4]),
                      out=L.zeros(2)),
])
def test_declared_binary_forms(fn):
    _same_as_torch(fn)


@requires_torch
@pytest.mark.parametrize("fn", [
    lambda L: L.where(L.tensor([True, False]), L.tensor([1.5, 2.0]), None),
    lambda L: L.where(L.tensor([True, False]), None, L.tensor([1, 2])),
    lambda L: L.where(L.tensor(True), 2, L.tensor([1.5, 2.5], dtype=L.float64)),
    lambda L: L.where(L.tensor([[True], [False]]), L.tensor([1, 2], dtype=L.uint8), -1),
    lambda L: L.where(L.tensor([True, False]), 2.5, L.tensor([1, 2])),
    lambda L: L.clamp(L.tensor([1, 5, 9]), L.tensor([2, 2, 2]), 7),
    lambda L: L.clamp(L.tensor([1, 5, 9]), max=L.tensor(4.5)),
    lambda L: L.clip(L.tensor([[1.5], [-2.0]]), L.tensor([0.0, -3.0]), None),
    lambda L: L.tensor([1, 5, 9], dtype=L.int32).clamp_(L.tensor([2]), L.tensor([6])),
    lambda L: L.clamp(L.tensor([True, False]), L.tensor([True, True]), L.tensor([False, True])),
    lambda L: L.where(L.tensor([True, False]), "x", L.tensor([1.0, 2.0])),
    lambda L: L.where(L.tensor([True, False]), L.tensor([1.0, 2.0]), object()),
    lambda L: L.clamp(L.tensor([1.0, 2.0]), "x"),
])
def test_declared_ternary_forms(fn):
    """where and clamp through the ternary declaration (ops.promote.ternary): dtypes,
    values and errors (first line) as PyTorch's; an operand of where left None is
    PyTorch's TypeError."""
    got, want = _outcome(ng, fn), _outcome(torch, fn)
    if isinstance(want[0], type):
        assert got[0] is want[0] and got[1] == want[1].split("\n")[0].rstrip(), (got, want)
        return
    assert got == want


def _node_names(out):
    names, todo = [], [out.grad_fn]
    while todo:
        n = todo.pop()
        if n is not None:
            names.append((type(n).__name__, len(n.next_functions)))
            todo.extend(f for f, _ in n.next_functions)
    return names


@requires_torch
@pytest.mark.parametrize("fn", [
    lambda L, a, b: a ** b, lambda L, a, b: a ** 2, lambda L, a, b: 2 ** a,
    lambda L, a, b: a % b, lambda L, a, b: a % 2, lambda L, a, b: 2 % a,
    lambda L, a, b: L.fmod(a, b), lambda L, a, b: L.fmod(a, 2), lambda L, a, b: a // b,
    lambda L, a, b: L.rsub(a, b), lambda L, a, b: L.rsub(a, 2),
    lambda L, a, b: L.clamp_min(a, b), lambda L, a, b: L.clamp_min(a, 0.5),
    lambda L, a, b: L.clamp_max(a, b), lambda L, a, b: L.clamp(a, 0.2, 0.8),
    lambda L, a, b: L.hypot(a, b),
    lambda L, a, b: L.nn.functional.rms_norm(a, (3,), b),
])
def test_declared_binary_nodes(fn):
    """Node names and edge counts of each form, as PyTorch records them."""
    def names(L):
        a = L.tensor([[0.7, 1.9, 1.2]], requires_grad=True)
        b = L.tensor([0.4, 1.1, 1.3], requires_grad=True)
        return _node_names(fn(L, a, b))
    assert names(ng) == names(torch)
