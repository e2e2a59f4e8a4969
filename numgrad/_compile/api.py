"""``numgrad.compile(fn_or_module)``: trace a function's kernels once, replay them after.

A compiled function returns eager's results or runs eagerly (docs/compile.md).

A call of the compiled function looks up its signature (``state.signature``; once a
signature's plan is verified, its generated guard, ``guard.py``, checks a call first). The
first call
with a new signature runs eagerly while a tape records every kernel it launches (the forward,
``loss.backward()``, ``opt.step()``, all of it) and a plan is built from the tape. The next
call with that signature runs eagerly once more, and the plan is replayed beside it on copies
of the same inputs: only a plan that gives bit-identical results, gradients and state is
kept (the random generators it draws from start the replay from their state before the
call). From then on calls replay the plan: the kernels run in the recorded order on the
current data, and no Tensor, Node or engine walk is made.

Signatures that differ only in tensor sizes (a sequence growing by one token per call) are
one program: after traces at three sizes, its plans are fitted as one and later sizes get
their plan from the fit, checked by a light run instead of traced (``dynamic.py``).

A function that returns tensors that still require grad (``loss = f(x)``, ``model(x)``) is
the forward form (``forward.py``): its trace also records the backward, and a replayed call
returns tensors whose backward is one compiled node.

On CUDA tensors the trace records the numba.cuda launches, device allocations and host reads
instead (``cuda_plan.py``), in both forms (``forward.CudaForwardPlan``).

A call that cannot be replayed runs eagerly, always with eager's result: Python reading tensor
values (``.item()``, ``if t > 0``), values computed outside the recorded work, hooks, state
no guard can see (Python's random generators, the clock), past the recompile limits; and a
call made while another thread replays. ``fullgraph=True`` turns that into an error.
"""

import functools
import os
import threading
import warnings

import numpy as np

from numgrad import _hook
from numgrad._compile import dynamic as _dynamic
from numgrad._compile import forward as _forward
from numgrad._compile import guard as _guard_module
from numgrad._compile import tape as _tape
from numgrad._compile.cuda_plan import CudaPlan, involved
from numgrad._compile.plan import GuardFailed, Plan, Unplannable
from numgrad._compile.state import (
    MAX_ITEMS,
    TooMuchState,
    reachable,
    shape_free,
    signature,
)
from numgrad._compile.verify import replay, shadow
from numgrad.tensor import Tensor

CHECK_GUARDS = os.environ.get("NUMGRAD_CHECK_GUARDS") == "1"
RECOMPILE_LIMIT = 8  # programs traced per compiled function (torch's recompile_limit)
SIZES_LIMIT = 256  # sizes met per program (traced, or instantiated from a fit: dynamic.py)
_ATTEMPTS = 3  # traces of one signature that may fail to verify before it stays eager


class CompileError(RuntimeError):
    """``fullgraph=True`` and the function cannot be replayed as one graph."""


class _Entry:
    __slots__ = ("plan", "verified", "eager", "failures", "why", "fuse", "guard", "sizes",
                 "family", "pending", "checking", "sig")

    def __init__(self, fuse):
        self.fuse = fuse  # off after a fused plan failed to verify: the next one is not fused
        self.plan = None
        self.verified = False
        self.eager = False
        self.failures = 0
        self.why = None
        self.guard = None  # the signature's generated guard (``guard.py``), once verified
        self.sizes = None  # its tensors' sizes (``dynamic.sizes_of``)
        self.family = None  # the ``dynamic.Family`` of its program
        self.pending = None  # the family whose fitted plan this entry's next call verifies
        self.checking = False  # its plan, made from a verified fit, awaits its light check
        self.sig = None


