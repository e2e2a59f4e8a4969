"""The promotion and Python-scalar layer of binary arithmetic.

As JAX keeps its primitives single-dtype and promotes in ``jnp``, an op declared here
(``add``, ``mul``, ``div``, ``maximum``, ``lt``, ...) names kernels of one dtype (a
tensor-tensor formula ``f(a, b, p, q)`` and a tensor-number formula ``f(x, p, q)`` whose
number arrives as ``p``) and its derivatives, written with numgrad ops; the function this
module generates does what all of them share, in PyTorch's way:

* ``out=`` (the registry's ``write_out``) and ``alpha`` (a number; a float only for float
  results, a bool only for bool ones);
* the operands: a NumPy array or a list becomes a tensor, anything else is PyTorch's
  TypeError; a number on the left goes to the op's ``number_first`` rule (``2 - x`` is
  ``rsub``);
* the result dtype: PyTorch's ``result_type`` over three tiers (tensors with dimensions,
  0-dim tensors, Python numbers; a lower tier wins only with a higher category, bool < int <
  float), then the op's rule: ``"same"``, ``"float"`` (integers divide in the default float
  dtype) or ``"bool"`` (computed in the promoted dtype, stored as bool);
* one kernel launch: the flat loop when both operands already are same-shape C-contiguous
  floats of one dtype (the hot path: no promotion, no cast, no broadcast), else the
  broadcasting loop on the operands cast to the result dtype;
* the node: edges, what it saves (an input only when a gradient that reads it is needed;
  numbers such as ``alpha`` always), and per input the (shape, dtype) the engine sums and
  casts that input's gradient back to, so no derivative formula handles broadcasting.
"""


import numpy as np

from numgrad import _arrays, _dtype
from numgrad._compile import tape as _tape
from numgrad._shape import broadcast_shapes
from numgrad.ops._util import (
    EW,
    NO_EDGE,
    Tensor,
    _wrap,
    as_type,
    attach,
    dtype_of,
    edge,
    float_type,
    is_scalar,
    meta_for,
    scalar_value,
    state,
)
from numgrad.ops.registry import REGISTRY, OpDef, _reads, write_out

_ND = np.ndarray  # data of any other class is on the GPU
_NUMBER = (float, int)
_SLOTS = {"self": 0, "other": 1, "alpha": 2}  # where a saved name is found in (a, b, alpha)


def coerce(other, opname):
    """The right operand as a tensor or a number (PyTorch's TypeError for anything else)."""
    if other.__class__ is int and not -2**63 <= other < 2**64:
        _dtype.check_int(other)
    if isinstance(other, Tensor) or is_scalar(other):
        return other
    if isinstance(other, (np.ndarray, list, tuple)):
        return as_tensor(other)
    raise TypeError(f"{opname}(): argument 'other' (position 2) must be Tensor, not "
                    f"{type(other).__name__}")


def as_tensor(v):
    from numgrad._factories import tensor
    return tensor(v)


def check_alpha(alpha, input, other, fname):
    """A non-int ``alpha`` checked as PyTorch checks it (a number; a float only for float
    results, a bool only for bool results)."""
    if isinstance(alpha, Tensor):
        alpha = alpha.item()
    if not is_scalar(alpha):
        raise TypeError(f"{fname}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    dt = _dtype.result_type(input, other)
    if isinstance(alpha, (bool, np.bool_)):
        if dt is not _dtype.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, (float, np.floating)) and dt._kind != 2:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return alpha


def scalar_tensor(v, dt):
    """Number ``v`` as a 0-dim tensor of ``dt``; an integer wraps into the dtype's range, as
    PyTorch casts it (-3 as uint8 is 253)."""
    v = scalar_value(v, dt)
    if dt._kind == 1:
        return _wrap(_tape.constant(np.array(v, np.int64).astype(dt.np)))
    return _wrap(_tape.constant(np.full((), v, dt.np)))


