"""One plan for every size: plans traced at several sizes of one program, generalised.

A growing sequence (token-by-token generation) calls a compiled function with tensors whose
sizes change at every call while everything else stays: the same program (``state.
shape_free``). The plans traced at three sizes are compared: when they are the same steps
(the same kernels, in the same order, on the same buffers, with the same numbers other than
integers) and differ only in integers (sizes, strides, offsets, loop counts, reshape
targets), each integer is fitted as a polynomial in one size ``L`` (the first size that
differs between the three: the sequence length), of degree two at most (the interpolation
through the three traces: ``L * L`` for attention scores). The tensors' sizes and strides
are fitted too, so a call whose sizes are not the fitted ones at its ``L`` is no variant of
the family. Constants the traces made from sizes (a position ``arange``, a causal mask, a
fill) are matched to a recipe of their shape (the same content, a fill, an arange, a
triangle) that is computed again for a new size; a constant that fits none stops the fit.

The fitted family (``Family.propose``) is instantiated at the next new size met: a plan made
from the last trace with every integer and constant computed for that size (``build``). Its
first call is verified as any plan (eager runs beside it on copies, bit for bit), and that
call's own trace must be the instantiated plan exactly (a fourth point of every fitted
polynomial). From then on (``Family.verified``) a new size gets its plan from the fit without
a trace: its first call runs eagerly on a light tape (the calls and where their arrays come
from, no copies of their content), which must record exactly that plan (``check``); its
later calls replay it. A branch on a size anywhere (in the program: ``min(T, 5)``; in
numgrad: a kernel chosen by size) shows up as a light run that is another plan, and that
size is traced instead: a fit is never trusted past what a run at that size recorded. A fit
that fails, or a verification that fails, leaves the sizes to per-size plans (at most
``TRIES`` fits per family). A family's plans are fused with interpreter regions only
(``fuse.Fused(loops=False)``): the interpreter's code does not depend on sizes, so one
compiled interpreter serves every size (a generated loop's would not), and the fitted plan
verified against eager is that fused form.
"""

import numpy as np

from numgrad._compile.fuse import Fused
from numgrad._compile.plan import _NO_GUARD, Plan, _Spec, _view
from numgrad._compile.tape import address, root

SAMPLES = 3  # traces of distinct sizes a fit reads (a quadratic through them)
TRIES = 4  # fits tried per family before its sizes stay per-size plans


class Mismatch(Exception):
    """The plans are not one program in the sizes, or a size does not fit."""


def sizes_of(sig, reach):
    """The integers that may differ between signatures of one program: every reachable
    tensor's shape and strides, where tensors sharing memory start. None for CUDA tensors."""
    out = []
    values = sig[1]
    for at in reach.layouts:
        p = values[at]
        if p[0] == "cuda":
            return None
        out.extend(p[0])
        out.extend(p[1])
    out.extend(sig[2])
    return tuple(out)


def eligible(plan):
    """Whether ``plan`` can be a sample: a CPU plan of a plain call (no pool, no draws)."""
    return plan.__class__ is Plan and plan.pool is None and not getattr(plan, "generators", ())


# ------------------------------------------------------------------------------------------
# one walk over a plan: reads it (``_Reader``) or rebuilds it at new sizes (``_Builder``)
# ------------------------------------------------------------------------------------------

class _Reader:
    """Writes down a plan's skeleton (everything but integers) and its integers."""

    def __init__(self):
        self.skeleton = []
        self.ints = []
        self.contents = []  # the constants' content before any kernel ran, in static order

    def tok(self, x):
        self.skeleton.append(x)

    def num(self, v):
        self.ints.append(int(v))
        return v

    def static(self, n, r, shape, strides, content):
        if n in self.constant_at:
            if content is None:
                raise Mismatch("a constant of more than 64 KiB")
            self.contents.append(content)
        return r

    def array(self, spec, key, shape, strides, off):
        return spec.array


