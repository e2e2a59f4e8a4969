"""The promotion and Python-scalar layer of binary arithmetic.

As JAX keeps its primitives single-dtype and promotes in ``jnp``, an op declared here
(``add``, ``mul``, ``div``, ``pow``, ``remainder``, ``fmod``, ``hypot``, ``clamp_min``,
``bitwise_and``, ``lt``, ...) names kernels of one dtype (a tensor-tensor formula ``f(a, b,
p, q)`` and a tensor-number formula ``f(x, p, q)`` whose number arrives as ``p``, each with
an integer version where integers compute otherwise) and its derivatives, written with
numgrad ops, per form where PyTorch's overloads record different nodes (``pow``:
``PowBackward1`` tensor ** tensor, ``PowBackward0`` tensor ** number, ``PowBackward2``
number ** tensor); the function this module generates does what all of them share, in
PyTorch's way:

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

``ternary`` declares the three-operand ops (``where``, ``clamp``) over the same rules.
"""


import numpy as np

from numgrad import _arrays, _dtype, _hook
from numgrad._shape import broadcast_shapes
from numgrad.kernels._parallel import ELEMENTWISE, pick
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
    shared,
    state,
)
from numgrad.ops.registry import REGISTRY, OpDef, _reads, write_out

_ND = np.ndarray  # data of any other class is on the GPU
_NUMBER = (float, int)
# ops whose scalar kernel computes tensor (op) 0-dim tensor exactly: 2 where the 0-dim
# operand may be on either side (the op commutes)
_EXACT_SCALAR = {("add", "add_s"): 2, ("sub", "sub_s"): 1, ("mul", "mul_s"): 2,
                 ("div", "div_s"): 1}
WRAP = "wrap"  # scalar_kernel: a number operand runs through the tensor kernel as a 0-dim tensor


def _slot(name):
    """Where a saved name is found in (first operand, second operand, alpha, result): the op's
    own names (``exponent``, ``min``) are its second operand."""
    return {"self": 0, "alpha": 2, "result": 4}.get(name, 1)


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
        return _wrap(_arrays.constant(np.array(v, np.int64).astype(dt.np)))
    return _wrap(_arrays.constant(np.full((), v, dt.np)))


