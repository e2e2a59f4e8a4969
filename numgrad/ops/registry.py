"""The op registry: each op is declared once, and its function, graph node, Tensor methods,
in-place variant, ``out=`` variant and ``numgrad`` namespace entry are generated from that
declaration.

A declaration holds:

* PyTorch's names: the op (``tanh``), its aliases, and its node (``TanhBackward0``);
* the forward: a scalar formula ``f(x, p, q)`` / ``f(a, b, p, q)`` that the elementwise loop
  templates of ``numgrad.kernels`` compile for the CPU (``@njit``) and for CUDA (device
  functions), or, for other ops, a function that launches kernels and returns arrays;
* the derivative of the output with respect to each differentiable input, written with
  numgrad ops over ``grad``: ``{"self": lambda grad, result: ...}``. The names after ``grad``
  say what the node saves (``self`` and ``other`` are inputs, ``result`` is the output, any
  other name is a value the forward returns); since the formulas are numgrad ops, double
  backward needs no extra class;
* the result dtype rule (``"float"``: integers compute in the default float dtype; ``"same"``),
  the argument checks, and the variants: function, method, in-place (``tanh_``), ``out=``.

``REGISTRY`` maps names to declarations; the tests read it (an op without a parity case fails
the suite) and so can a graph compiler.
"""

import functools
import hashlib
import inspect
import marshal
import warnings

import numpy as np

from numgrad import _arrays
from numgrad._shape import broadcast_shapes
from numgrad.autograd.grad_mode import no_grad
from numgrad.autograd.graph import Node
from numgrad.kernels._parallel import ELEMENTWISE, pick
from numgrad.ops._util import (
    EW,
    Tensor,
    _wrap,
    as_type,
    attach,
    dtype_of,
    edge,
    float_type,
    meta_for,
    shared,
    state,
    wrap_out,
)

REGISTRY = {}  # name -> OpDef, in declaration order
_ND = np.ndarray  # data of any other class is on the GPU
INPUT_NAMES = ("self", "other", "third")


class OpDef:
    """One declared op (see the module docstring); ``fn`` is the generated function."""

    __slots__ = ("name", "node", "inputs", "params", "saves", "grads", "formula", "kind",
                 "dtype", "check", "variants", "aliases", "fn", "method", "inplace_fn",
                 "nodes", "_kernel")

    def __init__(self, name, kind, inputs, grads, node, formula=None, dtype="same",
                 check=None, variants=("function", "method"), aliases=(), params=(),
                 saves=None):
        self.name = name
        # "unary", "binary": elementwise formula; "op": a forward function; "handwritten": a
        # function and node classes written by hand (``declare``)
        self.kind = kind
        self.inputs = inputs
        self.params = params  # number arguments the derivative formulas may read
        self.grads = grads
        self.formula = formula
        self.dtype = dtype
        self.check = check
        self.variants = frozenset(variants)
        self.aliases = tuple(aliases)
        self.saves = tuple(saves) if saves is not None else _saved_names(inputs, grads)
        self.node = make_node(node, inputs, grads, self.saves) if grads else None
        self._kernel = None
        self.fn = None
        self.method = None  # the Tensor method when it is not ``fn`` (another signature)
        self.inplace_fn = None  # a hand-written in-place form (else generated from ``fn``)
        self.nodes = (self.node.__name__,) if self.node else ()  # node classes it records

    def kernel(self):
        """The compiled elementwise kernel of the formula (built on first use: importing
        numgrad compiles nothing). ``formula`` may also name a kernel of
        ``numgrad.kernels.cpu.elementwise``."""
        k = self._kernel
        if k is None:
            if isinstance(self.formula, str):
                k = getattr(EW, self.formula)
            else:
                # the formula's bytecode names the cached machine code, so editing a formula
                # never loads the old one from the disk cache
                code = marshal.dumps(self.formula.__code__)
                tag = hashlib.sha256(code).hexdigest()[:10]
                k = EW.Kernel(f"{self.name}_{tag}", 1 if self.kind == "unary" else 2,
                              self.formula)
            self._kernel = k
        return k

    def __repr__(self):
        return f"<op {self.name} ({self.kind}, node {self.node and self.node.__name__})>"


