"""Binding kernel functions written once for both devices (``kernels/rows.py``,
``windows.py``, ``gathers.py``, ``optim_steps.py``) to one device: a copy of each function
whose globals hold the device's helpers (the CPU's plain ``add_at``, team of one lane and
fused multiply-add; the GPU's atomics, shared-memory trees and libdevice math) and each
other's compiled copies. ``numgrad.kernels.cpu._bind`` and ``numgrad.kernels.cuda._launch``
compile the copies for their device (inlined into the CPU loops; CUDA device functions).
No Numba import here.
"""

import types


def bind(module, names, helpers, build, qualname=None, owner=None):
    """The globals of ``module`` with ``helpers`` added and its functions ``names`` replaced,
    in order, by ``build(name, copy)`` of a copy that sees those globals (so a function
    calls the compiled copies of those bound before it). ``qualname`` (a format string of
    the name) and ``owner`` (a module name) rename the copies, which keys their cache
    entries apart from the originals'."""
    g = dict(module.__dict__)
    g.update(helpers)
    for name in names:
        fn = getattr(module, name)
        copy = types.FunctionType(fn.__code__, g, name, fn.__defaults__)
        if qualname is not None:
            copy.__qualname__ = qualname.format(name)
        if owner is not None:
            copy.__module__ = owner
        g[name] = build(name, copy)
    return g