class _Builder:
    """Rebuilds the reference plan with integers from ``values`` and constants from their
    recipes; arrays of reachable tensors view ``datas``."""

    def __init__(self, values, recipes, datas):
        self.values = values
        self.at = 0
        self.recipes = recipes
        self.datas = datas
        self.bases = {}
        self.contents = []

    def tok(self, x):
        pass

    def num(self, v):
        n = self.values[self.at]
        self.at += 1
        return v.__class__(n) if v.__class__ is not int else n

    def static(self, n, r, shape, strides, content):
        c, f = r.flags.c_contiguous, r.flags.f_contiguous
        new = np.empty(shape, r.dtype, order="C" if c or not f else "F")
        if new.strides != strides:
            raise Mismatch("a buffer's strides are not those of a new array")
        recipe = self.recipes.get(n)
        if recipe is not None:
            content = _make(recipe, shape, r.dtype)
            np.copyto(new, content)
            self.contents.append(content)
        return new

    def array(self, spec, key, shape, strides, off):
        if key.__class__ is int:
            base = self.bases.get(key)
            if base is None:
                d = self.datas[key]
                if d.flags.c_contiguous:
                    base = (d, 0)
                else:
                    r = root(d)
                    base = (r, address(d) - address(r))
                self.bases[key] = base
        elif key[0] == "s":
            base = (self.statics[key[1]], 0)
        elif key[0] == "c":
            if 0 not in shape:
                raise Mismatch("an empty array is not empty at this size")
            return np.empty(shape, spec.dtype)
        else:  # ("r", k, j): bound by the step that returns it at every replay
            return spec.array
        b = base[0]
        if base[1] == 0 and off == 0 and b.shape == shape and b.strides == strides and \
                b.dtype == spec.dtype:
            return b  # the whole buffer
        try:
            return _view(base, off, shape, strides, spec.dtype)
        except (ValueError, TypeError):
            raise Mismatch("a view does not fit its buffer at this size") from None


def _walk(plan, v):
    """Visit ``plan`` in one fixed order; returns the parts ``v`` rebuilt."""
    statics, keys, canon = {}, {}, {}
    v.constant_at = set()
    for n, (rid, r) in enumerate(plan.statics.items()):
        constant = rid in plan.constants
        v.tok(("static", r.dtype, r.ndim, constant, rid in plan.written_statics))
        if constant:
            v.constant_at.add(n)
        shape = tuple(v.num(x) for x in r.shape)
        strides = tuple(v.num(x) for x in r.strides)
        new = v.static(n, r, shape, strides, plan.constants.get(rid) if constant else None)
        statics[rid] = new
        keys[("s", rid)] = ("s", id(new))
        canon[("s", rid)] = ("s", n)
    v.statics = {id(a): a for a in statics.values()}

    def key_of(key):
        if key.__class__ is int:
            return key, ("x", key)
        if key[0] == "s":
            return keys[key], canon[key]
        if key[0] in ("r", "c"):
            return key, key
        raise Mismatch("a pooled buffer")

    def spec(s):
        key, canon = key_of(s.key)
        v.tok((canon, s.dtype, len(s.shape)))
        off = v.num(s.off)
        shape = tuple(v.num(x) for x in s.shape)
        strides = tuple(v.num(x) for x in s.strides)
        a = v.array(s, key, shape, strides, off)
        if a is s.array and key == s.key and off == s.off and shape == s.shape and \
                strides == s.strides:
            return s
        new = _Spec(key, off, a)
        new.shape, new.strides = shape, strides  # (a returned array: a placeholder)
        return new

    steps = []
    for fn, args, kwargs, specs, rets, guard in plan.raw_steps:
        v.tok(fn)
        v.tok(tuple(kwargs))
        new_kwargs = {k: _value(v, x) for k, x in kwargs.items()}
        new_specs = [(pos, j, spec(s)) for pos, j, s in specs]
        at = {(pos, j): s for pos, j, s in new_specs}
        new_args = []
        for pos, a in enumerate(args):
            if a.__class__ is np.ndarray:
                new_args.append(at[(pos, None)].array)
            elif a.__class__ in (tuple, list):
                v.tok((a.__class__, len(a)))
                inner = []
                for j, b in enumerate(a):
                    if b.__class__ is np.ndarray:
                        inner.append(at[(pos, j)].array)
                    else:
                        inner.append(_value(v, b))
                new_args.append(a.__class__(inner))
            else:
                new_args.append(_value(v, a))
        new_rets = []
        for j, key, shape, dtype, disp in rets:
            v.tok((j, key, dtype, disp))
            new_rets.append((j, key, tuple(v.num(x) for x in shape), dtype, disp))
        if guard is _NO_GUARD:
            v.tok("no guard")
            new_guard = guard
        else:
            new_guard = _value(v, guard)
        steps.append((fn, tuple(new_args), new_kwargs, new_specs, new_rets, new_guard))
    result = _desc(plan.result, v, spec)
    effects = []
    for i, kind, s in plan.effects:
        v.tok((i, kind, s is None))
        if kind == "version":
            effects.append((i, kind, v.num(s)))
        else:
            effects.append((i, kind, None if s is None else spec(s)))
    v.tok(tuple(plan.used))
    return statics, keys, steps, result, effects


