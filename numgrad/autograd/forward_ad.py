"""``numgrad.autograd.forward_ad``: dual tensors for forward-mode AD (``dual_level``,
``make_dual``, ``unpack_dual``), as in PyTorch.

A dual tensor is its primal lifted into the reverse-mode graph (a fresh leaf that requires
grad, or a view of a primal that already does), with its tangent kept by the level. Ops on it
are ordinary recorded ops, so every op with a differentiable backward (every declared op)
has a forward derivative: ``unpack_dual(y)`` forms ``J t`` by the double-vjp trick (``g =
J^T u`` built differentiably in ``u``, then ``J t = d<g, t>/du``; see
``numgrad.func._transforms.forward_products``). An op whose backward is not differentiable
raises PyTorch's ``NotImplementedError`` instead of giving a wrong tangent.

Differences from PyTorch: results of ops on dual tensors report ``requires_grad=True`` (they
are recorded), and ops run under ``no_grad`` inside a level are not recorded, so their
results carry no tangent.
"""

from collections import namedtuple

from numgrad.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "The ``(primal, tangent)`` pair ``unpack_dual`` returns."

_LEVELS = []  # the live levels (PyTorch allows one at a time)


class _DualLevel:
    __slots__ = ("index", "lifter", "duals")

    def __init__(self, index):
        from numgrad.func._transforms import _Level
        self.index = index
        self.lifter = _Level()
        self.duals = {}  # id(dual) -> (dual, primal, tangent)


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
    _LEVELS.pop()


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
