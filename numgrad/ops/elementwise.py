"""Elementwise ops: arithmetic, comparisons, activations, where/clamp/maximum.

Each op runs one Numba kernel forward; its node's backward rule is written with numgrad
ops, so gradients are themselves differentiable (``create_graph=True``). Rules that would
take several ops (tanh, sigmoid, pow, clamp, ...) call one fused backward op, declared in
the registry (``numgrad.ops.unary``) with its own node and derivative. Broadcasting never
appears in a rule: binary ops record the input shapes (``_meta``) and the engine sums
gradients back to them. Each op is registered (``declare``) beside its definition, which
makes it a ``numgrad`` function and a Tensor method.
"""

import operator
import warnings

import numpy as np

from numgrad import _arrays, _dtype
from numgrad._shape import broadcast_shapes
from numgrad.autograd.graph import Node
from numgrad.ops._util import (
    EW,
    NO_EDGE,
    Tensor,
    _wrap,
    as_type,
    attach,
    dtype_of,
    edge,
    is_scalar,
    meta_for,
    needs_grad,
    state,
)
from numgrad.ops.promote import WRAP, _tensor_arg, binary, ternary
from numgrad.ops.promote import as_tensor as _as_t
from numgrad.ops.promote import not_implemented as _not_implemented
from numgrad.ops.promote import scalar_tensor as _scalar_tensor
from numgrad.ops.registry import REGISTRY, declare, inplace_of, make_node, write_out
from numgrad.ops.registry import flat1 as _flat1

# ========================================================================================
# generic launchers
# ========================================================================================


# The fast paths below skip broadcasting and casting when the operands already share a
# dtype, a shape and a C-contiguous layout (the common case on the hot path); everything
# else goes through the general launchers.


def _unary(kernel, x, dt, p=0.0, q=0.0):
    """Kernel on tensor ``x`` computed in dtype ``dt``; returns the new array."""
    xd = x._data
    if xd.dtype is dt.np and xd.flags.c_contiguous:
        return _flat1(kernel, xd, p, q)
    return EW.unary(kernel, as_type(x, dt), dt.np, p, q)


def _bin_out(kernel, a, b, dt, out_dt, p=0.0, q=0.0):
    """Binary kernel on tensors broadcast together; returns (array, shape)."""
    shape = broadcast_shapes(a._data.shape, b._data.shape)
    return EW.binary(kernel, as_type(a, dt), as_type(b, dt), out_dt.np, shape, p, q), shape


def _record(out, node, inputs, shape, dt):
    """Attach ``node`` to ``out`` and record input metadata when shapes/dtypes differ."""
    attach(out, node)
    metas = tuple(meta_for(t, shape, dt) if isinstance(t, Tensor) else None for t in inputs)
    if any(m is not None for m in metas):
        node._meta = metas
    return out


_IN_PLACE = ("function", "method", "inplace")  # variants of the ops with an in-place form


def _check_tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")




# ========================================================================================
# unary float ops
# ========================================================================================


@declare(nodes=("PowBackward0",), variants=("function", "method", "inplace"))
def square(input):
    return pow(input, 2)


def _clamp_out_check(out, input, min, max):  # noqa: A002
    """Number bounds write only into their own dtype."""
    if (isinstance(input, Tensor) and isinstance(out, Tensor)
            and all(v is None or is_scalar(v) for v in (min, max))):
        dt = _dtype.result_type(input, *[v for v in (min, max) if v is not None])
        if dt is not dtype_of(out):
            raise RuntimeError(f"Found dtype {dtype_of(out)._legacy} but expected {dt._legacy}")


def _clamp_numbers(input, min, max):  # noqa: A002
    """Clamp between number bounds: one unary kernel, ``ClampBackward1``."""
    for v in (min, max):
        if v is not None:
            _dtype.checked_scalar(v, _dtype.float64)  # a number (PyTorch's TypeError else)
    dt = _dtype.result_type(input, *[v for v in (min, max) if v is not None])
    if dt is _dtype.bool_:
        which = "" if min is not None and max is not None else "_min" if max is None else "_max"
        raise _not_implemented(f"clamp{which}_scalar_cpu", dt)
    if dt._kind == 2:
        lo = -np.inf if min is None else _dtype.checked_scalar(min, dt)
        hi = np.inf if max is None else _dtype.checked_scalar(max, dt)
    else:
        info = np.iinfo(dt.np) if dt._kind == 1 else None
        lo = (info.min if info else False) if min is None else int(min)
        hi = (info.max if info else True) if max is None else int(max)
    out = _wrap(_unary(EW.clamp, input, dt, lo, hi))
    if state.enabled and input._requires_grad:
        # the bounds as given (PyTorch's _saved_min/_saved_max), then as applied
        attach(out, ClampBackward1((edge(input),), (input, min, max, lo, hi)))
    return out


def _clamp_fill(dt, i):
    """A missing clamp bound: the dtype's extreme, never binding (i: 1 lower, 2 upper)."""
    if dt._kind == 2:
        return np.inf if i == 2 else -np.inf
    if dt._kind == 1:
        return int(np.iinfo(dt.np).max if i == 2 else np.iinfo(dt.np).min)
    return i == 2