def _value(v, x):
    """A number, string, None or tuple of them in a step: integers are the walk's."""
    cls = x.__class__
    if cls is bool or cls is np.bool_ or x is None or cls is str:
        v.tok((cls, x))
        return x
    if cls is int or isinstance(x, np.integer):
        v.tok(cls)
        return v.num(x)
    if cls is float:
        v.tok((cls, float.hex(x)))
        return x
    if isinstance(x, np.generic):
        v.tok((cls, x.tobytes()))
        return x
    if cls in (tuple, list):
        v.tok((cls, len(x)))
        return cls(_value(v, y) for y in x)
    if isinstance(x, np.ndarray):
        raise Mismatch("an array the plan does not locate")
    v.tok(("object", id(x)))
    return x


def _desc(d, v, spec):
    kind = d[0]
    v.tok(kind if kind.__class__ is str else ("seq", kind))
    if kind in ("t", "a"):
        return (kind, spec(d[1]))
    if kind in (tuple, list):
        v.tok(len(d[1]))
        return (kind, [_desc(x, v, spec) for x in d[1]])
    if kind is dict:
        v.tok(tuple(d[1]))
        return (kind, {k: _desc(x, v, spec) for k, x in d[1].items()})
    return (kind, _value(v, d[1]))


def read(plan):
    """(skeleton, integers, constants' contents) of a plan; raises Mismatch."""
    r = _Reader()
    _walk(plan, r)
    return tuple(r.skeleton), r.ints, r.contents


# ------------------------------------------------------------------------------------------
# constants: recipes of their shape
# ------------------------------------------------------------------------------------------

def _recipe(contents):
    """A recipe that makes every one of ``contents`` (one constant at several sizes) from its
    shape and dtype, or None."""
    first = contents[0]
    if all(c.shape == first.shape and c.tobytes() == first.tobytes() for c in contents):
        return ("same", first)
    if all(c.size for c in contents):
        v = first.reshape(-1)[0]
        if all((c == v).all() and c.reshape(-1)[0].tobytes() == v.tobytes()
               for c in contents):
            return ("full", v)
    if all(c.ndim == 1 and c.size > 1 for c in contents) and first.dtype.kind in "iuf":
        a, d = first[0], first[1] - first[0]
        r = ("arange", a, d)
        if all(np.array_equal(_make(r, c.shape, c.dtype), c) for c in contents):
            return r
    if all(c.ndim >= 2 for c in contents):
        for op in ("gt", "ge", "lt", "le"):
            r = ("tri", op)
            if all(np.array_equal(_make(r, c.shape, c.dtype), c) for c in contents):
                return r
    return None


def _make(recipe, shape, dtype):
    kind = recipe[0]
    if kind == "same":
        if recipe[1].shape != tuple(shape):
            raise Mismatch("a constant's shape changed")
        return recipe[1]
    if kind == "full":
        return np.full(shape, recipe[1], dtype)
    if kind == "arange":
        return (recipe[1] + recipe[2] * np.arange(shape[0])).astype(dtype)
    i = np.arange(shape[-2])[:, None]
    j = np.arange(shape[-1])[None, :]
    m = getattr(np, {"gt": "greater", "ge": "greater_equal", "lt": "less",
                     "le": "less_equal"}[recipe[1]])(j, i)
    return np.broadcast_to(m, tuple(shape)).astype(dtype)


# ------------------------------------------------------------------------------------------
# the family of one program's sizes
# ------------------------------------------------------------------------------------------