def _reads(formula):
    """The names a derivative formula reads: its parameters after ``grad`` (but a joint
    formula's ``output_mask``)."""
    return [p for p in list(inspect.signature(formula).parameters)[1:] if p != "output_mask"]


def _joint(inputs, grads):
    """The joint formulas: a key naming several inputs, ``("query", "key", "value")``, holds
    one rule returning their gradients together (PyTorch's ``output_mask``: which of them
    have an edge), for a backward whose parts share work."""
    return tuple((tuple(inputs.index(i) for i in key), f) for key, f in grads.items()
                 if isinstance(key, tuple))


def _saved_names(inputs, grads):
    """What the node saves: the names the derivative formulas read, in order of first use."""
    names = []
    formulas = [grads.get(key) for key in inputs] + [f for _, f in _joint(inputs, grads)]
    for formula in formulas:
        if formula is None:
            continue
        for p in _reads(formula):
            if p not in names:
                names.append(p)
    return tuple(names)


# ----------------------------------------------------------------------------------------
# generated Node classes
# ----------------------------------------------------------------------------------------


def make_node(name, inputs, grads, saves):
    """A Node class named ``name`` whose backward applies ``grads[input](grad, *saved)`` for
    each input that has an edge. Saved outputs (``result``) are stored as arrays and handed to
    the formulas as tensors of this node, so they stay differentiable."""
    formulas = tuple(grads.get(i) for i in inputs)
    args = tuple(tuple(saves.index(p) for p in _reads(f)) if f is not None else ()
                 for f in formulas)
    result_at = saves.index("result") if "result" in saves else -1
    joint = tuple((at, f, tuple(saves.index(p) for p in _reads(f)))
                  for at, f in _joint(inputs, grads))
    each = tuple((i, f, a) for i, (f, a) in enumerate(zip(formulas, args)))

    if len(inputs) == 1 and args[0] == (0,):  # one input, one saved value: the common case
        f0 = formulas[0]
        if result_at == 0:
            def _backward(self, g):
                return (f0(g, wrap_out(self, self._saved[0])),)
        else:
            def _backward(self, g):
                return (f0(g, self._saved[0]),)
    elif len(inputs) == 2 and not joint:  # a binary op: its two formulas, no list built
        (f0, f1), (a0, a1) = formulas, args
        n0, n1 = len(a0) if f0 is not None else -1, len(a1) if f1 is not None else -1

        def _backward(self, g):
            saved = self._saved
            if result_at >= 0:
                saved = list(saved)
                saved[result_at] = wrap_out(self, saved[result_at])
            e0 = self._next  # the first edge's node (with _next2, the second's), or flat
            e1 = self._next2
            if e1 is False:  # (node, output_nr, node, output_nr), or one edge
                if e0.__class__ is tuple:
                    e0, e1 = e0[0], e0[2] if len(e0) > 2 else None
                else:
                    e1 = None
            if e0 is None or n0 < 0:
                r0 = None
            elif n0 == 0:
                r0 = f0(g)
            elif n0 == 1:
                r0 = f0(g, saved[a0[0]])
            else:
                r0 = f0(g, *[saved[j] for j in a0])
            if e1 is None or n1 < 0:
                r1 = None
            elif n1 == 0:
                r1 = f1(g)
            elif n1 == 1:
                r1 = f1(g, saved[a1[0]])
            else:
                r1 = f1(g, *[saved[j] for j in a1])
            return (r0, r1)
    else:
        def _backward(self, g):
            saved = self._saved
            if result_at >= 0:
                saved = list(saved)
                saved[result_at] = wrap_out(self, saved[result_at])
            nf = self._next  # (node, output_nr, node, output_nr, ...), or one or two edges'
            if nf.__class__ is not tuple:  # nodes (see Node)
                nb = self._next2
                nf = (nf, 0) if nb is False else (nf, 0, nb, 0)
            res = tuple([
                f(g, *[saved[j] for j in a]) if f is not None and nf[2 * i] is not None else None
                for i, f, a in each])
            for at, f, a in joint:
                mask = tuple(nf[2 * i] is not None for i in at)
                if any(mask):
                    res = list(res)
                    for i, gi in zip(at, f(g, *[saved[j] for j in a], mask)):
                        res[i] = gi
                    res = tuple(res)
            return res

    ns = {"__slots__": (), "_names_of_saved": saves, "_backward": _backward,
          "__doc__": f"Backward of a registered op: derivatives for {', '.join(map(str, grads))}."}
    return type(name, (Node,), ns)