def _not_operand(v):
    """True for an argument that is neither a tensor, a number nor a sequence of numbers (a
    string): PyTorch's argument parser refuses it before anything runs. Callers test the
    class against ``_PLAIN_OPERANDS`` (None included) first, so the common call pays one
    set lookup."""
    return isinstance(v, (str, bytes)) or not (
        isinstance(v, (Tensor, list, tuple, np.ndarray)) or is_scalar(v))


_PLAIN_OPERANDS = frozenset((Tensor, int, float, bool, type(None)))


def _clamp_bool(dt, x, lo, hi):
    if dt is _dtype.bool_ and lo is not None and hi is not None:
        raise _not_implemented("clamp_cpu", dt)


# ClampBackward0 saves the bounds given, as tensors of the result dtype
@ternary(node=lambda *a: ClampBackward0(*a), kernel="clamp_t", promoted=(0, 1, 2),
         fill=_clamp_fill, check=_clamp_bool, number=_clamp_numbers,
         saves=lambda ops, w: (ops[0], w[1] if ops[1] is not None else None,
                               w[2] if ops[2] is not None else None),
         out_check=_clamp_out_check, nodes=("ClampBackward1", "ClampBackward0"),
         aliases=("clip",), variants=("function", "method", "inplace"))
def clamp(input, min, max):  # noqa: A002
    """Clamp into [min, max] (``ClampBackward1`` for numbers, ``ClampBackward0`` for tensors)."""
    tlo, thi = isinstance(min, Tensor), isinstance(max, Tensor)
    if (not isinstance(input, Tensor) or (tlo and is_scalar(max) or thi and is_scalar(min))
            or min.__class__ not in _PLAIN_OPERANDS and _not_operand(min)
            or max.__class__ not in _PLAIN_OPERANDS and _not_operand(max)):
        got = ", ".join(type(v).__name__ for v in (input, min, max)[:3 if max is not None else 2])
        raise TypeError(f"clamp() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return [input, min, max]


def _clamp_check(which):
    """No bool clamp against a number bound."""
    def check(a, b):
        if not isinstance(b, Tensor) and _dtype.result_type(a, b) is _dtype.bool_:
            raise _not_implemented(f"clamp_{which}_scalar_cpu", _dtype.bool_)
    return check


@binary(node="ClampMinBackward1", kernel="clamp_min", scalar_kernel="clamp_min_s",
        check=_clamp_check("min"), number_first="refuse", variants=_IN_PLACE, second="min",
        saves=("self", "min"), grad={
            # d/dx max(x, m) = [x >= m]
            "self": lambda grad, self, min: where(ge(self, min), grad, 0.0),  # noqa: A006
            # d/dm max(x, m) = [x < m]
            "other": lambda grad, self, min: where(lt(self, min), grad, 0.0)},  # noqa: A006
        number={"node": "ClampMinBackward0", "saves": ("self", "min"), "grad": {
            # d/dx max(x, m) = [x >= m]
            "self": lambda grad, self, min: clamp_backward(  # noqa: A006
                grad, self, float(min), np.inf)}})
def clamp_min():
    """max(input, min), NaN if either is (``ClampMinBackward0``; ``ClampMinBackward1`` for a
    tensor bound)."""


@binary(node="ClampMaxBackward1", kernel="clamp_max", scalar_kernel="clamp_max_s",
        check=_clamp_check("max"), number_first="refuse", variants=_IN_PLACE, second="max",
        saves=("self", "max"), grad={
            # d/dx min(x, m) = [x <= m]
            "self": lambda grad, self, max: where(le(self, max), grad, 0.0),  # noqa: A006
            # d/dm min(x, m) = [x > m]
            "other": lambda grad, self, max: where(gt(self, max), grad, 0.0)},  # noqa: A006
        number={"node": "ClampMaxBackward0", "saves": ("self", "max"), "grad": {
            # d/dx min(x, m) = [x <= m]
            "self": lambda grad, self, max: clamp_backward(  # noqa: A006
                grad, self, -np.inf, float(max))}})
def clamp_max():
    """min(input, max), NaN if either is (``ClampMaxBackward0``; ``ClampMaxBackward1`` for a
    tensor bound)."""


# d/dx clamp(x, lo, hi) = [lo <= x <= hi] (lo, hi: the bounds as applied)
ClampBackward1 = make_node("ClampBackward1", ("self",), {
    "self": lambda grad, self, lo, hi: clamp_backward(grad, self, lo, hi)},
    ("self", "min", "max", "lo", "hi"))


def _in_place_mask(a, b, c, d):
    """PyTorch forms clamp's gradient masks in place, ``(a op b).logical_and_(c op d)``: that
    fails where (c, d) broadcast beyond the shape of (a, b)."""
    s1 = broadcast_shapes(a._data.shape, b._data.shape)
    s2 = broadcast_shapes(s1, broadcast_shapes(c._data.shape, d._data.shape))
    if s2 != s1:
        raise RuntimeError(f"output with shape {list(s1)} doesn't match the broadcast shape "
                           f"{list(s2)}")


def _clamp_grads(g, x, lo, hi, mask):
    """d/dx clamp = [lo <= x <= hi]; d/dlo = [x < lo < hi]; d/dhi = [x > hi or hi < lo]
    (PyTorch's clamp_backward_min_max; a missing bound drops its terms)."""
    nx, nlo, nhi = mask
    gx = glo = ghi = None
    if lo is None or hi is None:
        if lo is not None:
            gx = where(ge(x, lo), g, 0.0) if nx else None
            glo = where(lt(x, lo), g, 0.0) if nlo else None
        else:
            gx = where(le(x, hi), g, 0.0) if nx else None
            ghi = where(gt(x, hi), g, 0.0) if nhi else None
        return (gx, glo, ghi)
    if nx:
        _in_place_mask(x, lo, x, hi)
        gx = where(logical_and(ge(x, lo), le(x, hi)), g, 0.0)
    if nlo:
        _in_place_mask(x, lo, lo, hi)
        glo = where(logical_and(lt(x, lo), lt(lo, hi)), g, 0.0)
    if nhi:
        _in_place_mask(x, hi, hi, lo)
        ghi = where(logical_or(gt(x, hi), lt(hi, lo)), g, 0.0)
    return (gx, glo, ghi)


ClampBackward0 = make_node("ClampBackward0", ("self", "min", "max"), {
    ("self", "min", "max"): lambda grad, self, min, max, output_mask: _clamp_grads(  # noqa: A006
        grad, self, min, max, output_mask)}, ("self", "min", "max"))


# ========================================================================================
# binary arithmetic: declarations over the promotion and Python-scalar layer (ops.promote)
# ========================================================================================


def _sub_check(a, b):
    """PyTorch's sub_check: no bool operand (a Python bool counts as a bool tensor)."""
    ab = a._data.dtype.kind == "b"
    bb = b._data.dtype.kind == "b" if isinstance(b, Tensor) else isinstance(b, (bool, np.bool_))
    if ab or bb:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead." if ab and bb else
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _add_number_first(a, b, alpha):
    return add(b, a) if alpha == 1 else add(_number_first(a, b), b, alpha=alpha)


@binary(node="AddBackward0", kernel="add", scalar_kernel="add_s", alpha=1, variants=_IN_PLACE,
        number_first=_add_number_first, scalar_node="AddBackward1", grad={
            # d/da (a + alpha b) = 1
            "self": lambda grad: grad,
            # d/db (a + alpha b) = alpha
            "other": lambda grad, alpha: grad if alpha == 1 else mul(grad, alpha)})
def add():
    """input + alpha * other (``AddBackward0``)."""


@binary(node="SubBackward0", kernel="sub", scalar_kernel="sub_s", alpha=-1, check=_sub_check,
        variants=_IN_PLACE, aliases=("subtract",),
        number_first=lambda a, b, alpha: rsub(b, a, alpha=alpha), grad={
            # d/da (a - alpha b) = 1
            "self": lambda grad: grad,
            # d/db (a - alpha b) = -alpha
            "other": lambda grad, alpha: neg(grad) if alpha == 1 else mul(grad, -alpha)})
def sub():
    """input - alpha * other (``SubBackward0``)."""


@binary(node="MulBackward0", kernel="mul", scalar_kernel="mul_s", variants=_IN_PLACE,
        aliases=("multiply",), number_first=lambda a, b, alpha: mul(b, a),
        saves=("self", "other"), grad={
            # d/da (a b) = b
            "self": lambda grad, other: mul(grad, other),
            # d/db (a b) = a
            "other": lambda grad, self: mul(grad, self)})
def mul():
    """Elementwise product (``MulBackward0``)."""


@binary(node="DivBackward0", kernel="div", scalar_kernel="div_s", result="float",
        variants=_IN_PLACE, aliases=("divide", "true_divide"), nodes=("DivBackward2",),
        number_first=lambda a, b, alpha: mul(reciprocal(b), a),
        rounding=lambda a, b, mode: _div_rounded(_number_first(a, b), b, mode),
        saves=("self", "other"), grad={
            # d/da (a / b) = 1 / b
            "self": lambda grad, other: div(grad, other),
            # d/db (a / b) = -a / b^2
            "other": lambda grad, self, other: _div_other_backward(grad, self, other)})
def div():
    """True division (``DivBackward0``); integers divide as floats; ``rounding_mode``
    "trunc" or "floor" rounds (``DivBackward2``)."""


def _div_other_backward(g, a, b):
    """-g a / b^2: one fused kernel, or differentiable ops when a graph is recorded."""
    if state.enabled and (g._requires_grad or a._requires_grad or b._requires_grad):
        return neg(div(mul(g, a), mul(b, b)))
    dt = dtype_of(b)
    shape = broadcast_shapes(broadcast_shapes(g._data.shape, a._data.shape), b._data.shape)
    return _wrap(EW.ternary(EW.div_bwd_other, as_type(g, dt), as_type(a, dt), b._data, dt.np,
                            shape))


@binary(node="RsubBackward0", kernel="rsub", scalar_kernel="rsub_s", alpha=1,
        scaled="rsub_scaled", scaled_scalar="rsub_scaled_s", check=_sub_check,
        number_first="refuse", grad={
            # d/da (b - alpha a) = -alpha
            "self": lambda grad, alpha: neg(grad) if alpha == 1 else mul(grad, -alpha),
            # d/db (b - alpha a) = 1
            "other": lambda grad: grad},
        number={"node": "RsubBackward1", "grad": {
            # d/dx (s - alpha x) = -alpha
            "self": lambda grad, alpha: neg(grad) if alpha == 1 else mul(grad, -alpha)}})
def rsub():
    """other - alpha * input (``RsubBackward0``; ``RsubBackward1`` for a number ``other``)."""


def _has_zero(b):
    """Whether an integer divisor holds a zero (integer division by zero has no value: PyTorch
    raises instead of returning what the hardware leaves)."""
    if not isinstance(b, Tensor):
        return b == 0
    from numgrad.ops.reduction import sum as sum_
    return b._data.size and sum_(eq(b, 0)).item() > 0


# (float kernel, integer kernel, PyTorch's kernel name) of the rounding divisions and remainder
_DIVISIONS = {"floor": ("floordiv", "floordiv_int", "div_floor_cpu"),
              "trunc": ("truncdiv", "truncdiv_int", "div_trunc_cpu"),
              "remainder": ("remainder", "remainder_int", "remainder_cpu")}


def _division(a, b, kind, node):
    """Rounding division or remainder (``kind``) of tensor ``a`` by a tensor or number ``b``,
    in PyTorch's result dtype: integers divide exactly (no float in between), after PyTorch's
    check for a zero divisor. ``node(edges, (a, b))`` makes the gradient's node."""
    dt = _dtype.result_type(a, b)
    fkernel, ikernel, name = _DIVISIONS[kind]
    if dt._kind == 0:
        raise _not_implemented(name, dt)
    if dt._kind == 1 and _has_zero(b):
        raise RuntimeError("ZeroDivisionError")
    bt = isinstance(b, Tensor)
    r, shape = _bin_out(getattr(EW, ikernel if dt._kind == 1 else fkernel), a,
                        b if bt else _scalar_tensor(b, dt), dt, dt)
    out = _wrap(r)
    if state.enabled and (a._requires_grad or (bt and b._requires_grad)):
        _record(out, node((edge(a), edge(b) if bt else NO_EDGE), (a, b)), (a, b if bt else None),
                shape, dt)
    return out


def _zeros_like(g):
    return _wrap(_arrays.zeros(g._data, g._data.shape, g._data.dtype))


class DivBackward2(Node):
    __slots__ = ()
    _meta_only = True

    # d/da round(a / b) = d/db round(a / b) = 0 (PyTorch: zeros of the gradient's shape)
    def _backward(self, g):
        return tuple(_zeros_like(g) if n[0] is not None else None for n in self.next_functions)


class _NoDerivative(Node):
    __slots__ = ()
    _meta_only = True
    _op = ""

    # PyTorch defines no derivative for this op: its grad_fn (``NotImplemented``) raises
    def _backward(self, g):
        raise RuntimeError(f"derivative for aten::{self._op} is not implemented")


def _div_rounded(a, b, mode):
    if mode not in ("floor", "trunc"):
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    return _division(a, b, mode, lambda edges, saved: DivBackward2(edges))


def _check_out_dtype(input, out):
    """The rounding ops write only into an ``out`` of the input's dtype, as PyTorch's."""
    if (isinstance(input, Tensor) and isinstance(out, Tensor) and out.dtype is not input.dtype
            and not needs_grad(input, out)):  # write_out refuses those first
        raise RuntimeError(f"Found dtype {dtype_of(out)._legacy} but expected "
                           f"{dtype_of(input)._legacy}")


def _rounding(name):
    # d/dx floor(x) = d/dx ceil(x) = d/dx trunc(x) = d/dx round(x) = 0 (almost everywhere)
    node_cls = make_node(name.capitalize() + "Backward0", ("self",),
                         {"self": lambda grad: mul(grad, 0)}, ())

    def op(input, *, out=None):
        if out is not None:
            _check_out_dtype(input, out)
            return write_out(op, out, input)
        _check_tensor(input, name)
        dt = dtype_of(input)
        if dt._kind != 2:
            if dt is _dtype.bool_:
                raise _not_implemented(name + "_vml_cpu", dt)
            return _wrap(input._data.copy())
        out = _wrap(_unary(getattr(EW, name), input, dt))
        if state.enabled and input._requires_grad:
            attach(out, node_cls((edge(input),), ()))
        return out
    op.__name__ = op.__qualname__ = name
    return op, node_cls


floor, _ = _rounding("floor")
ceil, _ = _rounding("ceil")
trunc, _ = _rounding("trunc")
_round_plain, _ = _rounding("round")
for _fn in (floor, ceil, trunc):
    declare(_fn.__name__, nodes=(_fn.__name__.capitalize() + "Backward0",),
            variants=("function", "method", "inplace"))(_fn)

# d/dx round(x, decimals) = 0 (almost everywhere)
RoundBackward1 = make_node("RoundBackward1", ("self",), {"self": lambda grad: mul(grad, 0)}, ())

_ROUND_SIGNATURES = ("\n * (Tensor input, *, Tensor out = None)\n"
                     " * (Tensor input, *, int decimals, Tensor out = None)\n")


def _round_decimals(input, decimals):
    dt = dtype_of(input)
    if dt._kind != 2:
        raise _not_implemented("round_vml_cpu" if decimals == 0 else "round_cpu", dt)
    if decimals == 0:
        r = _unary(EW.round, input, dt)
    else:  # PyTorch's 10^|d| (a double, then in x's type) and its order of operations
        with np.errstate(over="ignore"):
            ten_pow = float(np.power(np.float64(10.0), -decimals if decimals < 0 else decimals))
        r = _unary(EW.round_decimals, input, dt, ten_pow, 1.0 if decimals < 0 else 0.0)
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        attach(out, RoundBackward1((edge(input),), ()))
    return out


def _round_arguments_error(args, kwargs):
    got = ", ".join(["Tensor"] + [type(a).__name__ for a in args]
                    + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"round() received an invalid combination of arguments - got ({got}), but "
                     "expected one of:" + _ROUND_SIGNATURES)


_NO_DECIMALS = object()


def _decimals_value(decimals):
    """``decimals`` as an int, or None where PyTorch does not take it as one."""
    if decimals.__class__ is bool or isinstance(decimals, float) or decimals is None:
        return None
    try:
        v = operator.index(decimals)
    except TypeError:
        return None
    if not -2**63 <= v < 2**63:
        raise ValueError("Overflow when unpacking long long")
    return v


@declare("round", nodes=("RoundBackward0", "RoundBackward1"),
         variants=("function", "method", "inplace"))
def round(input, *args, decimals=_NO_DECIMALS, out=None):  # noqa: A001
    """Round half to even; with ``decimals``, to that many decimal places (negative: tens,
    hundreds, ...) as PyTorch computes it: rint(x * 10^d) / 10^d (``RoundBackward1``)."""
    d = None if decimals is _NO_DECIMALS else _decimals_value(decimals)
    if args or (decimals is not _NO_DECIMALS and d is None):
        kwargs = {} if decimals is _NO_DECIMALS else {"decimals": decimals}
        if out is not None:
            kwargs["out"] = out
        raise _round_arguments_error(args, kwargs)
    if out is not None:
        _check_out_dtype(input, out)
        return write_out(round, out, input, decimals=decimals)
    if d is None:
        return _round_plain(input)
    _check_tensor(input, "round")
    return _round_decimals(input, d)


def _round_method(name):
    def method(self, *args, decimals=_NO_DECIMALS):
        from numgrad.ops.inplace import apply_
        if args:
            raise TypeError(f"{name}() takes from 1 to 0 positional arguments but {len(args)} "
                            "were given")
        if decimals is _NO_DECIMALS:
            return round(self) if name == "round" else apply_(self, _round_plain)
        d = _decimals_value(decimals)
        if d is None:
            raise TypeError(f"{name}(): argument 'decimals' must be int, not "
                            f"{type(decimals).__name__}")
        if name == "round":
            return round(self, decimals=d)
        return apply_(self, lambda x: round(x, decimals=d))
    method.__name__ = method.__qualname__ = name
    return method


REGISTRY["round"].method = _round_method("round")
inplace_of("round")(_round_method("round_"))


def _number_first(v, other):
    """A number left operand (``2 // x``) as a 0-dim tensor of the op's result dtype."""
    if isinstance(v, Tensor):
        return v
    return _scalar_tensor(v, _dtype.result_type(v, other)) if is_scalar(v) else _as_t(v)


def _no_derivative(op):
    """A derivative formula for an op PyTorch defines none for: its node (``NotImplemented``)
    raises at backward."""
    def formula(grad):
        raise RuntimeError(f"derivative for aten::{op} is not implemented")
    return formula


def _division_check(kernel):
    """PyTorch's refusals of a rounding division or remainder: no bool version, and integers
    check the divisor for a zero (no value to return, unlike floats)."""
    def check(a, b):
        dt = _dtype.result_type(a, b)
        if dt._kind == 0:
            raise _not_implemented(kernel, dt)
        if dt._kind == 1 and _has_zero(b):
            raise RuntimeError("ZeroDivisionError")
    return check


_FLOOR_DIVIDE = _no_derivative("floor_divide")


@binary(node="NotImplemented", kernel="floordiv", int_kernel="floordiv_int", scalar_kernel=WRAP,
        check=_division_check("div_floor_cpu"), variants=_IN_PLACE,
        grad={"self": _FLOOR_DIVIDE, "other": _FLOOR_DIVIDE},
        number={"node": "NotImplemented", "grad": {"self": _FLOOR_DIVIDE}},
        rnumber={"node": "NotImplemented", "kernel": WRAP, "grad": {"other": _FLOOR_DIVIDE}})
def floor_divide():
    """floor(input / other) (its grad_fn raises at backward, as PyTorch's)."""


@binary(node="RemainderBackward1", kernel="remainder", int_kernel="remainder_int",
        scalar_kernel=WRAP, check=_division_check("remainder_cpu"), variants=_IN_PLACE, grad={
            # d/da (a - floor(a / b) b) = 1
            "self": lambda grad: grad,
            # d/db (a - floor(a / b) b) = -floor(a / b)
            "other": lambda grad, self, other: neg(mul(grad, _div_rounded(self, other, "floor")))},
        number={"node": "RemainderBackward0", "grad": {
            # d/da (a mod s) = 1
            "self": lambda grad: grad}},
        rnumber={"node": "NotImplemented", "kernel": WRAP,
                 "grad": {"other": _no_derivative("remainder")}})
def remainder():
    """a - floor(a / b) * b, the sign of the divisor (Python's %)."""


@binary(node="FmodBackward1", kernel="fmod", int_kernel="fmod_int", scalar_kernel=WRAP,
        check=_division_check("fmod_cpu"), variants=_IN_PLACE, number_first="refuse", grad={
            # d/da (a - trunc(a / b) b) = 1
            "self": lambda grad: grad,
            # d/db (a - trunc(a / b) b) = -trunc(a / b)
            "other": lambda grad, self, other: neg(mul(grad, _div_rounded(self, other, "trunc")))},
        number={"node": "FmodBackward0", "grad": {
            # d/da fmod(a, s) = 1
            "self": lambda grad: grad}})
def fmod():
    """a - trunc(a / b) * b, the sign of the dividend (C's fmod)."""


# ---- pow --------------------------------------------------------------------------------


def _pow_grad(kernel, g, a, b):
    dt = dtype_of(g)
    if kernel is EW.pow_bwd_self and b._data.dtype == np.bool_:  # PyTorch's b - 1 refuses
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    if state.enabled and (g._requires_grad or a._requires_grad or b._requires_grad):
        # create_graph: the same formulas in differentiable ops
        if kernel is EW.pow_bwd_self:
            return where(eq(b, 0), 0.0, mul(g, mul(b, pow(a, sub(b, 1)))))
        return where(logical_and(eq(a, 0), ge(b, 0)), 0.0, mul(g, mul(pow(a, b), log(a))))
    shape = broadcast_shapes(broadcast_shapes(g._data.shape, a._data.shape), b._data.shape)
    # PyTorch computes b - 1 in b's dtype: say when that is float32 under a float64 result
    q = 1.0 if b._data.dtype == np.float32 and dt is _dtype.float64 else 0.0
    return _wrap(EW.ternary(kernel, g._data, as_type(a, dt), as_type(b, dt), dt.np, shape,
                            0.0, q))


def _pow_check(a, b):
    """No bool pow but with a number exponent; integers take no negative number exponent."""
    dt = _dtype.result_type(a, b)
    if dt is _dtype.bool_ and isinstance(b, Tensor):
        raise _not_implemented("pow", dt)
    if dt._kind != 2 and not isinstance(b, Tensor) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


@binary(node="PowBackward1", kernel="pow", int_kernel="pow_int", scalar_kernel="pow_s",
        int_scalar_kernel="pow_int_s", check=_pow_check, variants=_IN_PLACE, second="exponent",
        saves=("self", "exponent"), grad={
            # d/da a^b = b a^(b-1)
            "self": lambda grad, self, exponent: _pow_grad(EW.pow_bwd_self, grad, self,
                                                           exponent),
            # d/db a^b = a^b log(a)
            "other": lambda grad, self, exponent: _pow_grad(EW.pow_bwd_exponent, grad, self,
                                                            exponent)},
        number={"node": "PowBackward0", "grad": {
            # d/dx x^p = p x^(p-1)
            "self": lambda grad, self, exponent: pow_backward(grad, self, exponent)}},
        rnumber={"node": "PowBackward2", "kernel": "rpow_s", "int_kernel": "rpow_int_s",
                 "out": True, "grad": {
                     # d/dx s^x = s^x log(s)
                     "exponent": lambda grad, exponent, self: rpow_backward(grad, exponent,
                                                                            self)}})
def pow():  # noqa: A001
    """input ** exponent (``PowBackward1``; ``PowBackward0`` for a number exponent,
    ``PowBackward2`` for a number base)."""


# ---- maximum / minimum ------------------------------------------------------------------


def _tie_grad(kernel, g, a, b):
    dt = dtype_of(g)
    shape = broadcast_shapes(broadcast_shapes(g._data.shape, a._data.shape), b._data.shape)
    if state.enabled and g._requires_grad:
        # piecewise-constant in a and b: under create_graph the derivative flows through g
        one = _arrays.ones(g._data, (), dt.np)
        mask = EW.ternary(kernel, one, as_type(a, dt), as_type(b, dt), dt.np, shape)
        return mul(g, _wrap(mask))
    return _wrap(EW.ternary(kernel, g._data, as_type(a, dt), as_type(b, dt), dt.np, shape))


@binary(node="MaximumBackward0", kernel="maximum", saves=("self", "other"), grad={
    # d/da max(a, b) = [a > b] + [a == b]/2
    "self": lambda grad, self, other: _tie_grad(EW.maximum_bwd_a, grad, self, other),
    # d/db max(a, b) = [b > a] + [a == b]/2
    "other": lambda grad, self, other: _tie_grad(EW.maximum_bwd_a, grad, other, self)})
def maximum():
    """The larger of two tensors' elements, NaN if either is (``MaximumBackward0``)."""


@binary(node="MinimumBackward0", kernel="minimum", saves=("self", "other"), grad={
    # d/da min(a, b) = [a < b] + [a == b]/2
    "self": lambda grad, self, other: _tie_grad(EW.minimum_bwd_a, grad, self, other),
    # d/db min(a, b) = [b < a] + [a == b]/2
    "other": lambda grad, self, other: _tie_grad(EW.minimum_bwd_a, grad, other, self)})
def minimum():
    """The smaller of two tensors' elements, NaN if either is (``MinimumBackward0``)."""


def _float_check(kernel):
    """PyTorch's refusal of an integer or bool result (an op defined for floats only)."""
    def check(a, b):
        dt = _dtype.result_type(a, b)
        if dt._kind != 2:
            raise _not_implemented(kernel, dt)
    return check


@binary(node="HypotBackward0", kernel="hypot", check=_float_check("hypot_cpu"),
        variants=_IN_PLACE, saves=("self", "other", "result"), grad={
            # d/da sqrt(a^2 + b^2) = a / hypot(a, b)
            "self": lambda grad, self, result: div(mul(grad, self), result),
            # d/db sqrt(a^2 + b^2) = b / hypot(a, b)
            "other": lambda grad, other, result: div(mul(grad, other), result)})
def hypot():
    """sqrt(input^2 + other^2) without overflow, of float tensors (``HypotBackward0``)."""


def _atan2_scale(g, a, b):
    # g / (a^2 + b^2), in PyTorch's order: g * (1 / (a^2 + b^2))
    return mul(g, reciprocal(add(mul(a, a), mul(b, b))))


@binary(node="Atan2Backward0", kernel="atan2", result="float", variants=_IN_PLACE,
        aliases=("arctan2",), number_first="refuse", saves=("self", "other"), grad={
            # d/da atan2(a, b) = b / (a^2 + b^2)
            "self": lambda grad, self, other: _atan2_scale(mul(grad, other), self, other),
            # d/db atan2(a, b) = -a / (a^2 + b^2)
            "other": lambda grad, self, other: _atan2_scale(mul(grad, neg(self)), self, other)})
def atan2():
    """The angle of the point (other, input), in (-pi, pi]; integers compute as floats
    (``Atan2Backward0``)."""


def _copysign_self_grad(g, a, result):
    # d/da copysign(a, b) = copysign(a, b) / a = +-1, taken as 0 at a = 0 (PyTorch's rule)
    return mul(g, where(eq(a, 0), 0.0, div(result, a)))


@binary(node="CopysignBackward0", kernel="copysign", scalar_kernel="copysign_s",
        result="float", variants=_IN_PLACE, number_first="refuse", saves=("self", "result"),
        grad={
            "self": lambda grad, self, result: _copysign_self_grad(grad, self, result),
            # d/db copysign(a, b) = 0 (PyTorch: zeros of the gradient's shape)
            "other": lambda grad: _zeros_like(grad)},
        number={"node": "CopysignBackward1", "saves": ("self", "result"), "grad": {
            "self": lambda grad, self, result: _copysign_self_grad(grad, self, result)}})
def copysign():
    """The magnitude of input with the sign of other (a tensor or a number; -0.0 counts as
    negative); integers compute as floats (``CopysignBackward0``, ``CopysignBackward1`` for
    a number)."""


# ========================================================================================
# comparisons and logical ops (bool results, no gradient)
# ========================================================================================


# computed in the promoted dtype, stored as bool


@binary(kernel="eq", scalar_kernel="eq_s", result="bool")
def eq():
    """input == other (a bool tensor)."""


@binary(kernel="ne", scalar_kernel="ne_s", result="bool", aliases=("not_equal",))
def ne():
    """input != other (a bool tensor)."""


@binary(kernel="lt", scalar_kernel="lt_s", result="bool", aliases=("less",))
def lt():
    """input < other (a bool tensor)."""


@binary(kernel="le", scalar_kernel="le_s", result="bool", aliases=("less_equal",))
def le():
    """input <= other (a bool tensor)."""


@binary(kernel="gt", scalar_kernel="gt_s", result="bool", aliases=("greater",))
def gt():
    """input > other (a bool tensor)."""


@binary(kernel="ge", scalar_kernel="ge_s", result="bool", aliases=("greater_equal",))
def ge():
    """input >= other (a bool tensor)."""


@binary(kernel="logical_and", result="bool")
def logical_and():
    """Both elements nonzero (a bool tensor)."""


@binary(kernel="logical_or", result="bool")
def logical_or():
    """Either element nonzero (a bool tensor)."""


@binary(kernel="logical_xor", result="bool")
def logical_xor():
    """Exactly one element nonzero (a bool tensor)."""


@declare()
def logical_not(input):
    return _wrap(EW.unary(EW.logical_not, input._data, np.bool_))


@declare()
def isnan(input):
    return _wrap(EW.unary(EW.isnan, input._data, np.bool_))


@declare()
def isfinite(input):
    return _wrap(EW.unary(EW.isfinite, input._data, np.bool_))


def _integer_check(kernel, bools=True):
    """PyTorch's refusal of a float result (bitwise ops; shifts refuse bools too)."""
    def check(a, b):
        dt = _dtype.result_type(a, b)
        if dt._kind == 2 or (dt._kind == 0 and not bools):
            raise _not_implemented(kernel, dt)
    return check


@binary(kernel="bitwise_and", scalar_kernel=WRAP, check=_integer_check("bitwise_and_cpu"),
        floats=False, variants=_IN_PLACE, number_first=lambda a, b, al: bitwise_and(b, a))
def bitwise_and():
    """Elementwise and of integer or bool tensors."""


@binary(kernel="bitwise_or", scalar_kernel=WRAP, check=_integer_check("bitwise_or_cpu"),
        floats=False, variants=_IN_PLACE, number_first=lambda a, b, al: bitwise_or(b, a))
def bitwise_or():
    """Elementwise or of integer or bool tensors."""


@binary(kernel="bitwise_xor", scalar_kernel=WRAP, check=_integer_check("bitwise_xor_cpu"),
        floats=False, variants=_IN_PLACE, number_first=lambda a, b, al: bitwise_xor(b, a))
def bitwise_xor():
    """Elementwise exclusive or of integer or bool tensors."""


def _bits(dt):
    """A shift kernel's p: the bit width of the dtype."""
    return np.dtype(dt.np).itemsize * 8


@binary(kernel="lshift", scalar_kernel=WRAP, check=_integer_check("lshift_cpu", False),
        floats=False, variants=_IN_PLACE, param=_bits, rnumber={"kernel": WRAP})
def bitwise_left_shift():
    """input << other (0 for a shift outside [0, bits))."""


@binary(kernel="rshift", scalar_kernel=WRAP, check=_integer_check("rshift_cpu", False),
        floats=False, variants=_IN_PLACE, param=_bits, rnumber={"kernel": WRAP})
def bitwise_right_shift():
    """input >> other (the sign for a shift outside [0, bits))."""


@declare()
def bitwise_not(input):
    _check_tensor(input, "bitwise_not")
    dt = dtype_of(input)
    if dt._kind == 2:
        raise _not_implemented("bitwise_not_cpu", dt)
    if dt is _dtype.bool_:
        return logical_not(input)
    return _wrap(_unary(EW.bitwise_not, input, dt))


def invert(input):
    """The ``~`` operator: bitwise_not, refused on float tensors."""
    if input._data.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(input)


# ========================================================================================
# where
# ========================================================================================


def _masked(kernel, c, g):
    """``g`` where the mask selects (mask_keep: c, mask_drop: !c), else 0; linear in g."""
    shape = broadcast_shapes(c._data.shape, g._data.shape)
    out = _wrap(EW.binary(kernel, c._data, g._data, g._data.dtype, shape))
    if state.enabled and g._requires_grad:
        node = MaskedBackward((NO_EDGE, edge(g)), (c, kernel))
        _record(out, node, (None, g), shape, dtype_of(g))
    return out


# d/dg mask(c, g) = mask(c, .): the same masking of the incoming gradient
MaskedBackward = make_node("MaskedBackward", ("condition", "self"), {
    "self": lambda grad, condition, kernel: _masked(kernel, condition, grad)},
    ("condition", "kernel"))

# d/da where(c, a, b) = c, d/db = !c
WhereBackward0 = make_node("WhereBackward0", ("self", "other"), {
    "self": lambda grad, condition: _masked(EW.mask_keep, condition, grad),
    "other": lambda grad, condition: _masked(EW.mask_drop, condition, grad)}, ("condition",))


def _where_method(self, condition, y):
    """``x.where(condition, y)``: ``where(condition, x, y)``."""
    return where(condition, self, y)


def _where_out_check(out, condition, input, other):  # noqa: A002
    """PyTorch's refusals of where's ``out=``: tensor operands, the result dtype."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        x, pos = (other, 3) if isinstance(input, Tensor) else (input, 2)
        _tensor_arg(x, "where", "other" if pos == 3 else "input", pos)
    dt, odt = _dtype.result_type(input, other), dtype_of(out)
    if dt is not odt:
        raise RuntimeError(f"Expected out type to be {dt._legacy} but got {odt._legacy}")


@ternary(node=WhereBackward0, kernel="where",
         saves=lambda ops, w: (ops[0],), out_check=_where_out_check,
         nodes=("WhereBackward0",), method=_where_method)
def where(condition, input, other):  # noqa: A002
    """Elements of ``input`` where ``condition`` else of ``other`` (``WhereBackward0``)."""
    if input is None and other is None:
        from numgrad.ops.indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if (input is None or other is None or input.__class__ not in _PLAIN_OPERANDS
            and _not_operand(input) or other.__class__ not in _PLAIN_OPERANDS
            and _not_operand(other)):
        got = ", ".join(type(v).__name__ for v in (condition, input, other))
        raise TypeError(f"where() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:")
    if not isinstance(condition, Tensor):
        condition = _as_t(condition)
    if condition._data.dtype != np.bool_:
        if condition._data.dtype != np.uint8:
            raise RuntimeError(
                f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                f"{condition.dtype._legacy}")
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=3)
    return [condition, input, other]


# declared ops (numgrad.ops.unary) that the rules above, and other modules as ew.<name>, call
from numgrad.ops.unary import abs  # noqa: E402,I001,A004,F401
from numgrad.ops.unary import (  # noqa: E402,I001,F401
    clamp_backward, log, neg, pow_backward, reciprocal, relu, rpow_backward, sign)
