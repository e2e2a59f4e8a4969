"""``numgrad.compile(fn_or_module)``: trace a function's kernels once, replay them after.

A call of the compiled function looks up its signature (``state.signature``). The first call
with a new signature runs eagerly while a tape records every kernel it launches (the forward,
``loss.backward()``, ``opt.step()``, all of it) and a plan is built from the tape. The next
call with that signature runs eagerly once more, and the plan is replayed beside it on copies
of the same inputs: only a plan that gives bit-identical results, gradients and state is
kept. From then on calls replay the plan: the kernels run in the recorded order on the
current data, and no Tensor, Node or engine walk is made.

A call that cannot be replayed runs eagerly, always with eager's result: Python reading tensor
values (``.item()``, ``if t > 0``), random numbers, hooks, a result that still needs a
backward, CUDA tensors. ``fullgraph=True`` turns that into an error.
"""

import functools
import warnings

import numpy as np

from numgrad._compile import tape as _tape
from numgrad._compile.plan import GuardFailed, Plan, Unplannable, _view
from numgrad._compile.state import reachable, signature
from numgrad._compile.tape import address, root
from numgrad.tensor import Tensor, _wrap

RECOMPILE_LIMIT = 8  # signatures traced per compiled function (torch's recompile_limit)
_ATTEMPTS = 3  # traces of one signature that may fail to verify before it stays eager


class CompileError(RuntimeError):
    """``fullgraph=True`` and the function cannot be replayed as one graph."""


class _Entry:
    __slots__ = ("plan", "verified", "eager", "failures", "why", "fuse")

    def __init__(self, fuse):
        self.fuse = fuse  # off after a fused plan failed to verify: the next one is not fused
        self.plan = None
        self.verified = False
        self.eager = False
        self.failures = 0
        self.why = None


class CompiledFunction:
    """What ``numgrad.compile(fn)`` returns: call it as ``fn``."""

    def __init__(self, fn, fullgraph=False, dynamic=None, disable=False, fuse=True):
        self._orig_fn = fn
        self._fuse = fuse
        self._fullgraph = fullgraph
        self._disable = disable
        self._cache = {}
        self._warned = False
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        fn = self._orig_fn
        if self._disable or _tape.TAPE is not None:
            return fn(*args, **kwargs)
        reach = reachable(fn, args, kwargs)
        sig = signature(reach)
        entry = self._cache.get(sig)
        if entry is None:
            if len(self._cache) >= RECOMPILE_LIMIT:
                self._warn_limit()
                return fn(*args, **kwargs)
            entry = self._cache[sig] = _Entry(self._fuse)
        if entry.verified:
            try:
                result, effects = entry.plan.run([t._data for t in reach.tensors])
            except GuardFailed:
                return fn(*args, **kwargs)
            _apply(reach.tensors, effects)
            return result
        if entry.eager:
            return fn(*args, **kwargs)
        return self._trace(entry, reach, args, kwargs)

    # ---------------------------------------------------------------------------------------
    def _trace(self, entry, reach, args, kwargs):
        tensors = reach.tensors
        pre = [(t._data, t._grad, t._version) for t in tensors]
        shadows = []
        if entry.plan is not None:
            # a second copy to retry with fresh buffers starting from their traced content
            retry = any(init is not None for _, _, init in entry.plan.fresh)
            datas = [d for d, _, _ in pre]
            shadows = [_shadow(entry.plan, datas) for _ in range(2 if retry else 1)]
        opt_before = [_python_state(o) for o in reach.optimizers]
        t = _tape.start()
        try:
            result = self._orig_fn(*args, **kwargs)
        finally:
            _tape.stop()
        post = [(t_._data, t_._grad, t_._version) for t_ in tensors]
        why = list(t.breaks)
        if any(a.__class__ is not np.ndarray for a, _, _ in pre):
            why.append("CUDA tensors")
        if any(_python_state_changed(b, _python_state(o))
               for b, o in zip(opt_before, reach.optimizers)):
            why.append("the optimizer's Python state changes at every step")
        if why:
            return self._give_up(entry, "; ".join(why), result)
        for k, shadow in enumerate(shadows):
            entry.plan.init_fresh = k == 1
            if _verify(entry.plan, shadow, tensors, result):
                entry.verified = True
                return result
        if shadows:
            entry.failures += 1
            if entry.plan.fused is not None:
                entry.fuse = False
        try:
            plan = Plan(t.calls, pre, post, result, t.first, detach=t.ran_backward,
                        fuse=entry.fuse)
        except Unplannable as exc:
            return self._give_up(entry, str(exc), result)
        if entry.failures >= _ATTEMPTS:
            return self._give_up(entry, "its replay did not match the eager run", result)
        entry.plan = plan
        return result

    def _give_up(self, entry, why, result):
        entry.eager, entry.plan, entry.why = True, None, why
        if self._fullgraph:
            raise CompileError(f"numgrad.compile(fullgraph=True): cannot capture "
                               f"{_name(self._orig_fn)} as one graph: {why}")
        if not self._warned:
            self._warned = True
            warnings.warn(f"numgrad.compile: {_name(self._orig_fn)} runs eagerly ({why})",
                          stacklevel=3)
        return result

    def _warn_limit(self):
        if not self._warned:
            self._warned = True
            warnings.warn(f"numgrad.compile: {_name(self._orig_fn)} hit the recompile limit "
                          f"({RECOMPILE_LIMIT}); calls with further signatures run eagerly",
                          stacklevel=3)