def _tensor_arg(x, fn, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def not_implemented(kernel, dt):
    """PyTorch's error for a kernel that has no version for dtype ``dt``."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dt._legacy}'")


def _saved_getters(od):
    """Indexed by (first input requires grad) + 2 (second requires grad): a function (a, b,
    alpha, result) -> the saved tuple, holding an input only where a needed gradient's formula
    reads it. ``od.inputs`` are the node's edges, in operand order."""
    readers = {n: {i for i, key in enumerate(od.inputs)
                   if key in od.grads and n in _reads(od.grads[key])} for n in od.saves}
    two = len(od.inputs) == 2

    def getter(need):
        slots = tuple(_slot(n) if _slot(n) in (2, 4) or readers[n] & need else 3
                      for n in od.saves)
        if slots == (2,):
            one = (1,)  # alpha 1: one shared tuple (nothing for the collector to track per op)
            return lambda a, b, al, r: one if al == 1 else (al,)
        if slots == (0, 1):
            return lambda a, b, al, r: (a, b)
        if slots == (3, 1):
            return lambda a, b, al, r: (None, b)
        if slots == (0, 3):
            return lambda a, b, al, r: (a, None)
        return lambda a, b, al, r: tuple((a, b, al, None, r)[i] for i in slots)
    if not two:  # one edge: that input's requires-grad is the only case
        g = getter({0})
        return (None, g, g, g)
    return (None, getter({0}), getter({1}), getter({0, 1}))


def _form(spec, op_name):
    """A second node of the op (its tensor (op) number or number (op) tensor form):
    ``{"node": name, "grad": {input: formula}, "saves": names}``; its one edge is the
    tensor operand."""
    od = OpDef(op_name, "arith", tuple(spec["grad"]), spec["grad"], spec["node"],
               saves=spec.get("saves"))
    if not set(od.saves) - {"alpha"}:
        od.node._meta_only = True
    return od


def binary(name=None, *, node=None, kernel, scalar_kernel=None, grad=None, result="same",
           alpha=0, number_first=None, check=None, rounding=None, saves=None, nodes=(),
           aliases=(), variants=("function", "method"), int_kernel=None,
           int_scalar_kernel=None, number=None, rnumber=None, scaled="add_scaled",
           scaled_scalar=None, param=None, floats=True, second="other", scalar_node=None):
    """Declare a binary arithmetic op (the decorated function gives its name and docstring).

    ``kernel``/``scalar_kernel``: kernels of ``numgrad.kernels.cpu.elementwise`` for tensor
    (op) tensor and tensor (op) number (None: tensors only, PyTorch's TypeError for a
    number; ``WRAP``: the number runs through ``kernel`` as a 0-dim tensor of the result
    dtype); ``int_kernel``/``int_scalar_kernel``: their versions for integer and bool results
    where those differ. ``grad``: derivative formulas over ``grad`` and the saved names
    ``self``, ``other`` (or the op's name for it: ``exponent``), ``alpha``, ``result``.
    ``result``: the dtype rule (module docstring). ``alpha``: 1 or -1 where the op takes
    ``alpha`` (``a + alpha b``, ``a - alpha b``: the kernel ``scaled`` with ``p = alpha *
    sign``, and a number operand scaled by it, or given to ``scaled_scalar`` as ``q``).

    The forms with a number: ``number``, the node of tensor (op) number when it is not the
    op's node (``{"node": "PowBackward0", "grad": {...}}``, one edge); ``rnumber``, number
    (op) tensor (its node as for ``number``; ``"kernel"``/``"int_kernel"``: scalar kernels
    ``f(x, p)`` with the tensor as ``x``, or ``WRAP``; ``"out"``: it takes ``out=``); else
    ``number_first(a, b, alpha)``, the op for a number left operand (``"refuse"``: PyTorch's
    TypeError; None: the number becomes a tensor). ``scalar_node``: ``op.scalar(tensor,
    number)`` records this node (one edge, the gradient passed through), as PyTorch's C++
    Scalar overload does inside its composites (``add``: ``AddBackward1`` in ``rms_norm``).

    ``check(a, b)``: PyTorch's refusals that depend on dtypes or values, run wherever an
    operand is not a float tensor (``b`` may be a number, ``a`` too in the ``rnumber``
    form); ``floats=False``: ``check`` refuses float results, so float tensors take no fast
    path around it (bitwise ops). ``param(dt)``: the kernels' ``p`` for result dtype ``dt``
    (a shift's bit width). ``rounding(a, b, mode)``: the op's ``rounding_mode=`` form.
    ``nodes``: further node classes the op records (its rounding form's). ``second``: the
    name of the second argument of ``numgrad.<op>`` and the method when it is not ``other``
    (``exponent``); the decorated name (``ops.elementwise.pow``, the operators) keeps the
    positional function."""
    def declare(fn):
        op_name = name or fn.__name__
        od = OpDef(op_name, "arith", ("self", "other"), grad or {}, node, variants=variants,
                   aliases=aliases, params=("alpha",) if alpha else (), saves=saves)
        node_cls = od.node
        numbers_only = node_cls is not None and not set(od.saves) - {"alpha"}
        if numbers_only:
            node_cls._meta_only = True  # it saves numbers only: runs again without retain_graph
        num_od = _form(number, op_name) if number and "node" in number else None
        rnum_od = _form(rnumber, op_name) if rnumber and "node" in rnumber else None
        extra = tuple(f.node.__name__ for f in (num_od, rnum_od) if f is not None)
        od.nodes = od.nodes + extra + tuple(n for n in nodes if n not in extra)
        saved_of = _saved_getters(od) if node_cls is not None else None
        num_cls = num_od.node if num_od else node_cls
        num_saved = _saved_getters(num_od)[1] if num_od else saved_of and saved_of[1]
        num_pair = (num_od is not None and len(num_od.saves) == 2
                    and num_od.saves[0] == "self" and _slot(num_od.saves[1]) == 1)
        rnum_cls = rnum_od.node if rnum_od else None
        rnum_saved = _saved_getters(rnum_od)[1] if rnum_od else None
        bool_out = np.bool_ if result == "bool" else None
        float_rule = result == "float"
        wrap = scalar_kernel == WRAP
        # the scalar kernel gives tensor (op) 0-dim tensor of one float dtype exactly
        exact_scalar = _EXACT_SCALAR.get((kernel, scalar_kernel), 0)  # 2: either side
        fk = "f" if floats else "-"  # the dtype kind of the fast paths (none without floats)
        # (kernel, scaled kernel, scalar kernel, integer kernel, integer scalar kernel, scaled
        # scalar kernel, number-first kernel, its integer form), resolved on first use
        kernels = []

        def get(k):
            return getattr(EW, k) if k and k != WRAP else None

        def resolve():
            k = getattr(EW, kernel)
            sk = get(scalar_kernel)
            rk = rnumber.get("kernel") if rnumber else None
            kernels[:] = [k, get(scaled) if alpha else None, sk, get(int_kernel) or k,
                          get(int_scalar_kernel) or sk, get(scaled_scalar), get(rk),
                          get(rnumber.get("int_kernel", rk)) if rnumber else None]
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
            dt = meta = None
            if (ad.dtype is bd.dtype and ad.shape == bd.shape and ad.dtype.kind == fk
                    and ad.__class__ is _ND and bd.__class__ is _ND and ad.flags.c_contiguous
                    and bd.flags.c_contiguous):
                r = _arrays.new(ad.shape, bool_out or ad.dtype)
                n = r.size
                if n:
                    pick(k.flat, k.flat_par, n, ELEMENTWISE)(
                        ad.ravel(), bd.ravel(), r.ravel(), p, 0.0)
            elif (exact_scalar and ad.dtype is bd.dtype and al == 1 and ad.dtype.kind == "f"
                  and ad.dtype.itemsize > 2 and ad.__class__ is _ND and bd.__class__ is _ND
                  and _hook.TAPE is None  # (the element is read on the host: not in a trace)
                  and (bd.size == 1 and bd.ndim <= ad.ndim and ad.flags.c_contiguous
                       or ad.size == 1 and ad.ndim <= bd.ndim and exact_scalar == 2
                       and bd.flags.c_contiguous)):
                # a tensor and a one-element tensor of its dtype that broadcasts to its shape
                # (either side of add and mul): the scalar kernel with that element,
                # bit-identical (+ - * / of two float32 computed in float64 and rounded once
                # are the float32 result)
                x, v = (ad, bd) if bd.size == 1 and bd.ndim <= ad.ndim else (bd, ad)
                r = _arrays.new(x.shape, x.dtype)
                n = r.size
                if n:
                    sk = kernels[2]
                    pick(sk.flat, sk.flat_par, n, ELEMENTWISE)(
                        x.ravel(), r.ravel(), v.item(), 0.0)
                if v is bd:
                    if b._requires_grad:
                        meta = shared((None, (bd.shape, dtype_of(b))))
                elif a._requires_grad:
                    meta = shared(((ad.shape, dtype_of(a)), None))
            else:
                if check is not None:
                    check(a, b)
                dt = dtype_for(a, b)
                if dt._kind != 2 and al == 1:
                    k = kernels[3]
                if param is not None:
                    p = param(dt)
                shape = broadcast_shapes(ad.shape, bd.shape)
                r = EW.binary(k, as_type(a, dt), as_type(b, dt), bool_out or dt.np, shape, p)
            res = _wrap(r)
            if node_cls is not None and state.enabled:
                ra, rb = a._requires_grad, b._requires_grad
                if ra or rb:
                    node = node_cls((edge(a), edge(b)), saved_of[ra + 2 * rb](a, b, al, r))
                    if meta is not None:
                        node._meta = meta
                    elif dt is not None:
                        ma, mb = meta_for(a, r.shape, dt), meta_for(b, r.shape, dt)
                        if ma is not None or mb is not None:
                            node._meta = shared((ma, mb))
                    if numbers_only:  # attach's work for a node that saves no tensor
                        res._grad_fn = node
                        res._requires_grad = True
                    else:
                        attach(res, node)
            return res

        def with_number(a, s, al):
            """Tensor (op) number: the number is the scalar kernel's parameter."""
            if s.__class__ is int and not -2**63 <= s < 2**64:
                _dtype.check_int(s)  # PyTorch's OverflowError, whatever the tensor's dtype
            sk = (kernels or resolve())[2]
            xd = a._data
            dt = None
            if (al == 1 and sk is not None and xd.dtype.kind == "f" and s.__class__ in _NUMBER
                    and xd.__class__ is _ND and xd.flags.c_contiguous):
                r = _arrays.new(xd.shape, bool_out or xd.dtype)
                n = r.size
                if n:
                    pick(sk.flat, sk.flat_par, n, ELEMENTWISE)(
                        xd.ravel(), r.ravel(), float(s), 0.0)
            else:
                if sk is None and not wrap:
                    _tensor_arg(s, op_name, "other", 2)
                v = s * al if alpha and scaled_scalar is None else s
                if check is not None:
                    check(a, s)
                dt = dtype_for(a, s)
                out_dt = bool_out or dt.np
                if wrap:
                    k = kernels[0] if dt._kind == 2 else kernels[3]
                    r = EW.binary(k, as_type(a, dt), scalar_tensor(v, dt)._data, out_dt,
                                  xd.shape, param(dt) if param is not None else 0.0)
                elif al != 1 and scaled_scalar is not None:
                    r = EW.unary(kernels[5], as_type(a, dt), out_dt, scalar_value(v, dt),
                                 scalar_value(al, dt))
                else:
                    k = sk if dt._kind == 2 else kernels[4]
                    r = EW.unary(k, as_type(a, dt), out_dt, scalar_value(v, dt))
            res = _wrap(r)
            if num_cls is not None and state.enabled and a._requires_grad:
                if num_pair:  # (self, the number): the common case, no getter call
                    node = num_cls((edge(a),), (a, s))
                    if dt is not None and xd.dtype != dt.np:
                        node._meta = ((xd.shape, dtype_of(a)),)
                elif num_od is None:
                    node = num_cls((edge(a), NO_EDGE), num_saved(a, s, al, r))
                    if dt is not None and xd.dtype != dt.np:
                        node._meta = ((xd.shape, dtype_of(a)), None)
                else:
                    node = num_cls((edge(a),), num_saved(a, s, al, r))
                    if dt is not None and xd.dtype != dt.np:
                        node._meta = ((xd.shape, dtype_of(a)),)
                attach(res, node)
            return res

        def number_tensor(s, b, al):
            """Number (op) tensor, the ``rnumber`` form."""
            ks = kernels or resolve()
            if check is not None:
                check(s, b)
            dt = dtype_for(s, b)
            xd = b._data
            out_dt = bool_out or dt.np
            if ks[6] is None:  # WRAP
                k = ks[0] if dt._kind == 2 else ks[3]
                r = EW.binary(k, scalar_tensor(s, dt)._data, as_type(b, dt), out_dt,
                              xd.shape, param(dt) if param is not None else 0.0)
            else:
                r = EW.unary(ks[6] if dt._kind == 2 else ks[7], as_type(b, dt), out_dt,
                             scalar_value(s, dt))
            res = _wrap(r)
            if rnum_cls is not None and state.enabled and b._requires_grad:
                node = rnum_cls((edge(b),), rnum_saved(s, b, al, r))
                if xd.dtype != dt.np:
                    node._meta = ((xd.shape, dtype_of(b)),)
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
                if not isinstance(b, Tensor) or number_first == "refuse":
                    if number_first == "refuse" and is_scalar(a) or isinstance(a, Tensor):
                        kw = "" if al == 1 else f", alpha={type(al).__name__}"
                        raise TypeError(
                            f"{op_name}() received an invalid combination of arguments - got "
                            f"({type(a).__name__}, {type(b).__name__}{kw}), but expected one "
                            "of:")
                    _tensor_arg(a, op_name, "input", 1)
                if rnumber is not None and is_scalar(a):
                    return number_tensor(a, b, al)
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
                if not isinstance(input, Tensor) and number_first == "refuse":
                    run(input, other, alpha)  # PyTorch's TypeError
                return write_out(op, out, input, other, alpha=alpha)
        elif rounding is not None:
            def op(input, other, *, rounding_mode=None, out=None):
                if out is not None:
                    return write_out(op, out, input, other, rounding_mode=rounding_mode)
                if rounding_mode is not None:
                    return rounding(input, coerce(other, op_name), rounding_mode)
                return run(input, other, 1)
        elif scalar_kernel is not None and not wrap:
            def op(input, other, *, out=None):
                if out is None:
                    if input.__class__ is Tensor:
                        if other.__class__ is Tensor:
                            return tensors(input, other, 1)
                        if other.__class__ in _NUMBER:
                            return with_number(input, other, 1)
                    return run(input, other, 1)
                return _out(op, out, input, other)
        else:
            def op(input, other, *, out=None):
                if out is None:
                    if input.__class__ is Tensor and other.__class__ is Tensor:
                        return tensors(input, other, 1)
                    return run(input, other, 1)
                return _out(op, out, input, other)

        def _out(op, out, input, other):
            if scalar_kernel is None:
                _tensor_arg(input, op_name, "input", 1)
            if not isinstance(input, Tensor) and not (rnumber or {}).get("out"):
                raise TypeError(f"{op_name}() received an invalid combination of arguments - got "
                                f"({type(input).__name__}, {type(other).__name__}, out=Tensor), "
                                "but expected one of:")
            if isinstance(out, Tensor) and (isinstance(other, Tensor) or is_scalar(other)):
                dt, od_ = (bool_out and _dtype.bool_) or dtype_for(input, other), dtype_of(out)
                if dt._kind > od_._kind:  # refused before the op runs, as PyTorch's
                    raise RuntimeError(f"result type {dt._legacy} can't be cast to the desired "
                                       f"output type {od_._legacy}")
            return write_out(op, out, input, other)

        if scalar_node is not None:
            # d/dx (x op s) = 1 (the ops that take it: add, sub)
            sc_od = _form({"node": scalar_node, "grad": {"self": lambda grad: grad}}, op_name)
            od.nodes = od.nodes + (scalar_node,)

            def scalar(a, s):
                """``a (op) s`` for a number ``s``, recorded as PyTorch's Scalar overload."""
                ks = kernels or resolve()
                dt = dtype_for(a, s)
                r = _wrap(EW.unary(ks[2] if dt._kind == 2 else ks[4], as_type(a, dt), dt.np,
                                   scalar_value(s, dt)))
                if state.enabled and a._requires_grad:
                    node = sc_od.node((edge(a),), ())
                    if a._data.dtype != dt.np:
                        node._meta = ((a._data.shape, dtype_of(a)),)
                    attach(r, node)
                return r
            op.scalar = scalar
        op.__name__ = op.__qualname__ = op_name
        op.__doc__ = fn.__doc__
        op.__module__ = fn.__module__
        op.opdef = od
        # what op(a, b) runs for two plain tensors and for a tensor and a Python number (the
        # Tensor operators call them directly)
        op.tensors = tensors
        op.with_number = with_number if scalar_kernel is not None else None
        od.fn = op if second == "other" else _renamed(op, second)
        if "inplace" in od.variants:
            od.inplace_fn = _inplace_form(op, op_name, kernels, resolve, alpha, check,
                                          float_rule, wrap, param, fk)
        REGISTRY[op_name] = od
        return op
    return declare


def _renamed(op, second):
    """``op`` whose second argument is called ``second`` (``pow(input, exponent)``)."""
    ns = {"op": op}
    exec(f"def {op.__name__}(input, {second}, *, out=None):\n"  # noqa: S102
         f"    return op(input, {second}, out=out)", ns)
    fn = ns[op.__name__]
    fn.__doc__, fn.__module__, fn.opdef = op.__doc__, op.__module__, op.opdef
    return fn


_APPLY = []  # numgrad.ops.inplace.apply_ (imported on first use: that module imports the ops)


def _inplace_form(op, op_name, kernels, resolve, alpha, check, float_only, wrap, param, fk):
    """``x.name_(other)``: the op written into ``x`` (``apply_``: PyTorch's in-place checks,
    the node and version bump when a graph is recorded); with no graph to record the kernel
    writes straight into ``x`` in ``x``'s dtype, as optimizers update weights."""
    def raw(t, other, al=1):
        k, _, sk = (kernels or resolve())[:3]
        p = 0.0
        if al != 1:
            k, p = kernels[1], al * alpha
        a = t._data
        if isinstance(other, Tensor):
            b = other._data
            if (a.__class__ is _ND and b.__class__ is _ND and a.dtype is b.dtype
                    and a.dtype.kind == fk and a.shape == b.shape and a.flags.c_contiguous
                    and b.flags.c_contiguous):
                n = a.size
                if n:
                    pick(k.flat, k.flat_par, n, ELEMENTWISE)(
                        a.ravel(), b.ravel(), a.ravel(), p, 0.0)
                return
        if not isinstance(other, Tensor) and sk is None and not wrap:
            _tensor_arg(other, op_name + "_", "other", 1)
        if isinstance(other, Tensor):  # PyTorch's order: the shape, the cast, the op's check
            shape = broadcast_shapes(a.shape, b.shape)
            if shape != a.shape:
                raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the "
                                   f"broadcast shape {list(shape)}")
        _check_cast(t, other)
        if check is not None:
            check(t, other)
        if _dtype.result_type(t, other).np != a.dtype:
            # computed in the promoted dtype, then cast into t (uint8 % int32 is not uint8 %)
            r = op(_wrap(a), other) if al == 1 else op(_wrap(a), other, alpha=al)
            EW.unary(EW.copy, r._data, a.dtype, out=a)
            return
        if a.dtype.kind != "f":
            sk = kernels[4]
            if al == 1:  # the scaled kernel (alpha) serves every dtype
                k = kernels[3]
        if param is not None:
            p = param(dtype_of(t))
        if isinstance(other, Tensor):
            EW.binary(k, a, _arrays.astype(b, a.dtype), a.dtype, a.shape, p, out=a)
        elif wrap:
            EW.binary(k, a, scalar_tensor(other, dtype_of(t))._data, a.dtype, a.shape, p, out=a)
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
                and a.dtype.kind == fk and a.shape == b.shape and a.flags.c_contiguous
                and b.flags.c_contiguous and not t._requires_grad
                and not other._requires_grad and t._base is None
                and (vc is None or vc.__class__ is dict)):
            k = (kernels or resolve())[0]
            n = a.size
            if n:
                pick(k.flat, k.flat_par, n, ELEMENTWISE)(
                    a.ravel(), b.ravel(), a.ravel(), 0.0, 0.0)
            if vc is None:
                t._vc = {0: 1}
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