# ----------------------------------------------------------------------------------------
# elementwise declarations
# ----------------------------------------------------------------------------------------


def _unary_function(od):
    """tensor -> tensor through ``od``'s kernel, with the fast path for C-contiguous float
    data of the result dtype (no cast, no broadcast, no check)."""
    node_cls = od.node
    name = od.name
    save_result = od.saves == ("result",)
    has_out = "out" in od.variants
    saves_input = od.saves == ("self",)

    def record(out, input, r):
        attach(out, node_cls((edge(input),), (r,) if save_result else
                             (input,) if saves_input else ()))

    def op(input, *, out=None):
        if out is None:
            xd = getattr(input, "_data", None)
            if xd is not None and xd.dtype.kind == "f" and xd.flags.c_contiguous:
                k = od._kernel or od.kernel()
                r = flat1(k, xd)
                res = _wrap(r)
                if node_cls is not None and state.enabled and input._requires_grad:
                    record(res, input, r)
                return res
        if out is not None:
            _check_input(name, input)
            if not has_out:
                raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
            return write_out(op, out, input)
        r = _checked_unary(od, input, 0.0, 0.0)
        res = _wrap(r)
        if node_cls is not None and state.enabled and input._requires_grad:
            record(res, input, r)
        return res

    return op


def _check_input(name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _checked_unary(od, input, p, q):
    """``od``'s kernel on any tensor: argument and dtype checks, the dtype rule, any layout."""
    _check_input(od.name, input)
    dt = dtype_of(input)
    if od.check is not None:
        od.check(dt)
    if od.dtype == "float":
        dt = float_type(dt)
    return EW.unary(od._kernel or od.kernel(), as_type(input, dt), dt.np, p, q)


def _unary_param_function(od, defaults):
    """tensor, numbers -> tensor: a unary formula with up to two number parameters, given by
    position or by name, that reach the formula as ``p`` and ``q`` and are saved by name for
    the derivative (``softplus(x, beta, threshold)``)."""
    node_cls = od.node
    name = od.name
    names = od.params

    def op(input, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{name}() takes from 1 to {len(names) + 1} positional arguments "
                            f"but {len(args) + 1} were given")
        vals = list(defaults)
        vals[:len(args)] = args
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
            vals[names.index(k)] = v
        p, q = ([float(v) for v in vals] + [0.0, 0.0])[:2]
        r = _checked_unary(od, input, p, q)
        res = _wrap(r)
        if node_cls is not None and state.enabled and input._requires_grad:
            env = dict(zip(names, vals), self=input, result=r)
            attach(res, node_cls((edge(input),), tuple(env[s] for s in od.saves)))
        return res

    return op


def flat1(kernel, xd, p=0.0, q=0.0):
    """Unary kernel on C-contiguous data ``xd`` into a new array of its shape and dtype."""
    if xd.__class__ is not _ND:  # CUDA data: the launcher picks the GPU kernels
        return EW.unary(kernel, xd, xd.dtype, p, q)
    out = _arrays.new(xd.shape, xd.dtype)
    n = out.size
    if n:
        pick(kernel.flat, kernel.flat_par, n, ELEMENTWISE)(xd.ravel(), out.ravel(), p, q)
    return out


def flat2(kernel, ad, bd, p=0.0, q=0.0):
    """Binary kernel on C-contiguous data of one shape and dtype into a new array."""
    if ad.__class__ is not _ND or bd.__class__ is not _ND:
        return EW.binary(kernel, ad, bd, ad.dtype, ad.shape, p, q)
    out = _arrays.new(ad.shape, ad.dtype)
    n = out.size
    if n:
        pick(kernel.flat, kernel.flat_par, n, ELEMENTWISE)(
            ad.ravel(), bd.ravel(), out.ravel(), p, q)
    return out


def _binary_function(od):
    """``f(a, b, *params)`` on two tensors of one dtype (the backward formulas of other ops:
    ``g`` and a saved input or result), broadcast together; up to two number ``params`` reach
    the formula as ``p``, ``q`` and may be saved by name."""
    node_cls = od.node
    names = od.inputs + od.params
    at = tuple(names.index(s) for s in od.saves)

    def op(a, b, p=0.0, q=0.0):
        ad, bd = a._data, b._data
        k = od._kernel or od.kernel()
        meta = None
        if (ad.dtype is bd.dtype and ad.shape == bd.shape and ad.flags.c_contiguous
                and bd.flags.c_contiguous):
            r = flat2(k, ad, bd, p, q)
        else:
            dt = dtype_of(b)
            shape = broadcast_shapes(ad.shape, bd.shape)
            r = EW.binary(k, as_type(a, dt), as_type(b, dt), dt.np, shape, p, q)
            meta = (meta_for(a, shape, dt), meta_for(b, shape, dt))
            if meta == (None, None):
                meta = None
        res = _wrap(r)
        if node_cls is not None and state.enabled and (a._requires_grad or b._requires_grad):
            args = (a, b, p, q)
            node = node_cls((edge(a), edge(b)), tuple(args[i] for i in at))
            if meta is not None:
                node._meta = shared(meta)
            attach(res, node)
        return res

    return op


def elementwise(name=None, *, node=None, grad=None, dtype="same", check=None,
                variants=("function", "method", "inplace", "inplace_function", "out"),
                aliases=(), arity=1, params=(), formula=None):
    """Declare an elementwise op from its scalar formula (the decorated function) or from a
    kernel of ``numgrad.kernels.cpu.elementwise`` named by ``formula``.

    ``grad``: one derivative formula (unary) or a dict over ``self``/``other``. ``params``:
    up to two number arguments after the tensors, handed to the formula as ``p`` and ``q``
    (a dict of name -> default for a unary op, whose function then takes them by position or
    name; names for a binary one); derivative formulas may read them by name. Variant
    ``"functional"``: the op is reached through ``numgrad.nn.functional`` only.
    """
    def declare(fn):
        op_name = name or fn.__name__
        inputs = INPUT_NAMES[:arity]
        grads = grad if isinstance(grad, dict) else ({"self": grad} if grad else {})
        od = OpDef(op_name, "unary" if arity == 1 else "binary", inputs, grads, node,
                   formula=formula or fn, dtype=dtype, check=check,
                   variants=variants if arity == 1 else (), aliases=aliases,
                   params=tuple(params))
        if arity == 2:
            gen = _binary_function(od)
        elif params:
            gen = _unary_param_function(od, tuple(params.values()))
        else:
            gen = _unary_function(od)
        gen.__name__ = gen.__qualname__ = op_name
        gen.__doc__ = (fn.__doc__ or f"Elementwise {op_name}.") + (
            f" (``{node}`` in the graph)" if node else "")
        gen.opdef = od
        od.fn = gen
        REGISTRY[op_name] = od
        return gen
    return declare


def op(name=None, *, node=None, grads=None, inputs=("self",), variants=("function", "method"),
       aliases=(), outputs=1, save=None, differentiable_outputs=False):
    """Declare an op whose forward is the decorated function.

    The function takes the op's arguments (tensors for ``inputs``) and returns
    ``(result arrays, values)``: the output array (or a tuple for several outputs), and a dict
    of the non-tensor values the derivative formulas read (``dim``, ``indices``, ...). The
    generated function wraps the arrays, and records the node when a differentiable input
    requires grad. ``save``: the saved names when they differ from what the formulas read
    (PyTorch's ``_saved_*`` order). Inputs may also be given by keyword. A ``"_meta"`` value
    (per input ``(shape, dtype)`` or ``None``) becomes the node's ``_meta``: the engine sums
    (and casts) each gradient back to a broadcast input's shape. ``differentiable_outputs``:
    every output of the tuple is an output of the node, and the formulas' ``grad`` is the
    tuple of their gradients (zeros for an output that got none)."""
    def declare(forward):
        op_name = name or forward.__name__
        od = OpDef(op_name, "op", tuple(inputs), grads or {}, node, variants=variants,
                   aliases=aliases, saves=save)
        if differentiable_outputs and od.node is not None:
            od.node = type(od.node.__name__, (od.node,), {
                "__slots__": ("_n_outputs", "_out_meta"), "_run": _run_outputs, "_plain": False})
        node_cls = od.node
        n_in = len(od.inputs)
        getters = tuple((s, od.inputs.index(s) if s in od.inputs else -1) for s in od.saves)

        def fn(*args, **kwargs):
            if kwargs.get("out") is not None:
                out = kwargs.pop("out")
                return write_out(fn, out, *args, **kwargs)
            arrays, values = forward(*args, **kwargs)
            multi = isinstance(arrays, tuple)
            res = tuple(_wrap(a) for a in arrays) if multi else _wrap(arrays)
            if node_cls is not None and state.enabled:
                ins = args[:n_in]
                if len(ins) < n_in and kwargs:
                    ins = _bound_inputs(forward, n_in, args, kwargs)
                if _requiring(ins):
                    first = res[0] if multi else res
                    n = len(ins)  # (_saved_value, inlined)
                    saved = tuple([first._data if s == "result" else ins[j] if 0 <= j < n
                                   else values[s] for s, j in getters])
                    edges = tuple([edge(t) if isinstance(t, Tensor) else (None, 0)
                                   for t in ins])
                    node = node_cls(edges, saved)
                    meta = values.get("_meta")
                    if meta is not None:
                        node._meta = meta
                    attach(first, node)
                    if differentiable_outputs:
                        _attach_outputs(node, res)
            if multi and outputs_type is not None:
                return outputs_type(*res)
            return res

        outputs_type = outputs if callable(outputs) else None
        fn.__name__ = fn.__qualname__ = op_name
        fn.__doc__ = forward.__doc__
        fn.__wrapped__ = forward
        fn.opdef = od
        od.fn = fn
        REGISTRY[op_name] = od
        return fn
    return declare


def _attach_outputs(node, res):
    """Every result of ``res`` (a tuple) as output ``nr`` of ``node``."""
    for nr, r in enumerate(res[1:], 1):
        r._grad_fn = node
        r._output_nr = nr
        r._requires_grad = True
    node._n_outputs = len(res)
    node._out_meta = [(r._data.shape, r._data.dtype, r.device) for r in res]


def _run_outputs(self, grads):
    """The backward of a node of several outputs: the tuple of their gradients, zeros where
    an output got none."""
    from numgrad.autograd.function import _zeros
    from numgrad.autograd.graph import FREED_MSG
    if self._saved is None:
        raise RuntimeError(FREED_MSG)
    return self._backward(tuple(g if g is not None else _zeros(m)
                                for g, m in zip(grads, self._out_meta)))


def declare(name=None, *, nodes=(), aliases=(), variants=("function", "method"), method=None):
    """Register a hand-written op: its function, aliases and Tensor method become ``numgrad``
    entries and methods exactly as a generated op's do, and the registry lists it with the
    node classes it records (``nodes``, hand-written beside it), so the tests and a graph
    compiler see every op. ``variants`` may include ``"inplace"``: ``name_`` is then generated
    (``apply_`` on the result) unless ``inplace_of`` registers a hand-written one. ``method``:
    a Tensor method with another signature than the function (``x.where(cond, y)``)."""
    def register(fn):
        op_name = name or fn.__name__
        od = OpDef(op_name, "handwritten", (), {}, None, variants=variants, aliases=aliases)
        od.nodes = tuple(nodes)
        od.fn = fn
        od.method = method
        if hasattr(fn, "__dict__"):
            fn.opdef = od
        REGISTRY[op_name] = od
        return fn
    return register


def inplace_of(name, *, nodes=()):
    """Register the decorated function as the in-place form (``name_``) of op ``name``; an op
    that only exists in place (``fill_``, ``uniform_``) is registered with it."""
    def register(fn):
        od = REGISTRY.get(name)
        if od is None:
            od = REGISTRY[name] = OpDef(name, "handwritten", (), {}, None, variants=())
            od.nodes = tuple(nodes)
        od.inplace_fn = fn
        od.variants = od.variants | {"inplace"}
        return fn
    return register


def respell(fn):
    """Accept NumPy's spellings of reduction arguments, as PyTorch does: ``axis=`` for
    ``dim=`` and ``keepdims=`` for ``keepdim=``."""
    @functools.wraps(fn)
    def accepting(*args, **kwargs):
        if "axis" in kwargs or "keepdims" in kwargs:
            kwargs = respelled(kwargs)
        return fn(*args, **kwargs)
    return accepting


def respelled(kwargs):
    """``kwargs`` with ``axis``/``keepdims`` renamed (PyTorch's error if both are given)."""
    kwargs = dict(kwargs)
    for numpy_name, name in (("axis", "dim"), ("keepdims", "keepdim")):
        if numpy_name in kwargs:
            if name in kwargs:
                raise TypeError(f"got multiple values for argument '{name}'")
            kwargs[name] = kwargs.pop(numpy_name)
    return kwargs


def _requiring(ins):
    """Whether a tensor among ``ins`` requires grad."""
    for t in ins:
        if isinstance(t, Tensor) and t._requires_grad:
            return True
    return False


def _bound_inputs(forward, n_in, args, kwargs):
    """The first ``n_in`` arguments of ``forward`` when some were given by keyword."""
    names = list(inspect.signature(forward).parameters)[:n_in]
    return tuple(args[i] if i < len(args) else kwargs.get(n) for i, n in enumerate(names))


# ----------------------------------------------------------------------------------------
# variants: out=, in-place, methods, namespace
# ----------------------------------------------------------------------------------------


def write_out(fn, out, *args, **kwargs):
    """``fn(*args, out=out)``: PyTorch's out= rules (no autograd through out=, the result
    cast into ``out``'s dtype where allowed, ``out`` resized to the result's shape). ``out``
    is a tuple of tensors for an op with several outputs."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{fn.__name__}(): argument 'out' must be Tensor, not "
                            f"{type(o).__name__}")
    if state.enabled and any(isinstance(a, Tensor) and a._requires_grad
                             for a in (*outs, *args)):
        raise RuntimeError(f"{fn.__name__}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    with no_grad():
        r = fn(*args, **kwargs)
    rs = tuple(r) if isinstance(r, tuple) else (r,)
    if len(rs) != len(outs):
        raise TypeError(f"{fn.__name__}(): argument 'out' must be tuple of {len(rs)} Tensors")
    for o, ri in zip(outs, rs):
        _write_into(o, ri)
    return out


def _write_into(out, r):
    rd, od = dtype_of(r), dtype_of(out)
    if rd._kind > od._kind:
        raise RuntimeError(f"result type {rd._legacy} can't be cast to the desired output "
                           f"type {od._legacy}")
    if out._data.shape != r._data.shape:
        if out._data.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out._data.shape)}, which does not match the required output shape "
                f"{list(r._data.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=4)
        out._data = as_type(r, od) if r._data.dtype != od.np else r._data
        out._bump_version()
        return
    from numgrad.ops.inplace import check_inplace
    check_inplace(out)
    EW.unary(EW.copy, r._data, out._data.dtype, out=out._data)
    out._bump_version()


def _inplace(od):
    fn = od.fn

    def method(self, *args, **kwargs):
        from numgrad.ops.inplace import apply_
        if args or kwargs:
            # every tensor operand goes through apply_, which records the node when any of
            # them requires grad (self need not); keyword tensors ride along unused
            n = len(args)
            extra = [v for v in kwargs.values() if isinstance(v, Tensor)]
            return apply_(self, lambda x, *a: fn(x, *a[:n], **kwargs), *args, *extra)
        return apply_(self, fn)
    method.__name__ = od.name + "_"
    method.__doc__ = f"In-place {od.name} (``{od.node.__name__ if od.node else ''}``)."
    return method


def _entries(plain, inplace):
    """``name -> function`` for the ops with variant ``plain`` (and their aliases), plus
    ``name_ -> in-place form`` for those with variant ``inplace``."""
    out = {}
    for od in REGISTRY.values():
        names = (od.name, *od.aliases)
        if plain in od.variants:
            f = od.method if plain == "method" and od.method is not None else od.fn
            out.update(dict.fromkeys(names, f))
        if inplace in od.variants:
            m = od.inplace_fn or _inplace(od)
            out.update({n + "_": m for n in names})
    return out


def methods():
    """Tensor methods generated from the registry (``x.erf()``, ``x.erf_()``)."""
    return _entries("method", "inplace")


def namespace():
    """``numgrad.<name>`` entries generated from the registry: functions, and the in-place
    forms PyTorch also exports as functions (``numgrad.tanh_``; variant ``inplace_function``)."""
    return _entries("function", "inplace_function")