class Template:
    """Plans at three sizes fitted as one: integers as polynomials in ``L`` (``sizes[at]``)."""

    def __init__(self, samples):
        """``samples``: [(sizes, plan)] at three distinct sizes of one program."""
        read_ = [read(p) for _, p in samples]
        skeleton = read_[0][0]
        if any(r[0] != skeleton for r in read_[1:]):
            raise Mismatch("the plans are different programs")
        sizes = [s for s, _ in samples]
        varying = [k for k in range(len(sizes[0])) if len({s[k] for s in sizes}) > 1]
        if not varying:
            raise Mismatch("no size differs")
        self.at = varying[0]
        self.Ls = [s[self.at] for s in sizes]
        if len(set(self.Ls)) != len(self.Ls):
            raise Mismatch("the first size that differs repeats")
        self.n_sizes = len(sizes[0])
        self._fit(np.array([list(s) + r[1] for s, r in zip(sizes, read_)], dtype=object))
        self.skeleton = skeleton
        self.recipes = {}
        n_const = len(read_[0][2])
        constant_at = sorted(_constant_positions(samples[-1][1]))
        if len(constant_at) != n_const:
            raise Mismatch("constants without content")
        for n, pos in zip(range(n_const), constant_at):
            recipe = _recipe([r[2][n] for r in read_])
            if recipe is None:
                raise Mismatch("a constant that is no recipe of its shape")
            self.recipes[pos] = recipe
        self.ref = samples[-1][1]

    def _fit(self, Y):
        """Integer coefficients (highest power first) and a common denominator of the
        polynomials through the samples (Lagrange), one column per integer."""
        Ls = self.Ls
        den = 1
        basis = []
        for Li in Ls:
            poly, d = [1], 1
            for Lj in Ls:
                if Lj != Li:
                    poly = [a - Lj * b for a, b in zip(poly + [0], [0] + poly)]
                    d *= Li - Lj
            basis.append((poly, d))
            den *= d
        coef = [[0] * Y.shape[1] for _ in Ls]
        for (poly, d), row in zip(basis, Y):
            scale = den // d
            for p, c in zip(poly, coef):
                for k, y in enumerate(row):
                    c[k] += y * p * scale
        self.den = den
        self.big = max((abs(x) for c in coef for x in c), default=0)
        self.coef = [np.array(c, np.int64 if self.big < 2 ** 40 else object) for c in coef]

    def values(self, L):
        """Every integer at ``L``; raises Mismatch when one is not an integer."""
        coef = self.coef
        if self.big * (abs(L) + 1) ** (len(coef) - 1) * len(coef) >= 2 ** 62:
            coef = [c.astype(object) for c in coef]  # exact in Python integers
        acc = coef[0].copy()
        for c in coef[1:]:
            acc *= L
            acc += c
        q, r = np.divmod(acc, self.den)
        if r.any():
            raise Mismatch("a size is not an integer at this length")
        return q.tolist()

    def instantiate(self, sizes, datas):
        """The plan at ``sizes`` (a call's), on the call's tensor ``datas``; raises Mismatch."""
        values = self.values(sizes[self.at])
        if tuple(values[:self.n_sizes]) != tuple(sizes):
            raise Mismatch("the tensors' sizes are not the fitted ones")
        return build(self.ref, values[self.n_sizes:], self.recipes, datas)


def _constant_positions(plan):
    return [n for n, rid in enumerate(plan.statics) if rid in plan.constants]


def fuse(plan):
    """``plan`` (a family's) with its runs of interpretable steps replayed as interpreter
    regions: the same kernels on the same views, in the recorded order. No generated loops:
    their source (and compiled code) depends on the sizes."""
    fused = Fused(plan, _NO_GUARD, loops=False)
    plan.fused = fused if fused.regions else None
    return plan