def ternary(*, node, kernel, saves, promoted=(1, 2), fill=None, check=None, number=None,
            out_check=None, nodes=(), aliases=(), variants=("function", "method"),
            method=None):
    """Declare a three-operand elementwise op (``where``, ``clamp``); the decorated function
    checks its arguments as PyTorch does and returns the three operands (a list), or the op's result
    when a form of its own answers (``where(c)``: ``nonzero``).

    The generated function promotes as the binary ops do: the result dtype is PyTorch's
    ``result_type`` over the ``promoted`` positions (None left out); those operands are cast
    to it, a number becomes a 0-dim tensor of it and None ``fill(dt, position)``; the other
    position passes as it is (``where``'s condition). ``check(dt, x0, x1, x2)``: refusals
    that depend on the result dtype. One launch of ``kernel`` (``f(a, b, c)`` of
    ``numgrad.kernels.cpu.elementwise``) on the operands broadcast together; ``node`` gets an
    edge per promoted position (none for a number or None), ``saves(operands, wrapped)``, and
    per tensor input the (shape, dtype) the engine sums and casts its gradient back to.
    ``number(x0, x1, x2)``: the op's all-number form when no promoted operand but the first
    is a tensor (None: the tensor form runs). ``out_check(out, x0, x1, x2)``: PyTorch's
    refusals of an ``out=`` before the op runs (``write_out`` then writes it)."""
    def declare_(fn):
        op_name = fn.__name__
        kernels = []
        pos = tuple(promoted)
        if pos not in ((0, 1, 2), (1, 2)):
            raise ValueError("promoted: (0, 1, 2) or (1, 2)")

        lead = pos == (0, 1, 2)  # else (1, 2): the first operand passes as it is

        def wrap_(v, dt, i):
            if v.__class__ is Tensor or isinstance(v, Tensor):
                return v
            return scalar_tensor(v if v is not None else fill(dt, i), dt)

        def record(res, ops, w, shape, dt):
            """The node: an edge and a (shape, dtype) per promoted tensor operand."""
            tin = [v if isinstance(v, Tensor) else None for v in (ops if lead else ops[1:])]
            n = node(tuple([NO_EDGE if t is None else edge(t) for t in tin]), saves(ops, w))
            attach(res, n)
            metas = tuple([None if t is None else meta_for(t, shape, dt) for t in tin])
            if metas.count(None) != len(metas):
                n._meta = metas

        def tensor_form(ops):
            x0, x1, x2 = ops
            if lead:
                dt = _dtype.result_type(*[v for v in ops if v is not None])
                if check is not None:
                    check(dt, x0, x1, x2)
                w0 = x0 if x0.__class__ is Tensor else wrap_(x0, dt, 0)
                d0 = as_type(w0, dt)
            else:
                dt = _dtype.result_type(x1, x2)
                if check is not None:
                    check(dt, x0, x1, x2)
                w0 = x0
                d0 = x0._data
            w1 = x1 if x1.__class__ is Tensor else wrap_(x1, dt, 1)
            w2 = x2 if x2.__class__ is Tensor else wrap_(x2, dt, 2)
            d1, d2 = w1._data, w2._data
            shape = broadcast_shapes(broadcast_shapes(d0.shape, d1.shape), d2.shape)
            k = kernels[0] if kernels else kernels.append(getattr(EW, kernel)) or kernels[0]
            res = _wrap(EW.ternary(k, d0, as_type(w1, dt), as_type(w2, dt), dt.np, shape))
            if state.enabled and (getattr(x1, "_requires_grad", False)
                                  or getattr(x2, "_requires_grad", False)
                                  or lead and x0._requires_grad):
                record(res, ops, (w0, w1, w2), shape, dt)
            return res

        def call_out(x0, x1, x2, out):
            if out_check is not None:
                out_check(out, x0, x1, x2)
            return write_out(op, out, x0, x1, x2)

        a0, a1, a2 = fn.__code__.co_varnames[:3]  # the op's own argument names
        ns = {"fn": fn, "call_out": call_out, "form": tensor_form, "number": number,
              "Tensor": Tensor}
        numbers = ("    if not (isinstance(ops[1], Tensor) or isinstance(ops[2], Tensor)):\n"
                   "        return number(*ops)\n") if number is not None else ""
        exec(f"def {op_name}({a0}, {a1}=None, {a2}=None, *, out=None):\n"  # noqa: S102
             f"    if out is not None:\n"
             f"        return call_out({a0}, {a1}, {a2}, out)\n"
             f"    ops = fn({a0}, {a1}, {a2})\n"
             f"    if ops.__class__ is not list:\n"
             f"        return ops\n{numbers}"
             f"    return form(ops)\n", ns)
        op = ns[op_name]
        from numgrad.ops.registry import declare
        op.__doc__, op.__module__ = fn.__doc__, fn.__module__
        op.tensor_form = tensor_form
        return declare(op_name, nodes=nodes, aliases=aliases, variants=variants,
                       method=method)(op)
    return declare_
