"""Graph nodes (``grad_fn``), ``AccumulateGrad`` and hook handles.

A node holds ``next_functions`` (one ``(node or None, output_nr)`` edge per input of the
forward op, exactly as PyTorch shows them; stored flat in ``_next`` as ``(node, output_nr,
node, output_nr, ...)``, one tuple instead of one per edge plus their container; a node
with the single edge ``(node, 0)`` stores that node itself, and one with the two edges
``(a, 0), (b, 0)`` (a binary op's, ``a`` or ``b`` may be None) stores ``a`` in ``_next``
and ``b`` in ``_next2``, which is False for every other form, so a graph of tiny ops gives
the garbage collector fewer objects to track), what its backward rule needs (``_saved``, a
tuple; ``None`` once freed) and, only for broadcasting or type-promoting ops, ``_meta``: per
input ``(shape, dtype)`` or ``None``, which the engine uses to sum each gradient back to its
input's shape in one place. Node classes print as PyTorch's (``<MulBackward0 object at
...>``).
"""

import itertools
import sys
from itertools import chain

import numpy as np

from numgrad import _hook
from numgrad._shape import broadcast_shapes
from numgrad.autograd import grad_mode
from numgrad.autograd.anomaly_mode import STATE as ANOMALY
from numgrad.kernels._guard import check_writable

_seq = itertools.count()
_ACC_SEQ = 1 << 62  # AccumulateGrad runs as soon as it is ready, as in PyTorch

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def _as_saved_value(value):
    """Saved result arrays are shown as tensors; everything else as saved."""
    import numpy as np
    if isinstance(value, np.ndarray):
        from numgrad.tensor import _wrap
        return _wrap(value)
    return value


def _flat(edges):
    """``((node, nr), (node, nr), ...)`` as ``Node._next``: ``(node, nr, node, nr, ...)``, or
    the node alone for the one edge ``(node, 0)``."""
    if len(edges) == 1:
        fn, nr = edges[0]
        return fn if nr == 0 and fn is not None else (fn, nr)
    if len(edges) == 2:
        (a, i), (b, j) = edges
        return (a, i, b, j)
    return tuple(chain.from_iterable(edges))


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "id")
    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _NodeHooks:
    """Hooks of one node, created on first registration (most nodes have none)."""

    __slots__ = ("tensor_pre", "retain", "pre", "post")

    def __init__(self):
        self.tensor_pre = {}  # output_nr -> {handle id: fn(grad)}
        self.retain = {}  # output_nr -> fn(grad), runs after the tensor hooks
        self.pre = {}  # handle id -> fn(grad_outputs)
        self.post = {}  # handle id -> fn(grad_inputs, grad_outputs)


class Node:
    """Base of every ``grad_fn``. Subclasses implement ``_backward(self, grad)``."""

    __slots__ = ("_next", "_next2", "_seq", "_saved", "_meta", "_hooks", "_metadata", "_vchk",
                 "__weakref__")
    _n_outputs = 1
    _names_of_saved = ()  # PyTorch's names of what _saved holds, read as node._saved_<name>
    # True when _run/_release are Node's own: the engine then inlines them (saves two calls)
    _plain = True
    _shares_outputs = False  # True where backward may return tensors the user still holds
    # True where ``_saved`` holds only shapes/dims/scalars, which PyTorch does not free: such
    # nodes can run again after a backward without retain_graph (AddBackward0, SumBackward0...)
    _meta_only = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # ``type(node)`` prints as in PyTorch (<class 'MulBackward0'>); custom Function nodes
        # set their module back to the user's
        cls.__module__ = "builtins"

    def __init__(self, next_functions=(), saved=()):
        n = len(next_functions)
        if n == 1:  # the common case: one edge, stored as its node
            fn, nr = next_functions[0]
            self._next = fn if nr == 0 and fn is not None else (fn, nr)
            self._next2 = False
        elif n == 2 and next_functions[0][1] == 0 and next_functions[1][1] == 0:
            self._next = next_functions[0][0]  # a binary op's two edges: their nodes
            self._next2 = next_functions[1][0]
        else:
            self._next = _flat(next_functions)
            self._next2 = False
        self._seq = next(_seq)
        self._saved = saved
        self._meta = None
        self._hooks = None
        self._vchk = None  # the version checks of saved tensors (see ops._util.attach)
        if ANOMALY[0]:
            from numgrad.autograd.anomaly_mode import record_forward
            record_forward(self)

    @property
    def next_functions(self):
        """One ``(node or None, output_nr)`` edge per input of the forward op."""
        t = self._next
        if t.__class__ is not tuple:
            b = self._next2
            return ((t, 0),) if b is False else ((t, 0), (b, 0))
        if len(t) == 2:
            return (t,)
        return tuple(zip(t[::2], t[1::2]))

    @next_functions.setter
    def next_functions(self, edges):
        if len(edges) == 2 and edges[0][1] == 0 and edges[1][1] == 0:
            self._next, self._next2 = edges[0][0], edges[1][0]
        else:
            self._next = _flat(edges)
            self._next2 = False

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def name(self):
        return type(self).__name__

    def __getattr__(self, attr):
        # node._saved_self, node._saved_exponent, ... as the seed tutorials inspect them
        if attr.startswith("_saved_"):
            names = type(self)._names_of_saved
            key = attr[len("_saved_"):]
            if key in names:
                saved = object.__getattribute__(self, "_saved")
                if saved is None:
                    raise RuntimeError(FREED_MSG)
                value = saved[names.index(key)] if names.index(key) < len(saved) else None
                return _as_saved_value(value)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def __dir__(self):
        return sorted(set(super().__dir__()) | {"_saved_" + n for n in type(self)._names_of_saved})

    def __call__(self, *grads):
        """Apply this node's backward rule to output gradients (as ``grad_fn(g)`` does): as in
        PyTorch, the results are not yet summed back to broadcast inputs' shapes (the engine
        does that)."""
        res = tuple(self._run(list(grads)))
        return res[0] if len(res) == 1 else res

    @property
    def metadata(self):
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

    def _run(self, grads):
        """Apply the backward rule to the list of output gradients (one per output)."""
        if self._saved is None:
            raise RuntimeError(FREED_MSG)
        return self._backward(grads[0])

    def _backward(self, grad):
        raise NotImplementedError

    def _release(self):
        """Free saved values (after a backward without retain_graph)."""
        if self._saved and not self._meta_only:
            self._saved = None

    def _node_hooks(self):
        if self._hooks is None:
            self._hooks = _NodeHooks()
        return self._hooks

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        hooks = self._node_hooks().post
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        hooks = self._node_hooks().pre
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle


