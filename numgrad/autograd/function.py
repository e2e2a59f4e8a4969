"""Custom autograd functions: ``class F(Function)`` with static ``forward(ctx, ...)`` and
``backward(ctx, *grads)``; ``F.apply(...)`` runs forward without recording and makes the
outputs' ``grad_fn`` a ``FBackward`` node, which is also the ``ctx`` passed to both methods."""

import functools

import numpy as np

from numgrad import _device
from numgrad.autograd import grad_mode
from numgrad.autograd.creation_meta import IN_CUSTOM_FUNCTION, for_new_view
from numgrad.autograd.graph import FREED_MSG, Node
from numgrad.tensor import NO_EDGE, Tensor, _wrap, edge


class FunctionCtx:
    """What ``ctx`` offers inside forward/setup_context and backward."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        if self._saved is None:
            raise RuntimeError(FREED_MSG)
        return self._saved

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """The node of one ``Function.apply`` call (and its ``ctx``)."""

    _forward_cls = None
    _plain = False
    _shares_outputs = True  # user code may return saved tensors as gradients: never steal them

    def __init__(self):
        Node.__init__(self)
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {id(self):#x}>"

    def _run(self, grads):
        if self._saved is None:
            raise RuntimeError(FREED_MSG)
        if self.materialize_grads:
            grads = [g if g is not None else _zeros(m) for g, m in zip(grads, self._out_meta)]
        result = self.apply(*grads)
        return self._check_grads(result)

    def apply(self, *grads):
        """Run the user's backward on output gradients (also ``node(*grads)``)."""
        cls = self._forward_cls
        if cls.backward is Function.backward and getattr(cls, "vjp", None) is Function.vjp:
            raise NotImplementedError(
                "You must implement either the backward or vjp method for your custom "
                "autograd.Function to use it with backward mode AD.")
        return cls.backward(self, *grads)

    def __call__(self, *grads):
        return self.apply(*grads)

    def _check_grads(self, result):
        """The user's gradients after PyTorch's checks: one per forward input, a tensor (or
        None) per tensor input, each of a shape that sums to its input's; those of inputs
        that need no gradient are dropped."""
        name = type(self).__name__
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self._input_is_tensor)
        if len(result) != n:
            if len(result) > n and all(r is None for r in result[n:]):
                result = result[:n]
            else:
                raise RuntimeError(
                    f"function {name} returned an incorrect number of gradients (expected {n}, "
                    f"got {len(result)})")
        out = []
        for i, (g, is_t) in enumerate(zip(result, self._input_is_tensor)):
            if not is_t:
                if g is not None:
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None at position "
                        f"{i + 1}, but the corresponding forward input was not a Variable")
                continue
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            out.append(g)
        k = -1
        for i, is_t in enumerate(self._input_is_tensor):
            if not is_t:
                continue
            k += 1
            g = out[k]
            if g is None:
                continue
            if self.next_functions[k][0] is None:  # its input needs no gradient
                out[k] = None
                continue
            shape = self._in_shapes[i]
            a = g._data
            if a.shape != shape and not _expandable(shape, a.shape):
                raise RuntimeError(
                    f"Function {name} returned an invalid gradient at index {k} - got "
                    f"{list(a.shape)} but expected shape compatible with {list(shape)}")
            if a.__class__ is not self._in_devices[k]:
                where = _device.CPU if self._in_devices[k] is np.ndarray else _device.CUDA0
                if a.ndim:
                    raise RuntimeError(
                        f"Function {name} returned an invalid gradient at index {k} - expected "
                        f"device {where} but got {_device.of(a)}")
                out[k] = g.to(where)
        return out

    def _release(self):
        if self._saved:
            self._saved = None


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to`` (then the gradient is summed back)."""
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != t and s != 1:
            return False
    return True


def _zeros(meta):
    from numgrad import _arrays
    shape, dtype, device = meta
    return _wrap(_arrays.zeros_on(device, shape, dtype))


class FunctionMeta(type):
    """Gives each Function subclass its node class, named ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__module__ = cls.__module__
        backward_cls.__qualname__ = name + "Backward"
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom autograd operations; use ``MyFunction.apply(*args)``."""

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.", DeprecationWarning,
            stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        ctx.needs_input_grad = tuple(t and a._requires_grad for t, a in zip(is_tensor, args))
        record = grad_mode.state.enabled and any(ctx.needs_input_grad)
        custom_setup = cls.setup_context is not Function.setup_context
        with grad_mode.no_grad():
            if custom_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        return _wrap_outputs(ctx, args, is_tensor, outputs, record)


def _wrap_outputs(ctx, args, is_tensor, outputs, record):
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = {id(t) for t in ctx.dirty_tensors}
    non_diff = {id(t) for t in ctx.non_differentiable}
    inputs = {id(a) for a, t in zip(args, is_tensor) if t}
    ctx._saved = tuple(ctx.to_save)
    ctx.to_save = ()
    saved_tensors = [t for t in ctx._saved if t is not None]
    if saved_tensors:
        ctx._vchk = [(t, t._shared_vc()[0], None) for t in saved_tensors]
    if record:
        ctx.next_functions = tuple(edge(a) for a, t in zip(args, is_tensor) if t)
        ctx._input_is_tensor = is_tensor
        ctx._in_shapes = tuple(a._data.shape if t else None for a, t in zip(args, is_tensor))
        ctx._meta = tuple((a._data.shape, a.dtype) for a, t in zip(args, is_tensor) if t)
        ctx._in_devices = tuple(a._data.__class__ for a, t in zip(args, is_tensor) if t)
    result = []
    out_meta = []
    for nr, o in enumerate(outs):
        if not isinstance(o, Tensor):
            result.append(o)
            continue
        if id(o) in inputs and id(o) not in dirty:
            o = o.detach() if not record else _alias(o)
        if id(o) in dirty:
            o._bump_version()  # PyTorch counts marking dirty as a modification
        if record and id(o) not in non_diff:
            if id(o) in dirty and o._grad_fn is None and o._requires_grad:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation.")
            o._grad_fn = ctx
            o._output_nr = nr
            o._requires_grad = True
            if o._base is not None and not (id(o) in dirty and id(o) in inputs):
                o._cmeta = IN_CUSTOM_FUNCTION  # its view history is the Function's node
        out_meta.append((o._data.shape, o._data.dtype, o.device))
        result.append(o)
    if record:
        ctx._out_meta = out_meta
        ctx._n_outputs = len(outs)
    return result[0] if single else tuple(result)


def _alias(t):
    a = _wrap(t._data)
    vc = a._vc = t._shared_vc()
    a._view_ver = vc[0]
    a._cmeta = for_new_view(t, grad_mode.state.enabled, grad_mode.state.inference)
    a._base = t if t._base is None else t._base
    return a


def once_differentiable(fn):
    """Run ``backward`` without recording, so its result cannot be differentiated again."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.state.enabled:
            return outputs
        requires = any(isinstance(a, Tensor) and a._requires_grad for a in args)
        if not requires:
            return outputs
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        err = _DelayedErrorNode()
        err.next_functions = tuple(edge(a) for a in args if isinstance(a, Tensor))
        wrapped = []
        for o in tup:
            if isinstance(o, Tensor):
                o = o.detach()
                o._grad_fn = err
                o._requires_grad = True
            wrapped.append(o)
        return tuple(wrapped) if isinstance(outputs, tuple) else wrapped[0]
    return wrapper


class _DelayedErrorNode(Node):
    __slots__ = ()

    def __init__(self):
        Node.__init__(self)

    def _backward(self, g):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


_DelayedErrorNode.__name__ = _DelayedErrorNode.__qualname__ = "DelayedError"

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "NO_EDGE"]