def build(ref, values, recipes, datas):
    """``ref`` rebuilt with ``values`` for its integers (in walk order), not fused (``fuse``
    does that)."""
    b = _Builder(values, recipes, datas)
    statics, keys, steps, result, effects = _walk(ref, b)
    if b.at != len(values):
        raise Mismatch("the integers do not match the walk")
    plan = Plan.__new__(Plan)
    plan.pool = None
    plan.steps = plan.raw_steps = steps
    plan.result = result
    plan.effects = effects
    plan._fixed_effects = None if any(kind != "version" and s is not None
                                      for _, kind, s in effects) else effects
    content = dict(zip(_constant_positions(ref), b.contents))
    order = list(ref.statics)
    plan.fresh = []
    for key, _, init in ref.fresh:
        n = order.index(key[1])
        new = statics[key[1]]
        plan.fresh.append((keys[key], new, None if init is None else content[n].copy()))
    plan.restore = []
    for key, _, _ in ref.restore:
        n = order.index(key[1])
        plan.restore.append((keys[key], statics[key[1]], content[n].copy()))
    plan.externals = list(datas)
    plan.used = list(ref.used)
    plan.statics = {id(a): a for a in statics.values()}
    plan.written_statics = frozenset(id(statics[rid]) for rid in ref.written_statics)
    plan.constants = {id(statics[rid]): content[order.index(rid)].copy()
                      for rid in ref.constants}
    plan.guards_first = False
    plan.rollback = ()
    plan.generators = []
    plan.fused = None
    plan.dyn_ints = values
    return plan


class Family:
    """The sizes of one program met so far: samples, and the fitted template once verified."""

    def __init__(self):
        self.samples = []  # [(sizes, entry)] of traced per-size plans
        self.template = None
        self.verified = False
        self.tries = 0
        self.tried = None  # the samples the last fit read
        self.rollback = ()
        self.entries = {}  # sizes -> the compiled function's entry for them
        self.guard = None  # the generated guard of every size (``guard.build(sizeless)``)
        self.misses = 0  # light runs that were not the fitted plan
        self.fuse = True  # its plans replay through interpreter regions (``fuse``)

    def missed(self):
        """A light run at a new size was not the fitted plan (a branch on the size): after
        ``TRIES`` of them, new sizes are traced without trying the fit first."""
        self.misses += 1
        if self.misses >= TRIES:
            self.verified = False
            self.tries = TRIES

    def add(self, sizes, entry):
        if self.verified or self.tries >= TRIES or not eligible(entry.plan):
            return
        self.samples = [s for s in self.samples if s[0] != sizes][-(SAMPLES - 1):]
        self.samples.append((sizes, entry))

    def propose(self, sizes, datas, fused=True):
        """An instantiated plan at ``sizes`` from a fit of the last samples (to be verified),
        or None. ``fused``: the plan (and so every plan of the family) is fused (``fuse``)."""
        if self.verified or self.tries >= TRIES or len(self.samples) < SAMPLES:
            return None
        key = tuple(s for s, _ in self.samples)
        if key == self.tried:
            return None
        self.tried = key
        self.tries += 1
        try:
            self.template = Template([(s, e.plan) for s, e in self.samples])
            plan = self.template.instantiate(sizes, datas)
        except Mismatch:
            self.template = None
            return None
        self.fuse = fused
        return fuse(plan) if fused else plan

    def instantiate(self, sizes, datas):
        try:
            plan = self.template.instantiate(sizes, datas)
        except Mismatch:
            return None
        plan.rollback = self.rollback
        plan.guards_first = True
        return fuse(plan) if self.fuse else plan

    def confirm(self, plan, traced):
        """Whether the per-size plan ``traced`` (this call's own trace) is the instantiated
        ``plan`` exactly: then the family is verified (``plan`` was, on this call)."""
        try:
            skeleton, ints, contents = read(traced)
        except Mismatch:
            return False
        want = plan.dyn_ints
        content = [plan.constants[rid] for rid in plan.statics if rid in plan.constants]
        if skeleton != self.template.skeleton or ints != want or len(contents) != len(
                content) or any(a.shape != b.shape or a.tobytes() != b.tobytes()
                                for a, b in zip(contents, content)):
            self.template = None
            return False
        self.verified = True
        self.rollback = plan.rollback
        # the traced samples are the template at their sizes: verified with it
        for _, entry in self.samples:
            # (a sample whose intermediates share memory, ``reuse.py``, was placed for its
            # fused order: it is verified by its own next call instead)
            if not entry.verified and not entry.eager and entry.plan is not None and \
                    entry.plan.arena is None:
                entry.plan.steps, entry.plan.fused = entry.plan.raw_steps, None
                if self.fuse:  # as the fitted plan was verified
                    fuse(entry.plan)
                entry.plan.rollback = plan.rollback
                entry.plan.guards_first = True
                entry.verified = True
        self.samples = []
        return True