class AccumulateGrad(Node):
    """The node of a leaf tensor: accumulates the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self._next = ()
        self._next2 = False
        self._seq = _ACC_SEQ
        self._saved = ()
        self._meta = None
        self._hooks = None
        self._vchk = None

    def name(self):
        return "torch::autograd::AccumulateGrad"  # PyTorch's C++ name, as its name() shows

    def accumulate(self, g, shared):
        """Add gradient ``g`` into ``variable.grad``. With no ``.grad`` yet, ``g``'s buffer
        becomes the ``.grad`` when nothing else can reach it (no copy, as PyTorch's
        AccumulateGrad steals a gradient it holds the only reference to); ``shared`` holds the
        ids of tensors a hook or the caller may still see, which are copied instead."""
        var = self.variable
        old = var._grad
        if grad_mode.state.enabled:  # create_graph: keep the gradient's own graph
            var._grad = g.clone() if old is None else old + g
        elif old is None:
            if id(g) not in shared and not g._requires_grad and _stealable(g):
                shared.add(id(g))
                var._grad = g if g._base is None else g.detach()  # a .grad is no view
            else:
                var._grad = g.detach().clone()
        else:
            a = old._data
            if not a.flags.c_contiguous:  # e.g. a .grad the user set to an expanded tensor
                check_writable(a)
            try:
                old._add_inplace_raw(g)
            except RuntimeError:
                _accumulate_error(a.shape, g._data.shape)
                raise


def _stealable(g):
    """Whether gradient ``g``'s memory is reachable only through ``g``: an array that owns its
    memory, or a contiguous view of all of a buffer nothing else references; when ``g`` is a
    view of a tensor ``g._base`` (a rule that returned its own product transposed, transposed
    back by ``TBackward0``), that tensor and its array must be referenced by ``g`` alone."""
    arr = g._data
    if arr.base is None:
        return True
    owner = g._base
    if owner is None:
        return _sole_owner(arr)
    if sys.getrefcount(owner) != 3:  # g._base, the name owner, getrefcount's argument
        return False
    data = owner._data
    if data is arr.base:
        del data
        return _sole_owner(arr, holders=1)  # owner._data
    if data.base is not arr.base or sys.getrefcount(data) != 3:  # owner._data, data, argument
        return False
    del data
    return _sole_owner(arr, holders=1)  # owner._data's base


def _sole_owner(arr, holders=0):
    """Whether view ``arr`` is the only way to reach its memory: a contiguous view of all of a
    NumPy buffer that nothing else references (the gradient a rule returned as a reshape or
    transpose of its own result), but ``holders`` known others."""
    base = arr.base
    # references to base: arr.base, the local name, getrefcount's argument, and those of a
    # numgrad.compile trace's record (so that tracing does not turn a steal into a copy)
    if not (base.__class__ is np.ndarray and base.base is None and arr.flags.c_contiguous
            and arr.nbytes == base.nbytes):
        return False
    refs = sys.getrefcount(base) - holders
    return refs == 3 or refs == 3 + _traced_refs(base)


def _traced_refs(base):
    """The references the active ``numgrad.compile`` tape holds to array ``base``."""
    tape = _hook.TAPE
    return 0 if tape is None else tape.refs(base)


def _accumulate_error(shape, gshape):
    """PyTorch's error for ``grad += g`` when ``g`` does not broadcast to ``grad``'s shape
    (after ``.grad.data`` or ``.data`` was rebound to another size)."""
    if shape != gshape:
        b = broadcast_shapes(shape, gshape)
        if b != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(b)}")


