"""Verification: a plan, replayed on copies of the buffers it touches, must give the eager
run's results, gradients and state bit for bit before it replaces eager calls."""

import numpy as np

from numgrad._compile.plan import _same_bytes, _view
from numgrad._compile.tape import address, root
from numgrad.tensor import Tensor


def shadow(plan, datas):
    """Copies of every buffer the plan touches, as the call starts; the buffers its kernels
    write (``plan.written_statics``) as NaN bytes instead, so that a plan missing a step
    cannot pass on what the traced call left there (with the same inputs, the same values).
    Statics that share memory (``plan.arena``) share one copy of it."""
    copies = {}
    for i in plan.used:
        d = datas[i]
        r = root(d)
        copies[i] = (r.copy(order="K"), address(d) - address(r))
    arena = plan.arena
    if arena:  # statics sharing memory (``reuse.py``): one copy of their arena, all NaN
        shared = np.full(plan.arena_bytes, 255, np.uint8)
        for rid, off in arena.items():
            copies[("s", rid)] = (shared, off)
    for rid, r in plan.statics.items():
        if arena and rid in arena:
            continue
        c = r.copy(order="K")
        if rid in plan.written_statics and (c.flags.c_contiguous or c.flags.f_contiguous):
            c.reshape(-1, order="A").view(np.uint8)[:] = 255
        copies[("s", rid)] = (c, 0)
    return copies


same_bits = _same_bytes


def same_result(x, y, same_data=same_bits):
    """Whether two function results are equal: tensors by ``same_data`` of their data."""
    if isinstance(x, Tensor):
        return isinstance(y, Tensor) and same_data(x._data, y._data)
    if isinstance(x, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(
            same_result(a, b, same_data) for a, b in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same_result(x[k], y[k], same_data) for k in x)
    return x == y


def unchanged(plan, copies, datas, skip=()):
    """Whether the copies of the plan's external buffers still equal ``datas``."""
    for i in plan.used:
        if i in skip:
            continue
        d = plan.externals[i]
        now = _view(copies[i], 0, d.shape, d.strides, d.dtype)
        if not same_bits(datas[i], now):
            return False
    return True


def replay(plan, copies, tensors, result, part=None):
    """Replay ``plan`` on ``copies`` and compare with the eager run: its ``result`` and the
    tensors' data and gradients after it. Returns whether all of it is the same, and the
    replay's result. ``part``: compare only that element of the replayed result (a forward plan also
    returns the buffers its backward reads)."""
    try:
        res, effects = plan.run(None, copies, watch=True)
    except Exception:
        return False, None
    if not plan.guards_first:
        return False, None
    if not same_result(result, res if part is None else res[part]):
        return False, None
    replaced = {(i, kind): v for i, kind, v in effects}
    datas = [t._data for t in tensors]
    if not unchanged(plan, copies, datas, skip={i for i, kind in replaced if kind == "data"}):
        return False, None
    for (i, kind), v in replaced.items():
        t = tensors[i]
        if kind == "grad":
            if (v is None) != (t._grad is None) or (v is not None and not same_bits(
                    t._grad._data, v)):
                return False, None
        elif kind == "data" and not same_bits(t._data, v):
            return False, None
    return True, res