# ------------------------------------------------------------------------------------------
# a new size: the eager run, on a light tape, must be the instantiated plan
# ------------------------------------------------------------------------------------------

def check(plan, tape, pre, post, result):
    """Whether the eager run recorded on the light ``tape`` is ``plan`` (instantiated from a
    verified fit at this call's sizes): the same kernels in the same order, with the same
    numbers, on arrays at the same places of the same buffers (the reachable tensors' data,
    memory numgrad allocated for a kernel, constants with the plan's content, arrays a call
    returned), the same result and effects. Any array of another origin (values computed
    outside the recorded calls) is no match. Then the plan is this call's, as a trace would
    have made it, without the trace."""
    calls = tape.calls
    if tape.breaks or tape.generators or tape.ran_backward or len(calls) != len(plan.raw_steps):
        return False
    datas = [d for d, _, _ in pre]
    roots = {}
    for i, d in enumerate(datas):
        if d.__class__ is not np.ndarray:
            return False
        roots.setdefault(id(root(d)), []).append(i)
    c = _Checker(plan, tape, datas, roots)
    try:
        for k, ((fn, args, kwargs, res), step) in enumerate(zip(calls, plan.raw_steps)):
            c.step(k, fn, args, kwargs, res, step)
        c.result(result, plan.result)
        c.effects(pre, post)
    except Mismatch:
        return False
    return True