def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _python_state(opt):
    """The optimizer's per-parameter state that is not tensor data (step counts, ...). State
    made by this call (a first step) is not compared: it changes the signature instead."""
    return {id(p): {k: v for k, v in s.items() if not isinstance(v, Tensor)}
            for p, s in opt.state.items()}


def _python_state_changed(before, after):
    return any(after.get(k) != v for k, v in before.items())


def _apply(tensors, effects):
    for i, kind, v in effects:
        t = tensors[i]
        if kind == "grad":
            t._grad = None if v is None else _wrap(v)
        elif kind == "data":
            t._data = v
        else:
            for _ in range(v):
                t._bump_version()


# --- verification: the plan, replayed on copies, must match the eager run bit for bit ----

def _shadow(plan, datas):
    """Copies of every buffer the plan touches, as the call starts."""
    shadow = {}
    for i in plan.used:
        d = datas[i]
        r = root(d)
        shadow[i] = (r.copy(order="K"), address(d) - address(r))
    for rid, r in plan.statics.items():
        shadow[("s", rid)] = (r.copy(order="K"), 0)
    return shadow


def _same_bits(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _same_result(x, y):
    if isinstance(x, Tensor):
        return isinstance(y, Tensor) and _same_bits(x._data, y._data)
    if isinstance(x, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(
            _same_result(a, b) for a, b in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same_result(x[k], y[k]) for k in x)
    return x == y


def _verify(plan, shadow, tensors, result):
    try:
        res, effects = plan.run(None, shadow, watch=True)
    except Exception:
        return False
    if not plan.guards_first:
        return False
    if not _same_result(result, res):
        return False
    replaced = {(i, kind): v for i, kind, v in effects}
    for i in plan.used:
        if (i, "data") in replaced:
            continue
        d = plan.externals[i]
        now = _view(shadow[i], 0, d.shape, d.strides, d.dtype)
        if not _same_bits(tensors[i]._data, now):
            return False
    for (i, kind), v in replaced.items():
        t = tensors[i]
        if kind == "grad":
            if (v is None) != (t._grad is None) or (v is not None and not _same_bits(
                    t._grad._data, v)):
                return False
        elif kind == "data" and not _same_bits(t._data, v):
            return False
    return True


def compile(model=None, *, fullgraph=False, dynamic=None, backend="numgrad", mode=None,  # noqa: A001
            options=None, disable=False):
    """PyTorch's ``torch.compile`` signature. ``model`` is a function or an ``nn.Module``;
    used as a decorator with or without arguments. There is one backend and one mode, and
    every trace is specialised to its shapes: ``dynamic``, ``backend`` and ``mode`` are
    accepted for PyTorch code and change nothing. ``options={"fuse": False}`` replays every
    kernel call from Python instead of through the generated interpreter."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    from numgrad.nn.modules.module import Module
    kw = {"fullgraph": fullgraph, "dynamic": dynamic, "disable": disable,
          "fuse": bool((options or {}).get("fuse", True))}
    if isinstance(model, Module):
        return _compile_module(model, **kw)
    if not callable(model):
        raise RuntimeError(f"compile: expected a callable, got {type(model).__name__}")
    return CompiledFunction(model, **kw)


def _compile_module(module, **kw):
    from numgrad.nn.modules.module import Module

    class OptimizedModule(Module):
        """``module`` whose calls go through the compiled function; as in PyTorch, the
        module is ``_orig_mod`` (so state dict keys start with ``_orig_mod.``)."""

        def __init__(self, mod, compiled):
            super().__init__()
            self._orig_mod = mod
            object.__setattr__(self, "_compiled", compiled)

        def __call__(self, *args, **kwargs):
            return self._compiled(*args, **kwargs)

        def forward(self, *args, **kwargs):
            return self._orig_mod(*args, **kwargs)

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._orig_mod, name)

        def __getitem__(self, idx):
            return self._orig_mod[idx]

        def __len__(self):
            return len(self._orig_mod)

        def __iter__(self):
            return iter(self._orig_mod)

    return OptimizedModule(module, CompiledFunction(module, **kw))
