"""``numgrad.autograd.forward_ad``: dual tensors for forward-mode AD (``dual_level``,
``make_dual``, ``unpack_dual``), as in PyTorch.

A dual tensor is its primal lifted into the reverse-mode graph (a fresh leaf that requires
grad, or a view of a primal that already does), with its tangent kept by the level. Ops on it
are ordinary recorded ops, so every op with a differentiable backward (every declared op)
has a forward derivative: ``unpack_dual(y)`` forms ``J t`` by the double-vjp trick (``g =
J^T u`` built differentiably in ``u``, then ``J t = d<g, t>/du``; see
``numgrad.func._transforms.forward_products``). An op whose backward is not differentiable
raises PyTorch's ``NotImplementedError`` instead of giving a wrong tangent.

Forward AD does not depend on grad mode: once grad mode is off inside a level that holds dual
tensors, the level is a client of ``numgrad._intercept`` (until it exits), and an op entry
point called with grad mode off on a tensor that depends on one of the level's duals runs
with grad mode on, so its result keeps its tangent. Levels that never turn grad mode off
wrap nothing.

Differences from PyTorch: results of ops on dual tensors report ``requires_grad=True`` (they
are recorded, under ``no_grad`` too); an in-place op under ``no_grad`` on a dual tensor
itself (not a result of an op on it) raises the in-place-on-a-leaf error.
"""

import functools
import threading
from collections import namedtuple

from numgrad.autograd import grad_mode
from numgrad.autograd.graph import AccumulateGrad
from numgrad.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "The ``(primal, tangent)`` pair ``unpack_dual`` returns."

_LEVELS = []  # the live levels (PyTorch allows one at a time)


class _DualLevel:
    __slots__ = ("index", "lifter", "duals", "client", "memo", "thread", "hooked")

    def __init__(self, index):
        from numgrad.func._transforms import _Level
        self.index = index
        self.lifter = _Level()
        self.duals = {}  # id(dual) -> (dual, primal, tangent)
        self.client = None  # the op interception while the level holds duals
        self.memo = {}  # id(node) -> (node, whether it depends on a dual)
        self.thread = threading.get_ident()
        self.hooked = False

    def holds_duals(self):
        """From the first dual on, watch for grad mode turning off (now, or in a block)."""
        if not self.hooked:
            self.hooked = True
            grad_mode.ON_DISABLE.append(self.watch)
        if not grad_mode.state.enabled:
            self.watch()

    def watch(self):
        """Intercept ops until the level exits (grad mode is off on the level's thread)."""
        if self.client is None and threading.get_ident() == self.thread:
            from numgrad import _intercept
            self.client = _intercept.Client(self._wrap)
            self.client.enter()

    def close(self):
        if self.hooked:
            grad_mode.ON_DISABLE.remove(self.watch)
            self.hooked = False
        if self.client is not None:
            self.client.leave()
            self.client = None

    def _wrap(self, site, fn):
        from numgrad.autograd.grad_mode import enable_grad, state
        level = self

        @functools.wraps(fn)
        def forward_ad_under_no_grad(*args, **kwargs):
            # (inference mode turns forward AD off too, as PyTorch's)
            if state.enabled or state.inference or not level.depends(args, kwargs):
                return fn(*args, **kwargs)
            with enable_grad():  # forward AD ignores grad mode: record to keep the tangent
                return fn(*args, **kwargs)
        return forward_ad_under_no_grad

    def depends(self, args, kwargs):
        for a in (*args, *kwargs.values()):
            if isinstance(a, (list, tuple)):
                if any(isinstance(x, Tensor) and self.reaches(x) for x in a):
                    return True
            elif isinstance(a, Tensor) and self.reaches(a):
                return True
        return False

    def reaches(self, t):
        """Whether tensor ``t`` is or depends on one of the level's dual tensors."""
        if not t._requires_grad:
            return False
        entry = self.duals.get(id(t))
        if entry is not None and entry[0] is t:
            return True
        root = t._grad_fn
        if root is None:
            return False
        hit = self.memo.get(id(root))
        if hit is not None and hit[0] is root:
            return hit[1]
        duals, memo = self.duals, self.memo
        found, stack, seen = False, [root], set()
        while stack and not found:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            m = memo.get(id(node))
            if m is not None and m[0] is node:
                found = m[1]
                continue
            if isinstance(node, AccumulateGrad):
                e = duals.get(id(node.variable))
                found = e is not None and e[0] is node.variable
                continue
            if any(d._grad_fn is node for d, _, _ in duals.values()):
                found = True
                continue
            stack.extend(n for n, _ in node.next_functions)
        memo[id(root)] = (root, found)
        return found


def enter_dual_level():
    """Enter a new forward-AD level; returns its index."""
    if _LEVELS:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _LEVELS.append(_DualLevel(0))
    return 0


def exit_dual_level(*, level=None):
    """Exit the forward-AD level; the tangents of its dual tensors are dropped."""
    current = _LEVELS[-1].index if _LEVELS else -1
    if level is not None and level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    if not _LEVELS:
        raise RuntimeError("Dual level must be a positive number.")
    _LEVELS.pop().close()


def _current(level):
    if not _LEVELS:
        return None
    if level is not None and level != _LEVELS[-1].index:
        raise RuntimeError(f"Forward AD level {level} does not exist")
    return _LEVELS[-1]


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: ``tensor``'s value with forward gradient ``tangent``."""
    lv = _current(level)
    if lv is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not tensor.is_floating_point():
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    from numgrad.func._transforms import _check_tangent
    _check_tangent(tensor, tangent)
    dual = lv.lifter.lift(tensor)
    lv.duals[id(dual)] = (dual, tensor, tangent)
    lv.holds_duals()
    return dual


def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)``; ``tangent`` is None where ``tensor`` does not
    depend on a dual tensor of the level."""
    lv = _current(level)
    if lv is None or not lv.duals:
        return UnpackedDualTensor(tensor, None)
    entry = lv.duals.get(id(tensor))
    if entry is not None and entry[0] is tensor:
        _, primal, tangent = entry
        return UnpackedDualTensor(primal.view_as(primal), tangent)
    if not isinstance(tensor, Tensor) or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    from numgrad.autograd.grad_mode import enable_grad
    from numgrad.func._transforms import forward_products
    duals = [d for d, _, _ in lv.duals.values()]
    tangents = [t for _, _, t in lv.duals.values()]
    keep = lv.lifter.reaches_outer([tensor]) or any(t.requires_grad for t in tangents)
    with enable_grad():
        try:
            (t,) = forward_products([tensor], duals, tangents, keep)
        except NotImplementedError:
            name = type(tensor.grad_fn).__name__ if tensor.grad_fn is not None else "an op"
            raise NotImplementedError(
                f"Trying to use forward AD with {name} that does not support it because it "
                "has not been implemented yet.") from None
    return UnpackedDualTensor(tensor if keep else tensor.detach(), t)


class dual_level:
    """Context manager for forward AD: dual tensors made inside it lose their tangents when
    it exits. Usable as a decorator."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped
