"""A recorded tape turned into a replayable plan, and its replay.

Every array a recorded call received is located once, as a view (byte offset, shape, strides,
dtype) of one of:

* an *external*: the data of a tensor the function can reach (argument, parameter, gradient,
  optimizer state), found again at each call by its position in ``state.reachable``;
* a *returned* array: what an earlier call handed back (a copy made outside Numba, say),
  bound when that call runs again;
* a *fresh* buffer: memory made during the trace that the caller can see afterwards (the
  output, a new ``.grad``): made anew at each call, so no two calls share it;
* a *static* buffer: memory made during the trace that nobody outside sees (intermediates,
  constants): kept by the plan and reused by every call;
* a *pooled* buffer: in the forward form (``forward.py``), memory the forward made and only
  its backward reads: every pooled buffer lies at its offset in one arena that the caller
  allocates per call and passes to ``run``.

Replaying calls each kernel again, in the recorded order, on views rebuilt only where an
array moved. Views are made with ``np.ndarray(buffer=...)``, which checks that every view
lies inside its buffer; the plan also refuses an array that reaches outside the tensor it was
located in, so a replay can only touch memory the eager run touched. Runs of calls whose
arrays are contiguous views of known buffers are replayed by one generated call instead
(``fuse.py``), on the same views rebuilt from the buffers' addresses.
"""

import zlib

import numpy as np

from numgrad._compile.fuse import POOL, Fused, Region
from numgrad._compile.schedule import span
from numgrad._compile.tape import _same_bytes, address, root
from numgrad.tensor import _wrap


class Unplannable(Exception):
    """The trace holds something a plan cannot replay."""


class GuardFailed(Exception):
    """A value the trace depended on came out differently: this call must run eagerly."""


_NO_GUARD = object()
ROLLBACK_BYTES = 1 << 16  # state written before a check that a replay may save and restore


class Pool:
    """Buffers of a trace laid out in one arena (``nbytes``), each at its ``offsets[id(root)]``
    (64-byte aligned): a plan that makes them anew at every call allocates one arena, and its
    buffers are one entry of the address table. The buffers that are constants of the trace
    (``tape.constant``: zeros a kernel accumulates into, say) start every arena with their
    content (``init``: [(offset, bytes)])."""

    def __init__(self, roots, tape):
        self.offsets, n = {}, 0
        self.init = []
        for r in roots:
            self.offsets[id(r)] = n
            if id(r) in tape.constants:
                snap = tape.first.get(id(r))
                if snap is None:
                    raise Unplannable("a constant of more than 16 MiB is written by a kernel")
                self.init.append((n, snap.ravel(order="A").view(np.uint8)))  # memory order
            n += -(-r.nbytes // 64) * 64
        self.nbytes = max(n, 64)

    def arena(self, verify=False):
        a = np.empty(self.nbytes, np.uint8)
        if verify:
            a.fill(255)  # NaN in every float type: a verification run must not pass on stale
        for off, content in self.init:
            a[off:off + content.size] = content
        return a

    def reset(self, a):
        """A released node's arena, made ready for the next call."""
        for off, content in self.init:
            a[off:off + content.size] = content
        return a


def poolable(r):
    """Whether ``r``'s memory is exactly its items (so it can live at an offset of an arena)."""
    return r.flags.c_contiguous or r.flags.f_contiguous


def _extent(a):
    """[low, high) bytes ``a`` touches; None when it is empty."""
    return span(address(a), a.shape, a.strides, a.itemsize)


def _threads():
    import numba
    return numba.get_num_threads()


def _view(base, off, shape, strides, dtype):
    return np.ndarray(shape, dtype, base[0], base[1] + off, strides)


_OUTSIDE = ("a kernel ({}) read values computed outside the recorded kernels (from tensor "
            "values in Python, or a tensor the function reaches in a way the guard does not "
            "follow)")


class _Spec:
    """Where one array lives: the key of its buffer and the view of it."""

    __slots__ = ("key", "off", "shape", "strides", "dtype", "array")

    def __init__(self, key, off, array):
        self.key, self.off, self.array = key, off, array
        self.shape, self.strides, self.dtype = array.shape, array.strides, array.dtype

    def build(self, bases):
        base = bases.get(self.key)
        if base is None:
            return self.array
        return _view(base, self.off, self.shape, self.strides, self.dtype)


class Locator:
    """Assigns every array of a trace to its buffer (see the module docstring)."""

    def __init__(self, externals, pool=None, outside=None):
        self.externals = externals  # the reachable tensors' data at trace start
        self.outside = outside or {}  # what the tape saw read before anything wrote it
        self.pool = {} if pool is None else pool.offsets
        self._by_root = {}
        for i, d in enumerate(externals):
            if d.__class__ is np.ndarray:
                self._by_root.setdefault(id(root(d)), []).append(i)
        self.returned = {}  # id(root) -> (key, the returned array)
        self.statics = {}  # id(root) -> root

    def locate(self, a):
        r = root(a)
        ext = self._by_root.get(id(r))
        span = _extent(a)
        if ext is not None:
            if span is None:
                return _Spec(("c",), 0, a)
            for i in ext:
                d = self.externals[i]
                dspan = _extent(d)
                if dspan is not None and dspan[0] <= span[0] and span[1] <= dspan[1]:
                    return _Spec(i, address(a) - address(d), a)
            raise Unplannable("a kernel read memory outside the tensor it was given")
        if id(r) in self.outside:
            raise Unplannable(_OUTSIDE.format(self.outside[id(r)]))
        off = self.pool.get(id(r))
        if off is not None:
            return _Spec(POOL, off + address(a) - address(r), a)
        ret = self.returned.get(id(r))
        if ret is not None:
            return _Spec(ret[0], address(a) - address(ret[1]), a)
        self.statics[id(r)] = r
        return _Spec(("s", id(r)), address(a) - address(r), a)

    def returns(self, key, a):
        r = root(a)
        if id(r) in self._by_root or id(r) in self.returned or id(r) in self.statics:
            return False  # handed back memory the plan already knows (a no-copy result)
        self.returned[id(r)] = (key, a)
        return True


def _describe(x, loc, detach):
    """The output structure of a function result: tensors become specs. A result that still
    requires grad can be replayed only as a detached tensor, when the function ran its own
    backward (the whole-step form). Arrays (a forward plan's saved buffers) stay arrays."""
    from numgrad.tensor import Tensor
    if x.__class__ is np.ndarray:
        return ("a", loc.locate(x))
    if isinstance(x, Tensor):
        if x._requires_grad and not detach:
            raise Unplannable("the function returns a tensor that requires grad")
        if x._data.__class__ is not np.ndarray:
            raise Unplannable("CUDA tensors")
        return ("t", loc.locate(x._data))
    if isinstance(x, (tuple, list)):
        return (type(x), [_describe(v, loc, detach) for v in x])
    if isinstance(x, dict):
        return (dict, {k: _describe(v, loc, detach) for k, v in x.items()})
    return ("v", x)


class Plan:
    """A replayable tape. ``run(datas)`` replays it on the reachable tensors' current data and
    returns the function's result and the effects on those tensors."""

    arena = None  # {rid: byte offset} of the statics that share memory (``reuse.py``)
    _gen = None  # (items, their count, the generated replay of them: ``_generate``)
    births = None  # {item index: [(static key, nbytes)]}: where each of them is first touched
    # constants a kernel writes that share the arena (``reuse.py``): {item index: [(static
    # key, content, whether it is all zero bytes)]}, their content put back just before the
    # item that first touches them instead of at the start of the replay
    late = None
    late_keys = frozenset()

    def __init__(self, calls, pre, post, result, tape, detach=False, fuse=True, pool=None,
                 reuse=False):
        """``calls`` from ``tape``; ``pre``/``post`` the reachable tensors' (data, grad,
        version) before and after the traced run; ``result`` what the function returned;
        ``fuse``: replay runs of kernel calls through one interpreter call (``fuse.py``);
        ``pool``: buffers laid out in one arena that the caller passes to ``run`` (a
        ``Pool``); ``reuse``: intermediates never alive at once share memory
        (``reuse.py``)."""
        from numba.core.registry import CPUDispatcher
        externals = [d for d, _, _ in pre]
        snapshots = tape.first
        loc = Locator(externals, pool, tape.outside)
        self.pool = pool
        # traced at one thread: a multithreaded kernel that has a serial twin computing the
        # same bits (``kernels._jit.serial_twin``) replays as that twin, which skips the
        # thread pool's launch (30-50 us per call at one thread: 3-4 ms of a GPT step)
        one_thread = _threads() == 1
        self.steps = []
        for k, (fn, args, kwargs, res) in enumerate(calls):
            if any(isinstance(v, np.ndarray) for v in kwargs.values()):
                raise Unplannable("a kernel took an array by keyword")
            specs = []
            for pos, a in enumerate(args):
                if a.__class__ is np.ndarray:
                    specs.append((pos, None, loc.locate(a)))
                elif a.__class__ in (tuple, list):
                    for j, b in enumerate(a):
                        if b.__class__ is np.ndarray:
                            specs.append((pos, j, loc.locate(b)))
                elif isinstance(a, np.ndarray):
                    raise Unplannable("an ndarray subclass reached a kernel")
            rets, guard = [], _NO_GUARD
            items = res if res.__class__ is tuple else (res,)
            plain = []
            for j, v in enumerate(items):
                if v.__class__ is np.ndarray:
                    key = ("r", k, j)
                    if loc.returns(key, v):
                        # a kernel's result may be shaped by values: checked like a guard
                        rets.append((j if res.__class__ is tuple else None, key, v.shape,
                                     v.dtype, fn.__class__ is CPUDispatcher))
                    plain.append(None)
                else:
                    plain.append(v)
            if any(v is not None for v in plain):
                guard = tuple(plain) if res.__class__ is tuple else plain[0]
            if one_thread:
                fn = getattr(fn, "_numgrad_serial", fn)
            self.steps.append((fn, tuple(args), kwargs, specs, rets, guard))
        self.result = _describe(result, loc, detach)
        escaping = _specs(self.result)
        self.effects = []
        for i, ((d0, g0, v0), (d1, g1, v1)) in enumerate(zip(pre, post)):
            if d1 is not d0:
                if d1.__class__ is not np.ndarray:
                    raise Unplannable("CUDA tensors")
                self.effects.append((i, "data", loc.locate(d1)))
            if g1 is not g0:
                if g1 is not None and (g1._requires_grad or g1._grad_fn is not None
                                       or g1._data.__class__ is not np.ndarray):
                    raise Unplannable("the function leaves a gradient with history or on CUDA")
                self.effects.append((i, "grad", None if g1 is None else loc.locate(g1._data)))
            if v1 != v0:
                self.effects.append((i, "version", v1 - v0))
        # effects that need no view of this call's buffers: one list for every call
        self._fixed_effects = None if any(kind != "version" and spec is not None
                                          for _, kind, spec in self.effects) else self.effects
        escaping += [spec for _, kind, spec in self.effects if kind != "version" and spec]
        # statics the caller can see afterwards are made fresh at every call; a constant of
        # the trace (``tape.constant``) starts with its content
        self.fresh = []
        constants = tape.constants
        for key in dict.fromkeys(s.key for s in escaping if s.key.__class__ is tuple
                                 and s.key[0] == "s"):
            rid = key[1]
            if rid not in snapshots:  # no call saw it, and no factory made it
                raise Unplannable(_OUTSIDE.format("none"))
            init = None
            if rid in constants:
                init = snapshots[rid]
                if init is None:
                    raise Unplannable("a constant of more than 16 MiB is written by a kernel")
            self.fresh.append((key, loc.statics[rid], init))
        self.externals = externals
        self.used = sorted({s.key for s in escaping if s.key.__class__ is int}
                           | {s.key for step in self.steps for _, _, s in step[3]
                              if s.key.__class__ is int})
        self.statics = loc.statics
        # statics a kernel wrote during the trace: a right plan writes them again before it
        # reads them, so verification starts them as NaN bytes (``verify.shadow``); others
        # (constants made before any kernel saw them) keep their content
        self.written_statics = frozenset(
            rid for rid, r in loc.statics.items()
            if snapshots.get(rid) is not None and not _same_bytes(snapshots[rid], r))
        # constants a kernel writes (zeros it accumulates into) get their content back at the
        # start of every replay, as eager makes them anew
        fresh_keys = {key for key, _, _ in self.fresh}
        self.restore = []
        for rid, r in loc.statics.items():
            if rid in constants and ("s", rid) not in fresh_keys and (
                    rid in self.written_statics or snapshots.get(rid) is None):
                if snapshots.get(rid) is None:
                    raise Unplannable("a constant of more than 16 MiB is written by a kernel")
                self.restore.append((("s", rid), r, snapshots[rid]))
        self.guards_first = False  # set by a watched run (see ``run``)
        self.rollback = ()  # reachable tensors written before a check: saved at each replay
        # what ``dynamic.py`` reads to fit plans of several sizes: the steps in recorded
        # order (fusion reorders ``steps``) and the constants' content before any kernel ran
        # (kept up to 64 KiB: a larger one is no size's recipe there)
        self.raw_steps = self.steps
        self.constants = {}
        for rid in loc.statics:
            if rid in constants:
                snap = snapshots.get(rid)
                self.constants[rid] = snap if snap is not None and snap.nbytes <= 1 << 16 \
                    else None
        self.fused = None
        if fuse:
            fused = Fused(self, _NO_GUARD)
            self.fused = fused if fused.regions else None
        if reuse:
            from numgrad._compile.reuse import plan_memory
            plan_memory(self)

    # ---------------------------------------------------------------------------------------
    def bases(self, datas, shadow=None, arena=None):
        """The buffers that moved since the trace: {key: (buffer, byte offset)}."""
        bases = {} if shadow is None else dict(shadow)
        if arena is not None:
            bases[POOL] = (arena, 0)
        if shadow is None:
            for i in self.used:
                d = datas[i]
                if d is not self.externals[i]:
                    if d.flags.c_contiguous:
                        bases[i] = (d, 0)
                        continue
                    r = root(d)
                    if not (r.flags.c_contiguous or r.flags.f_contiguous):
                        raise GuardFailed  # memory NumPy cannot view anew: run eagerly
                    bases[i] = (r, address(d) - address(r))
        for key, r, init in self.fresh:
            if init is not None:
                buf = init.copy()
            else:
                buf = np.empty_like(r)
                if shadow is not None and buf.dtype.kind == "f":
                    buf.fill(np.nan)  # a verification run must not pass on stale memory
            bases[key] = (buf, 0)
        for key, r, init in self.restore:
            if key in self.late_keys:
                continue  # put back where it is first touched (``_steps``)
            base = bases.get(key)
            np.copyto(r if base is None else _view(base, 0, r.shape, r.strides, r.dtype), init)
        return bases

    def call(self, tensors):
        """Replay on the reachable ``tensors``, leave the effects on them, return the result."""
        result, effects = self.run([t._data for t in tensors])
        apply_effects(tensors, effects)
        return result

    def run(self, datas, shadow=None, watch=False, arena=None):
        """Replay; returns (result, [(tensor index, kind, value)]). Raises ``GuardFailed``.
        ``arena``: the buffer of the plan's pool, when it has one (else in ``shadow``).

        ``watch`` (on a verification run) sets ``guards_first``: whether a failed check can
        hand the call to eager with nothing changed: every check on a value comes before the
        first step that changes a tensor the caller holds, or the tensors changed before the
        last check are few bytes (``ROLLBACK_BYTES``; BatchNorm's running statistics before
        cross_entropy's target check) and are saved at each replay (``rollback``), to be
        put back when a check fails."""
        bases = self.bases(datas, shadow, arena)
        fused = self.fused
        addr = None if fused is None else fused.table(bases)
        if watch:
            exts = [bases[i][0] for i in self.used]
            sums = [_digest(b) for b in exts]
            touched = set()
            self._steps(fused, bases, addr, (exts, sums, touched))
            self.rollback = tuple(self.used[n] for n in sorted(touched))
            self.guards_first = sum(self.externals[i].nbytes for i in self.rollback) \
                <= ROLLBACK_BYTES
        elif self.rollback and shadow is None:
            saved = [(datas[i], datas[i].copy()) for i in self.rollback]
            try:
                self._steps(fused, bases, addr, None)
            except GuardFailed:
                for d, copy in saved:
                    np.copyto(d, copy)
                raise
        else:  # a run on shadow copies (a check) takes the loop: it reads every buffer
            # from ``bases``, where generated code keeps the plan's own static buffers
            self._steps(fused, bases, addr, None, generated=shadow is None)
        effects = self._fixed_effects
        if effects is None:
            effects = [(i, kind, spec if kind == "version" or spec is None
                        else spec.build(bases)) for i, kind, spec in self.effects]
        result = self.result
        return (result[1] if result[0] == "v" else _rebuild(result, bases)), effects

    def _steps(self, fused, bases, addr, watch, generated=True):
        """Run the steps; ``watch``: (buffers, their digests at the start, the set of indices
        of those changed before a check, filled here). A plain replay runs them through
        generated straight-line code (``_generate``), the same calls on the same views."""
        items = self.steps if fused is None else fused.items
        if watch is None and generated and GENERATED:
            gen = self._gen
            if gen is None or gen[0] is not items or gen[1] != len(items):
                fresh = {key for key, _, _ in self.fresh}
                late = {t: [(self.statics[key[1]], init, zero) for key, init, zero in v]
                        for t, v in (self.late or {}).items()}
                gen = self._gen = (items, len(items), _generate(items, fresh, late))
            gen[2](bases, addr)
            return
        # a check (watched, or on shadow copies): memory an intermediate shares with earlier
        # ones starts as NaN bytes before the item that first touches it
        births = self.births if watch is not None or not generated else None
        late = self.late
        for t, step in enumerate(items):
            if watch is not None and step.__class__ is tuple and (
                    step[5] is not _NO_GUARD or any(r[4] for r in step[4])):
                exts, sums, touched = watch
                touched.update(n for n, (b, c) in enumerate(zip(exts, sums))
                               if n not in touched and _digest(b) != c)
            if births is not None and t in births:  # as if it were its own (``reuse.py``)
                for key, n in births[t]:
                    buf, off = bases[key]
                    buf[off:off + n] = 255
            if late is not None and t in late:
                for key, init, zero in late[t]:
                    r = self.statics[key[1]]
                    base = bases.get(key)
                    _put(r if base is None else _view(base, 0, r.shape, r.strides, r.dtype),
                         init, zero)
            if step.__class__ is Region:
                step.interpret(step.prog, step.numbers, addr)
                continue
            _one(step, bases)


GENERATED = True  # plain replays run generated code (``_generate``); False: the loop


def _put(a, init, zero):
    """A constant's content ``init`` written back into ``a`` (``zero``: it is all zero bytes,
    written without reading ``init``)."""
    if zero:
        a.fill(0)
    else:
        np.copyto(a, init)


def _generate(items, fresh, late=None):
    """The replay of ``items`` (a plan's steps, or its fused items) as one generated Python
    function ``replay(bases, addr)``: for each step, the kernel called on its recorded
    arguments, held as globals of the function, with a view rebuilt only for an array whose
    buffer can be in ``bases`` at a plain replay (a reachable tensor's data, a ``fresh``
    buffer, the pool, an earlier call's result), then its results checked as
    ``Plan._steps`` checks them. Other steps (keyword arguments, tuples of arrays) run
    through ``_one``. The loop of ``_steps`` spent about 1 us per step deciding this again
    at every replay; the generated code decides it once. A host function with a cheaper
    twin (``_faster``) calls the twin; ``np.ascontiguousarray`` that handed back its own
    input (no array bound) is left out. ``late``: {item index: [(array, content, whether
    it is all zero bytes)]}, constants put back just before that item (``Plan.late``)."""
    names = {"NDARRAY": np.ndarray, "RETS": _rets, "SAME": _same, "ONE": _one,
             "GUARDFAILED": GuardFailed, "COPYTO": np.copyto}
    lines = ["def replay(B, addr):"]
    for t, step in enumerate(items):
        for n, (a, init, zero) in enumerate((late or {}).get(t, ())):
            names[f"L{t}_{n}"], names[f"V{t}_{n}"] = a, init
            lines.append(f"    L{t}_{n}.fill(0)" if zero else f"    COPYTO(L{t}_{n}, V{t}_{n})")
        if step.__class__ is Region:
            names[f"I{t}"], names[f"P{t}"], names[f"N{t}"] = (step.interpret, step.prog,
                                                               step.numbers)
            lines.append(f"    I{t}(P{t}, N{t}, addr)")
            continue
        fn, args, kwargs, specs, rets, guard = step
        if fn is np.ascontiguousarray and not rets and guard is _NO_GUARD:
            continue  # it returned memory the plan knows (its own input): nothing to do
        fn = _faster().get(fn, fn)
        if kwargs or any(j is not None for _, j, _ in specs):
            names[f"S{t}"] = (fn,) + step[1:]
            lines.append(f"    ONE(S{t}, B)")
            continue
        names[f"F{t}"] = fn
        at = {pos: spec for pos, _, spec in specs}
        argv = []
        for pos, a in enumerate(args):
            names[f"A{t}_{pos}"] = a
            spec = at.get(pos)
            key = None if spec is None else spec.key
            if key is None or not (key.__class__ is int or key == POOL or key[0] == "r"
                                   or key in fresh):
                argv.append(f"A{t}_{pos}")  # a static buffer or a number: as recorded
                continue
            names[f"K{t}_{pos}"], names[f"D{t}_{pos}"] = key, spec.dtype
            lines.append(f"    b = B.get(K{t}_{pos})")
            lines.append(f"    x{pos} = A{t}_{pos} if b is None else NDARRAY({spec.shape!r}, "
                         f"D{t}_{pos}, b[0], b[1] + {spec.off}, {spec.strides!r})")
            argv.append(f"x{pos}")
        checked = rets or guard is not _NO_GUARD
        lines.append(f"    {'r = ' if checked else ''}F{t}({', '.join(argv)})")
        if rets:
            names[f"R{t}"] = rets
            lines.append(f"    RETS(r, R{t}, B)")
        if guard is not _NO_GUARD:
            names[f"G{t}"] = guard
            lines.append(f"    if not SAME(r, G{t}): raise GUARDFAILED")
    lines.append("    return None")
    exec(compile("\n".join(lines) + "\n", "<numgrad.compile replay>", "exec"), names)
    return names["replay"]


_FASTER = {}


def _faster():
    """{host function: what a replay calls instead}: the same result, bit for bit, cheaper."""
    if not _FASTER:
        from numgrad.ops import indexing
        _FASTER[indexing._stack_indices] = _stack_indices
    return _FASTER


def _stack_indices(arrays, bshape):
    """``ops.indexing._stack_indices``: the int64 (len(arrays), prod(bshape)) array of
    ``arrays`` broadcast to ``bshape``, each written by one copy (as the assignment there,
    an unsafe cast) into its row viewed with that shape (``broadcast_to`` and a reshaping
    copy took about 25 us per call: two calls per generated token)."""
    m = 1
    for n in bshape:
        m *= n
    idx = np.empty((len(arrays), m), np.int64)
    for j, a in enumerate(arrays):
        np.copyto(idx[j].reshape(bshape), a, casting="unsafe")
    return idx


def _rets(res, rets, bases):
    """Bind the arrays a call returned (``Plan._steps``)."""
    for j, key, shape, dtype, _ in rets:
        v = res if j is None else res[j]
        if v.shape != shape or v.dtype != dtype:
            raise GuardFailed  # shaped by values that changed: eager will say how
        r = root(v)
        bases[key] = (r, address(v) - address(r))


def _one(step, bases):
    """One recorded call: its arguments with views rebuilt on ``bases``, its results bound
    and checked (the loop of ``Plan._steps``, and generated code's calls with keyword
    arguments or arrays in tuples)."""
    fn, args, kwargs, specs, rets, guard = step
    if bases and specs:
        a = None
        for pos, j, spec in specs:
            base = bases.get(spec.key)
            if base is not None:
                if a is None:
                    a = list(args)
                v = _view(base, spec.off, spec.shape, spec.strides, spec.dtype)
                if j is None:
                    a[pos] = v
                else:
                    inner = list(a[pos])
                    inner[j] = v
                    a[pos] = type(args[pos])(inner)
        res = fn(*(args if a is None else a), **kwargs)
    else:
        res = fn(*args, **kwargs)
    _rets(res, rets, bases)
    if guard is not _NO_GUARD and not _same(res, guard):
        raise GuardFailed


def apply_effects(tensors, effects):
    for i, kind, v in effects:
        t = tensors[i]
        if kind == "grad":
            t._grad = None if v is None else _wrap(v)
        elif kind == "data":
            t._data = v
        else:
            vc = t._vc
            if vc.__class__ is dict:  # a plain version counter (not None, not inference)
                vc[0] += v
            else:
                for _ in range(v):
                    t._bump_version()


def _digest(b):
    return zlib.crc32(b if b.flags.c_contiguous else b.tobytes(order="K"))


def _specs(d):
    """The specs of the tensors in a described result."""
    if d[0] in ("t", "a"):
        return [d[1]]
    if d[0] in (tuple, list):
        return [s for v in d[1] for s in _specs(v)]
    if d[0] is dict:
        return [s for v in d[1].values() for s in _specs(v)]
    return []


def _same(res, guard):
    items = res if res.__class__ is tuple else (res,)
    want = guard if res.__class__ is tuple else (guard,)
    for v, w in zip(items, want):
        if w is not None and not (v == w):
            return False
    return True


def _rebuild(d, bases):
    kind = d[0]
    if kind == "t":
        return _wrap(d[1].build(bases))
    if kind == "a":
        return d[1].build(bases)
    if kind in (tuple, list):
        return kind(_rebuild(v, bases) for v in d[1])
    if kind is dict:
        return {k: _rebuild(v, bases) for k, v in d[1].items()}
    return d[1]
