"""The CPU's copies of kernel functions written once for both devices (``numgrad.kernels._bind``):
each compiled inline into the CPU loops, with the CPU's ``add_at`` (a plain ``a[i] += v``; the
GPU binds an atomic one) and any other ``helpers`` in its globals."""

from numgrad.kernels import _bind
from numgrad.kernels._jit import inline


def _add_at(a, i, v):
    a[i] += v


def _inline(name, copy):
    return inline(copy)


def bind(module, names, owner, helpers=None, qualname="{}__cpu", build=_inline):
    """The globals of ``module`` with its functions ``names`` replaced by inline CPU copies
    (qualified ``<name>__cpu`` in module ``owner`` unless told otherwise, which keys their
    cache entries) that see the CPU's ``add_at``, ``helpers`` and each other's copies;
    ``build(name, copy)`` may compile some apart instead of inline."""
    h = {"add_at": inline(_add_at)}
    h.update(helpers or {})
    return _bind.bind(module, names, h, build, qualname, owner)