class _Checker:
    def __init__(self, plan, tape, datas, roots):
        self.plan, self.tape, self.datas, self.roots = plan, tape, datas, roots
        self.statics = {}  # id(root) in the eager run -> the plan's static key
        self.taken = set()  # the plan's static keys met
        self.returned = {}  # id(root) -> (key, the returned array)

    def array(self, a, spec):
        if a.__class__ is not np.ndarray or spec is None:
            raise Mismatch("an array where the plan has none")
        if a.shape != spec.shape or a.strides != spec.strides or a.dtype != spec.dtype:
            raise Mismatch("a view of another layout")
        key = spec.key
        r = root(a)
        rid = id(r)
        if key.__class__ is int:
            d = self.datas[key]
            if key not in self.roots.get(rid, ()) or address(a) - address(d) != spec.off:
                raise Mismatch("another tensor's data")
            return
        if key[0] == "c":
            if a.size:
                raise Mismatch("an empty array is not empty")
            return
        if key[0] == "r":
            ret = self.returned.get(rid)
            if ret is None or ret[0] != key or address(a) - address(ret[1]) != spec.off:
                raise Mismatch("another returned array")
            return
        if key[0] != "s" or rid in self.roots or rid in self.returned:
            raise Mismatch("another buffer")
        have = self.statics.get(rid)
        if have is None:
            if key in self.taken:
                raise Mismatch("one of the plan's buffers is two buffers here")
            tape = self.tape
            want = self.plan.statics[key[1]]
            if r.shape != want.shape or r.strides != want.strides:
                raise Mismatch("a buffer of another size")
            if key[1] in self.plan.constants:
                snap = tape.first.get(rid)
                if rid not in tape.constants or snap is None or snap.tobytes() != \
                        self.plan.constants[key[1]].tobytes():
                    raise Mismatch("a constant of other content")
            elif rid in tape.outside or rid in tape.constants:
                raise Mismatch("memory of unknown content")  # values made outside the tape
            self.statics[rid] = have = key
            self.taken.add(key)
        if have != key or address(a) - address(r) != spec.off:
            raise Mismatch("another place of a buffer")

    def step(self, k, fn, args, kwargs, res, step):
        pfn, pargs, pkwargs, specs, rets, guard = step
        if fn is not pfn or len(args) != len(pargs) or kwargs.keys() != pkwargs.keys():
            raise Mismatch("another kernel")
        for name, x in kwargs.items():
            _same_value(x, pkwargs[name])
        at = {(pos, j): s for pos, j, s in specs}
        for pos, (a, b) in enumerate(zip(args, pargs)):
            if a.__class__ is np.ndarray:
                self.array(a, at.get((pos, None)))
            elif a.__class__ in (tuple, list):
                if b.__class__ is not a.__class__ or len(a) != len(b):
                    raise Mismatch("another sequence")
                for j, (x, y) in enumerate(zip(a, b)):
                    if x.__class__ is np.ndarray:
                        self.array(x, at.get((pos, j)))
                    else:
                        _same_value(x, y)
            else:
                _same_value(a, b)
        items = res if res.__class__ is tuple else (res,)
        n = 0
        plain = []
        for j, v in enumerate(items):
            if v.__class__ is np.ndarray:
                r = root(v)
                if id(r) in self.roots or id(r) in self.returned or id(r) in self.statics:
                    plain.append(None)
                    continue  # memory the plan already knows (a no-copy result)
                if n >= len(rets):
                    raise Mismatch("another returned array")
                jj, key, shape, dtype, _ = rets[n]
                n += 1
                if key != ("r", k, j) or v.shape != shape or v.dtype != dtype:
                    raise Mismatch("another returned array")
                self.returned[id(r)] = (key, v)
                plain.append(None)
            else:
                plain.append(v)
        if n != len(rets):
            raise Mismatch("another returned array")
        if any(v is not None for v in plain):
            want = tuple(plain) if res.__class__ is tuple else plain[0]
            if guard is _NO_GUARD:
                raise Mismatch("a value where the plan has none")
            _same_value(want, guard)
        elif guard is not _NO_GUARD:
            raise Mismatch("no value where the plan has one")

    def result(self, x, d):
        from numgrad.tensor import Tensor
        kind = d[0]
        if x.__class__ is np.ndarray:
            if kind != "a":
                raise Mismatch("another result")
            self.array(x, d[1])
        elif isinstance(x, Tensor):
            if kind != "t" or x._requires_grad:
                raise Mismatch("another result")
            self.array(x._data, d[1])
        elif isinstance(x, (tuple, list)):
            if kind is not type(x) or len(x) != len(d[1]):
                raise Mismatch("another result")
            for y, e in zip(x, d[1]):
                self.result(y, e)
        elif isinstance(x, dict):
            if kind is not dict or x.keys() != d[1].keys():
                raise Mismatch("another result")
            for name, y in x.items():
                self.result(y, d[1][name])
        else:
            if kind != "v":
                raise Mismatch("another result")
            _same_value(x, d[1])

    def effects(self, pre, post):
        got = []
        for i, ((d0, g0, v0), (d1, g1, v1)) in enumerate(zip(pre, post)):
            if d1 is not d0:
                got.append((i, "data", d1))
            if g1 is not g0:
                got.append((i, "grad", None if g1 is None else g1))
            if v1 != v0:
                got.append((i, "version", v1 - v0))
        want = self.plan.effects
        if [(i, kind) for i, kind, _ in got] != [(i, kind) for i, kind, _ in want]:
            raise Mismatch("other effects")
        for (_, kind, v), (_, _, s) in zip(got, want):
            if kind == "version":
                if v != s:
                    raise Mismatch("other effects")
            elif kind == "data":
                self.array(v, s)
            elif (v is None) != (s is None):
                raise Mismatch("other effects")
            elif v is not None:
                if v._requires_grad or v._grad_fn is not None:
                    raise Mismatch("other effects")
                self.array(v._data, s)


def _same_value(x, y):
    """Numbers, strings, None and tuples of them: equal, of one class, floats by their
    bits."""
    if x.__class__ is not y.__class__:
        raise Mismatch("another value")
    if x.__class__ in (tuple, list):
        if len(x) != len(y):
            raise Mismatch("another value")
        for a, b in zip(x, y):
            _same_value(a, b)
        return
    if x.__class__ is float:
        if float.hex(x) != float.hex(y):
            raise Mismatch("another value")
        return
    if isinstance(x, np.generic):
        if x.tobytes() != y.tobytes():
            raise Mismatch("another value")
        return
    if isinstance(x, np.ndarray):
        raise Mismatch("an array the plan does not locate")
    if x is not y and not (x.__class__ in (int, bool, str) and x == y):
        raise Mismatch("another value")