def _tensor_arg(x, fn, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _saved_getters(od):
    """Indexed by (self requires grad) + 2 (other requires grad): a function (a, b, alpha) ->
    the saved tuple, holding an input only where a needed gradient's formula reads it."""
    readers = {n: {i for i, key in enumerate(od.inputs)
                   if key in od.grads and n in _reads(od.grads[key])} for n in od.saves}

    def getter(need):
        slots = tuple(_SLOTS[n] if n == "alpha" or readers[n] & need else 3 for n in od.saves)
        if slots == (2,):
            one = (1,)  # alpha 1: one shared tuple (nothing for the collector to track per op)
            return lambda a, b, al: one if al == 1 else (al,)
        if slots == (0, 1):
            return lambda a, b, al: (a, b)
        if slots == (3, 1):
            return lambda a, b, al: (None, b)
        if slots == (0, 3):
            return lambda a, b, al: (a, None)
        return lambda a, b, al: tuple((a, b, al, None)[i] for i in slots)
    return (None, getter({0}), getter({1}), getter({0, 1}))


def binary(name=None, *, node=None, kernel, scalar_kernel=None, grad=None, result="same",
           alpha=0, number_first=None, check=None, rounding=None, saves=None, nodes=(),
           aliases=(), variants=("function", "method")):
    """Declare a binary arithmetic op (the decorated function gives its name and docstring).

    ``kernel``/``scalar_kernel``: kernels of ``numgrad.kernels.cpu.elementwise`` for tensor
    (op) tensor and tensor (op) number (None: tensors only, PyTorch's TypeError for a
    number). ``grad``: derivative formulas over ``grad`` and the saved names ``self``,
    ``other``, ``alpha``. ``result``: the dtype rule (module docstring). ``alpha``: 1 or -1
    where the op takes ``alpha`` (``a + alpha b``, ``a - alpha b``: the kernel ``add_scaled``
    with ``p = alpha * sign``, and a number operand scaled by it). ``number_first(a, b,
    alpha)``: the op for a number left operand (else it becomes a tensor). ``check(a, b)``:
    PyTorch's refusals that depend on dtypes, run wherever an operand is not a float tensor.
    ``rounding(a, b, mode)``: the op's ``rounding_mode=`` form. ``nodes``: further node
    classes the op records (its rounding form's)."""
    def declare(fn):
        op_name = name or fn.__name__
        od = OpDef(op_name, "arith", ("self", "other"), grad or {}, node, variants=variants,
                   aliases=aliases, params=("alpha",) if alpha else (), saves=saves)
        node_cls = od.node
        if node_cls is not None and not set(od.saves) - {"alpha"}:
            node_cls._meta_only = True  # it saves numbers only: runs again without retain_graph
        od.nodes = od.nodes + tuple(nodes)
        saved_of = _saved_getters(od) if node_cls is not None else None
        bool_out = np.bool_ if result == "bool" else None
        float_rule = result == "float"
        kernels = []  # (kernel, scaled kernel, scalar kernel), resolved on first use

        def resolve():
            kernels[:] = [getattr(EW, kernel), EW.add_scaled if alpha else None,
                          getattr(EW, scalar_kernel) if scalar_kernel else None]
            return kernels

        def dtype_for(a, b):
            dt = _dtype.result_type(a, b)
            return float_type(dt) if float_rule else dt

        def tensors(a, b, al):
            """Tensor (op) tensor."""
            k = (kernels or resolve())[0]
            p = 0.0
            if al != 1:
                k, p = kernels[1], al * alpha
            ad, bd = a._data, b._data
            dt = None
            if (ad.dtype is bd.dtype and ad.shape == bd.shape and ad.dtype.kind == "f"
                    and ad.__class__ is _ND and bd.__class__ is _ND and ad.flags.c_contiguous
                    and bd.flags.c_contiguous):
                r = _arrays.new(ad.shape, bool_out or ad.dtype)
                n = r.size
                if n:
                    (k.flat if n < EW.PARALLEL_MIN else k.flat_par)(
                        ad.ravel(), bd.ravel(), r.ravel(), p, 0.0)
            else:
                if check is not None:
                    check(a, b)
                dt = dtype_for(a, b)
                shape = broadcast_shapes(ad.shape, bd.shape)
                r = EW.binary(k, as_type(a, dt), as_type(b, dt), bool_out or dt.np, shape, p)
            res = _wrap(r)
            if node_cls is not None and state.enabled:
                ra, rb = a._requires_grad, b._requires_grad
                if ra or rb:
                    node = node_cls((edge(a), edge(b)), saved_of[ra + 2 * rb](a, b, al))
                    if dt is not None:
                        ma, mb = meta_for(a, r.shape, dt), meta_for(b, r.shape, dt)
                        if ma is not None or mb is not None:
                            node._meta = (ma, mb)
                    attach(res, node)
            return res

        def with_number(a, s, al):
            """Tensor (op) number: the number is the scalar kernel's parameter."""
            sk = (kernels or resolve())[2]
            if sk is None:
                _tensor_arg(s, op_name, "other", 2)
            if check is not None:
                check(a, s)
            v = s * al if alpha else s
            xd = a._data
            dt = None
            if (xd.dtype.kind == "f" and s.__class__ in _NUMBER and xd.__class__ is _ND
                    and xd.flags.c_contiguous):
                r = _arrays.new(xd.shape, bool_out or xd.dtype)
                n = r.size
                if n:
                    (sk.flat if n < EW.PARALLEL_MIN else sk.flat_par)(
                        xd.ravel(), r.ravel(), float(v), 0.0)
            else:
                dt = dtype_for(a, s)
                r = EW.unary(sk, as_type(a, dt), bool_out or dt.np, scalar_value(v, dt))
            res = _wrap(r)
            if node_cls is not None and state.enabled and a._requires_grad:
                node = node_cls((edge(a), NO_EDGE), saved_of[1](a, s, al))
                if dt is not None and xd.dtype != dt.np:
                    node._meta = ((xd.shape, dtype_of(a)), None)
                attach(res, node)
            return res

        def run(a, b, al):
            if scalar_kernel is None and (a.__class__ is not Tensor or b.__class__ is not Tensor):
                _tensor_arg(a, op_name, "input", 1)
                _tensor_arg(b, op_name, "other", 2)
            if b.__class__ is not Tensor:
                b = coerce(b, op_name)
            if al.__class__ is not int:
                al = check_alpha(al, a, b, op_name)
            if a.__class__ is not Tensor and not isinstance(a, Tensor):
                if not isinstance(b, Tensor):
                    _tensor_arg(a, op_name, "input", 1)
                if number_first is not None:
                    return number_first(a, b, al)
                a = as_tensor(a)
            if b.__class__ is Tensor or isinstance(b, Tensor):
                return tensors(a, b, al)
            return with_number(a, b, al)

        if alpha:
            def op(input, other, *, alpha=1, out=None):
                if out is None:
                    if (alpha.__class__ is int and input.__class__ is Tensor
                            and other.__class__ is Tensor):
                        return tensors(input, other, alpha)
                    return run(input, other, alpha)
                return write_out(op, out, input, other, alpha=alpha)
        elif rounding is not None:
            def op(input, other, *, rounding_mode=None, out=None):
                if out is not None:
                    return write_out(op, out, input, other, rounding_mode=rounding_mode)
                if rounding_mode is not None:
                    return rounding(input, coerce(other, op_name), rounding_mode)
                return run(input, other, 1)
        else:
            def op(input, other, *, out=None):
                if out is None:
                    if input.__class__ is Tensor and other.__class__ is Tensor:
                        return tensors(input, other, 1)
                    return run(input, other, 1)
                return write_out(op, out, input, other)

        op.__name__ = op.__qualname__ = op_name
        op.__doc__ = fn.__doc__
        op.__module__ = fn.__module__
        op.opdef = od
        od.fn = op
        if "inplace" in od.variants:
            od.inplace_fn = _inplace_form(op, op_name, kernels, resolve, alpha, check,
                                          float_rule)
        REGISTRY[op_name] = od
        return op
    return declare


_APPLY = []  # numgrad.ops.inplace.apply_ (imported on first use: that module imports the ops)


def _inplace_form(op, op_name, kernels, resolve, alpha, check, float_only):
    """``x.name_(other)``: the op written into ``x`` (``apply_``: PyTorch's in-place checks,
    the node and version bump when a graph is recorded); with no graph to record the kernel
    writes straight into ``x`` in ``x``'s dtype, as optimizers update weights."""
    def raw(t, other, al=1):
        k, _, sk = kernels or resolve()
        p = 0.0
        if al != 1:
            k, p = kernels[1], al * alpha
        a = t._data
        if isinstance(other, Tensor):
            b = other._data
            if (a.__class__ is _ND and b.__class__ is _ND and a.dtype is b.dtype
                    and a.dtype.kind == "f" and a.shape == b.shape and a.flags.c_contiguous
                    and b.flags.c_contiguous):
                n = a.size
                if n:
                    (k.flat if n < EW.PARALLEL_MIN else k.flat_par)(
                        a.ravel(), b.ravel(), a.ravel(), p, 0.0)
                return
        _check_cast(t, other)
        if isinstance(other, Tensor):
            shape = broadcast_shapes(a.shape, b.shape)
            if shape != a.shape:
                raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the "
                                   f"broadcast shape {list(shape)}")
            EW.binary(k, a, _arrays.astype(b, a.dtype), a.dtype, a.shape, p, out=a)
        else:
            v = other * al if alpha else other
            EW.unary(sk, a, a.dtype, float(v) if a.dtype.kind == "f" else int(v), out=a)

    def apply_(*args, **kwargs):
        if not _APPLY:
            from numgrad.ops.inplace import apply_
            _APPLY.append(apply_)
        return _APPLY[0](*args, **kwargs)

    def direct(t, other):
        """Write a same-shape float tensor into plain ``t`` when neither takes part in a
        graph (what apply_'s checks would allow), else None."""
        a, b = t._data, other._data
        vc = t._vc
        if (a.__class__ is _ND and b.__class__ is _ND and a.dtype is b.dtype
                and a.dtype.kind == "f" and a.shape == b.shape and a.flags.c_contiguous
                and b.flags.c_contiguous and not t._requires_grad
                and not other._requires_grad and t._base is None
                and (vc is None or vc.__class__ is list)):
            k = (kernels or resolve())[0]
            n = a.size
            if n:
                (k.flat if n < EW.PARALLEL_MIN else k.flat_par)(
                    a.ravel(), b.ravel(), a.ravel(), 0.0, 0.0)
            if vc is None:
                t._vc = [1]
            else:
                vc[0] += 1
            return t
        return None

    if alpha:
        def op_(self, other, *, alpha=1):
            if check is not None:
                check(self, other)
            if alpha.__class__ is not int:
                alpha = check_alpha(alpha, self, other, op_name + "_")
            if alpha == 1:
                if self.__class__ is Tensor and other.__class__ is Tensor:
                    done = direct(self, other)
                    if done is not None:
                        return done
                return apply_(self, op, other, raw=raw)
            return apply_(self, lambda x, y: op(x, y, alpha=alpha), other,
                          raw=lambda t, o: raw(t, o, alpha))
    elif float_only:
        def op_(self, other, *, rounding_mode=None):
            if rounding_mode is not None:
                return apply_(self, lambda x, y: op(x, y, rounding_mode=rounding_mode), other)
            if self._data.dtype.kind != "f":
                raise RuntimeError("result type Float can't be cast to the desired output type "
                                   f"{dtype_of(self)._legacy}")
            if self.__class__ is Tensor and other.__class__ is Tensor:
                done = direct(self, other)
                if done is not None:
                    return done
            return apply_(self, op, other, raw=raw)
    else:
        def op_(self, other):
            if self.__class__ is Tensor and other.__class__ is Tensor:
                done = direct(self, other)
                if done is not None:
                    return done
            return apply_(self, op, other, raw=raw)
    op_.__name__ = op_.__qualname__ = op_name + "_"
    op_.__doc__ = f"In-place {op_name}."
    return op_


def _check_cast(t, other):
    """PyTorch's refusal to write a result of a higher category into ``t`` (float into int)."""
    td = dtype_of(t)
    rd = _dtype.result_type(t, other)
    if rd._kind > td._kind:
        raise RuntimeError(f"result type {rd._legacy} can't be cast to the desired output type "
                           f"{td._legacy}")
