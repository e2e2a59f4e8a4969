"""The CPU's copies of kernel functions written once for both devices (``kernels/gathers.py``,
``kernels/windows.py``): each compiled inline into the CPU loops, with the CPU's ``add_at``
(a plain ``a[i] += v``; the GPU binds an atomic one) in its globals."""

import types as pytypes

from numgrad.kernels._jit import inline


def _add_at(a, i, v):
    a[i] += v


def bind(module, names, owner):
    """The globals of ``module`` with its functions ``names`` replaced by inline CPU copies
    (qualified ``<name>__cpu`` in module ``owner``, which keys their cache entries) that see
    the CPU's ``add_at`` and each other's copies."""
    g = dict(module.__dict__)
    g["add_at"] = inline(_add_at)
    for name in names:
        fn = getattr(module, name)
        copy = pytypes.FunctionType(fn.__code__, g, name, fn.__defaults__)
        copy.__qualname__ = f"{name}__cpu"
        copy.__module__ = owner
        g[name] = inline(copy)
    return g