class CompiledFunction:
    """What ``numgrad.compile(fn)`` returns: call it as ``fn``."""

    def __init__(self, fn, fullgraph=False, dynamic=None, disable=False, fuse=True):
        self._orig_fn = fn
        self._fuse = fuse
        self._dynamic = dynamic is not False  # fit plans of several sizes as one (dynamic.py)
        self._families = {}  # signature without sizes -> its dynamic.Family
        # what was compiled: per-size traces that built a plan, fits tried, plans made from
        # a verified fit (``stats()``)
        self._stats = {"traces": 0, "fits": 0, "instantiated": 0}
        self._fullgraph = fullgraph
        self._disable = disable
        self._cache = {}  # signature -> _Entry
        self._programs = {}  # signature without sizes -> how many signatures have it
        self._last = None  # (signature, entry) of the last call
        self._warned = False
        # one call at a time traces or replays (a plan's intermediates are shared): a call
        # from another thread meanwhile, or a recursive one, runs eagerly
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        fn = self._orig_fn
        if self._disable or _hook.TAPE is not None:
            return fn(*args, **kwargs)
        if not self._lock.acquire(blocking=False):
            return fn(*args, **kwargs)
        try:
            return self._call(fn, args, kwargs)
        finally:
            self._lock.release()

    def _call(self, fn, args, kwargs):
        last = self._last
        if last is not None:
            fast = last[1].guard
            if fast:
                tensors = fast(args, kwargs, fn)
                if tensors is not None:
                    if CHECK_GUARDS:
                        _check_guard(fn, args, kwargs, last[0], tensors)
                    try:
                        return last[1].plan.call(tensors)
                    except GuardFailed:
                        return fn(*args, **kwargs)
            family = last[1].family
            if family is not None and family.guard:
                # the guard of every size of the program: which sizes this call has
                hit = family.guard(args, kwargs, fn)
                entry = None if hit is None else family.entries.get(hit[1])
                if entry is not None and entry.verified:
                    if CHECK_GUARDS:
                        _check_guard(fn, args, kwargs, entry.sig, hit[0])
                    self._last = (entry.sig, entry)
                    try:
                        return entry.plan.call(hit[0])
                    except GuardFailed:
                        return fn(*args, **kwargs)
        try:
            reach = reachable(fn, args, kwargs)
        except TooMuchState as exc:
            self._warn(str(exc) or f"it reaches more than {MAX_ITEMS} objects to guard")
            return fn(*args, **kwargs)
        sig = signature(reach)
        last = self._last
        if last is not None and last[0] == sig:  # comparing is cheaper than hashing
            entry = last[1]
        else:
            entry = self._cache.get(sig)
            if entry is None:
                program = shape_free(sig, reach)
                n = self._programs.get(program, 0)
                if not n and len(self._programs) >= RECOMPILE_LIMIT:
                    self._warn(f"hit the recompile limit ({RECOMPILE_LIMIT}); calls with "
                               "further signatures run eagerly")
                    return fn(*args, **kwargs)
                if n >= SIZES_LIMIT:
                    self._warn(f"met more than {SIZES_LIMIT} tensor sizes; calls with further "
                               "sizes run eagerly")
                    return fn(*args, **kwargs)
                self._programs[program] = n + 1
                entry = self._cache[sig] = _Entry(self._fuse)
                entry.sig = sig
                if self._dynamic:
                    self._sized(entry, program, sig, reach)
            self._last = (sig, entry)
        if entry.verified:
            if entry.guard is None:
                family = entry.family
                if family is not None and family.verified:  # one guard for all its sizes
                    if family.guard is None:
                        family.guard = _guard(args, kwargs, fn, sig, sizeless=True)
                    entry.guard = False
                else:
                    entry.guard = _guard(args, kwargs, fn, sig)
            try:
                return entry.plan.call(reach.tensors)
            except GuardFailed:
                return fn(*args, **kwargs)
        if entry.eager:
            return fn(*args, **kwargs)
        if entry.checking:
            return self._check(entry, reach, args, kwargs)
        return self._trace(entry, reach, args, kwargs)

    def stats(self):
        """What this function compiled: ``traces`` (calls traced into a per-size plan),
        ``fits`` (plans of several sizes fitted as one) and ``instantiated`` (plans made for a
        new size from a verified fit, without a trace)."""
        return dict(self._stats)

    def _sized(self, entry, program, sig, reach):
        """A new signature: note its sizes in its program's family; a plan for them from the
        family's verified fit, or a fitted plan this call verifies (``dynamic.py``)."""
        family = self._families.get(program)
        if family is None:
            family = self._families[program] = _dynamic.Family()
        sizes = _dynamic.sizes_of(sig, reach)
        if sizes is None:
            return
        entry.family, entry.sizes = family, sizes
        family.entries[sizes] = entry
        datas = [t._data for t in reach.tensors]
        if family.verified:
            plan = family.instantiate(sizes, datas)
            if plan is not None:
                entry.plan, entry.checking = plan, True
                self._stats["instantiated"] += 1
        else:
            plan = family.propose(sizes, datas, fused=entry.fuse and family.fuse)
            if plan is not None:
                entry.plan, entry.pending = plan, family
                self._stats["fits"] += 1

    def _check(self, entry, reach, args, kwargs):
        """The first call at new sizes of a plan made from a verified fit: it runs eagerly on
        a light tape (calls and where arrays come from, no copies), which must be that plan
        (``dynamic.check``); then its next calls replay it. Else the next call traces."""
        tensors = reach.tensors
        pre = [(t._data, t._grad, t._version) for t in tensors]
        opt_before = [_python_state(o) for o in reach.optimizers]
        entry.checking = False
        t = _tape.start(light=True)
        t.known.update(id(_tape.root(d)) for d, _, _ in pre if d.__class__ is np.ndarray)
        try:
            result = self._orig_fn(*args, **kwargs)
            post = [(t_._data, t_._grad, t_._version) for t_ in tensors]
        finally:
            _tape.stop()
        ok = not _forward.needs_backward(result) and not any(
            _python_state_changed(b, _python_state(o))
            for b, o in zip(opt_before, reach.optimizers))
        if ok and _dynamic.check(entry.plan, t, pre, post, result):
            entry.verified = True
        else:
            entry.plan = None
            entry.family.missed()
        return result

    # ---------------------------------------------------------------------------------------
    def _trace(self, entry, reach, args, kwargs):
        tensors = reach.tensors
        pre = [(t._data, t._grad, t._version) for t in tensors]
        copies = None
        if isinstance(entry.plan, (CudaPlan, _forward.CudaForwardPlan)):
            copies = entry.plan.shadow([d for d, _, _ in pre])
        elif entry.plan is not None:
            plan = entry.plan.fwd if isinstance(entry.plan, _forward.ForwardPlan) else \
                entry.plan
            copies = shadow(plan, [d for d, _, _ in pre])
        # the generators the plan draws from: its verification replays from their state now
        gens = [] if entry.plan is None else entry.plan.generators
        gens_before = [g._snapshot() for g in gens]
        opt_before = [_python_state(o) for o in reach.optimizers]
        start = _forward.mark()
        rec = None
        t = _tape.start()
        t.known.update(id(_tape.root(d)) for d, _, _ in pre if d.__class__ is np.ndarray)
        try:
            result = self._orig_fn(*args, **kwargs)
            post = [(t_._data, t_._grad, t_._version) for t_ in tensors]
            split = len(t.calls)
            cuda = involved(t.calls, pre)
            if not t.ran_backward and not t.breaks and _forward.needs_backward(result):
                # the forward form: the backward is traced too, on the same tape
                try:
                    rec = _forward.record(result, tensors, start)
                except Exception as exc:  # the eager backward will raise it, if it runs
                    rec = f"its backward raised {type(exc).__name__}"
        finally:
            _tape.stop()
        why = list(t.breaks)
        if isinstance(rec, str):
            why.append(rec)
        if any(_python_state_changed(b, _python_state(o))
               for b, o in zip(opt_before, reach.optimizers)):
            why.append("the optimizer's Python state changes at every step")
        if why:
            return self._give_up(entry, "; ".join(why), result)
        if copies is not None:
            gens_after = [g._snapshot() for g in gens]
            for g, snap in zip(gens, gens_before):
                g._restore(snap)
            try:
                if isinstance(entry.plan, CudaPlan):
                    ok = rec is None and entry.plan.verify(copies, tensors, result)
                elif isinstance(entry.plan, (_forward.ForwardPlan, _forward.CudaForwardPlan)):
                    ok = rec is not None and entry.plan.verify(copies, tensors, result, rec)
                else:
                    ok = rec is None and replay(entry.plan, copies, tensors, result)[0]
                ok = ok and all(_same_draws(g._snapshot(), snap)
                                for g, snap in zip(gens, gens_after))
            finally:
                for g, snap in zip(gens, gens_after):
                    g._restore(snap)
            family, entry.pending = entry.pending, None
            if family is not None:
                # a fitted plan: its replay was eager's, and this call's own trace must be it
                ok = ok and not cuda and rec is None and _confirm(family, entry.plan, t, pre,
                                                                  post, result)
                if ok:
                    entry.verified = True
                    return result
                if entry.plan.fused is not None:
                    family.fuse = False  # its next fit replays step by step
            elif ok:
                entry.verified = True
                return result
            else:
                entry.failures += 1
                if entry.plan.fused is not None:
                    entry.fuse = False
        try:
            if cuda and rec is not None:
                plan = _forward.CudaForwardPlan(t.calls, split, pre, post, result, rec,
                                                fuse=entry.fuse,
                                                trusted=set(t.constants) | t.produced)
            elif cuda:
                plan = CudaPlan(t.calls, pre, post, result, detach=t.ran_backward, fuse=entry.fuse,
                                trusted=set(t.constants) | t.produced)
            elif rec is not None:
                plan = _forward.ForwardPlan(t.calls, split, pre, post, result, t, rec,
                                            fuse=entry.fuse)
            else:
                plan = Plan(t.calls, pre, post, result, t, detach=t.ran_backward,
                            fuse=entry.fuse, reuse=True)
        except Unplannable as exc:
            return self._give_up(entry, str(exc), result)
        if entry.failures >= _ATTEMPTS:
            return self._give_up(entry, "its replay did not match the eager run", result)
        plan.generators = list(t.generators.values())
        entry.plan = plan
        self._stats["traces"] += 1
        if entry.family is not None:
            entry.family.add(entry.sizes, entry)
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

    def _warn(self, why):
        if self._fullgraph:
            raise CompileError(f"numgrad.compile(fullgraph=True): cannot capture "
                               f"{_name(self._orig_fn)} as one graph: {why}")
        if not self._warned:
            self._warned = True
            warnings.warn(f"numgrad.compile: {_name(self._orig_fn)} runs eagerly ({why})",
                          stacklevel=4)


def _confirm(family, plan, t, pre, post, result):
    """Whether the trace ``t`` of a call that verified the fitted ``plan`` is that plan."""
    try:
        traced = Plan(t.calls, pre, post, result, t, detach=t.ran_backward, fuse=False)
    except Unplannable:
        return False
    return family.confirm(plan, traced)


def _guard(args, kwargs, fn, sig, sizeless=False):
    """The generated guard of a verified signature (of its program, ``sizeless``), or False
    when it cannot be written (the full walk then guards every call)."""
    try:
        return _guard_module.build(args, kwargs, fn, sig, sizeless)
    except Exception:
        return False


def _check_guard(fn, args, kwargs, sig, tensors):
    """NUMGRAD_CHECK_GUARDS=1 (the test suite): a generated guard's hit must be the full
    walk's verdict."""
    reach = reachable(fn, args, kwargs)
    if signature(reach) != sig or len(reach.tensors) != len(tensors) or any(
            a is not b for a, b in zip(reach.tensors, tensors)):
        raise AssertionError("numgrad.compile: a generated guard accepted a call the full "
                             "walk gives another signature")


def _same_draws(a, b):
    """Whether two generator snapshots are the same state."""
    return a[1:] == b[1:] and (a[0] is None) == (b[0] is None) and (
        a[0] is None or np.array_equal(a[0], b[0]))


def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _python_state(opt):
    """The optimizer's per-parameter state that is not tensor data (step counts, ...). State
    made by this call (a first step) is not compared: it changes the signature instead."""
    return {id(p): {k: v for k, v in s.items() if not isinstance(v, Tensor)}
            for p, s in opt.state.items()}


def _python_state_changed(before, after):
    return any(after.get(k) != v for k, v in before.items())


def compile(model=None, *, fullgraph=False, dynamic=None, backend="numgrad", mode=None,  # noqa: A001
            options=None, disable=False):
    """PyTorch's ``torch.compile`` signature. ``model`` is a function or an ``nn.Module``;
    used as a decorator with or without arguments. There is one backend and one mode:
    ``backend`` and ``mode`` are accepted for PyTorch code and change nothing. Calls that
    differ only in tensor sizes get plans fitted across sizes after three traces
    (``dynamic.py``), as torch's automatic dynamic shapes; ``dynamic=False`` keeps one plan
    per size. ``options={"fuse": False}`` replays every kernel call from Python instead of
    through the generated interpreter."""
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
