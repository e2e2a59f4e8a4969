"""Runs of a plan's kernel calls replayed by one compiled call: interpreter and loops.

Launching a kernel from Python costs about 0.2 us; a step of a small graph computes for a
few nanoseconds. So consecutive kernel calls whose arguments are C-contiguous arrays in
memory the plan knows, and plain numbers, become a *region*: a table of rows (which kernel,
where each array starts, its shape, the numbers), run by one generated ``@njit`` function
that calls the same kernels, compiled, on the same views rebuilt from buffer addresses. The
kernels are the eager ones, with the same types, so a region computes what the calls it
replaces computed, bit for bit (and the plan is verified against eager before it is used).

The interpreter is generated from the set of kernel variants (kernel, array dtypes and
ranks, number types) a plan uses, not from the plan: its size does not grow with the length
of the graph, and plans that use the same kernels share it. Its source is written to the
kernel cache folder, so that Numba's disk cache can keep its machine code and a second
process compiles nothing.

Runs of flat elementwise kernels over the same arrays of at least ``LOOP_MIN`` elements
become instead one generated loop that does every step per element (the kernels' own scalar
formulas, in order): an intermediate no other step reads stays in a register and is never
written to memory.

What stays a Python call: BLAS products and NumPy copies, kernels that return arrays or
values (checked as guards), and arguments that are strided views or tuples of arrays.
"""

import hashlib
import os
import sys
import types

import numpy as np

from numgrad._compile.schedule import schedule
from numgrad._compile.tape import address

POOL = ("p",)  # the address-table key of a plan's pool (``plan.Pool``)

_DTYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "int64", "int32", "int16",
                                           "int8", "uint8"))
_EXACT = 2 ** 53  # integers stored in the float64 number table come back unchanged
_NUMBERS = {float: "f8", int: "i8", bool: "b1", np.float64: "f8", np.float32: "f4",
            np.int64: "i8", np.int32: "i4", np.bool_: "b1"}
_CAST = {"f8": "{}", "f4": "np.float32({})", "i8": "np.int64({})", "i4": "np.int32({})",
         "b1": "({} != 0)"}

_BY_NAME = {}  # kernel name -> its dispatcher: a name in generated source means one kernel


def _name(fn):
    """The kernel's qualified name and a digest of its code and of the functions it calls,
    so that generated source (and the machine code cached for it) names exactly one kernel,
    in any process."""
    name = _NAMES.get(fn)
    if name is None:
        py = fn.py_func
        h = hashlib.sha256(_code_bytes(py.__code__))
        for ref in py.__code__.co_names:  # what ``specialize`` bound, the helpers it calls
            g = getattr(py.__globals__.get(ref), "py_func", None)
            if g is not None:
                h.update(ref.encode() + _code_bytes(g.__code__))
        name = _NAMES[fn] = f"{py.__module__}.{py.__qualname__} {h.hexdigest()[:12]}"
    return name


def _code_bytes(code):
    consts = b"".join(_code_bytes(c) if hasattr(c, "co_code") else repr(c).encode()
                      for c in code.co_consts)  # a nested code object's repr has an address
    return code.co_code + consts + repr(code.co_names).encode()


_NAMES = {}


def _variant(step, index, no_guard):
    """(variant, array specs, numbers) for a step the interpreter can run, else None."""
    from numba.core.registry import CPUDispatcher
    fn, args, kwargs, specs, rets, guard = step
    if kwargs or rets or guard is not no_guard or fn.__class__ is not CPUDispatcher:
        return None
    name = _name(fn)
    if _BY_NAME.setdefault(name, fn) is not fn:
        return None
    at = {}
    for pos, j, spec in specs:
        if j is not None:
            return None  # a tuple of arrays
        at[pos] = spec
    desc, arrays, numbers = [], [], []
    for pos, a in enumerate(args):
        spec = at.get(pos)
        if spec is not None:
            if not (0 < a.ndim <= 4 and a.dtype in _DTYPES and a.flags.c_contiguous
                    and spec.key in index):
                return None
            desc.append((_dtype_name(a.dtype), a.ndim))
            arrays.append(spec)
        else:
            kind = _NUMBERS.get(a.__class__)
            if kind is None or (kind[0] == "i" and not -_EXACT <= a <= _EXACT):
                return None
            desc.append(kind)
            numbers.append(float(a))
    return (name, tuple(desc)), arrays, numbers


_DTYPE_NAMES = {}


def _dtype_name(dt):
    """``dt.name``, which NumPy builds anew at every read."""
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = dt.name
    return name


def _source(variants):
    """The interpreter's source for ``variants`` (op code = position in the list). A serial
    elementwise loop is written out with the kernel's formula (the loop of its template), so
    the compiler inlines it; other kernels are called."""
    lines = ["# numgrad.compile interpreter, generated by numgrad/_compile/fuse.py",
             "import numpy as np",
             "from numba import carray",
             "from numgrad.kernels.cpu._address import pointer",
             "",
             ""]
    for k, (name, _) in enumerate(variants):
        lines.insert(1 + k, f"# K{k}: {name}")
    lines += ["def interpret(prog, numbers, addr):",
              "    for s in range(prog.shape[0]):",
              "        op = prog[s, 0]"]
    for k, (name, desc) in enumerate(variants):
        col, num, args = 1, 0, []
        for d in desc:
            if d.__class__ is tuple:
                dtype, ndim = d
                dims = ", ".join(f"prog[s, {col + 2 + i}]" for i in range(ndim))
                args.append(f"carray(pointer(addr[prog[s, {col}]] + prog[s, {col + 1}], "
                            f"np.{dtype}), ({dims},))")
                col += 2 + ndim
            else:
                args.append(_CAST[d].format(f"numbers[s, {num}]"))
                num += 1
        lines.append(f"        {'if' if k == 0 else 'elif'} op == {k}:")
        flat = _template(_BY_NAME[name])
        if flat is not None and flat[1]:
            # a serial loop template: out[i] = f(ins[i]..., p, q), p and q cast to the last
            # input's dtype
            arity = flat[0]
            cast = desc[arity - 1][0]
            for j, a in enumerate(args[:arity + 1]):
                lines.append(f"            a{j} = {a}")
            lines.append(f"            pp = np.{cast}({args[-2]})")
            lines.append(f"            qq = np.{cast}({args[-1]})")
            ins = ", ".join(f"a{j}[i]" for j in range(arity))
            lines.append(f"            for i in range(a{arity}.size):")
            lines.append(f"                a{arity}[i] = F{k}({ins}, pp, qq)")
        else:
            lines.append(f"            K{k}({', '.join(args)})")
    return "\n".join(lines) + "\n"


_LOADED = {}  # source hash -> the jitted function


def _interpreter(variants):
    names = {}
    for k, (name, _) in enumerate(variants):
        fn = names[f"K{k}"] = _BY_NAME[name]
        if _template(fn) is not None:
            names[f"F{k}"] = fn.py_func.__globals__["f"]  # the formula ``specialize`` bound
    src = _source(variants)
    return _load(src, names), src


def _load(src, names, parallel=False):
    """``interpret`` of generated ``src`` (its free names bound to ``names``), jitted; the
    source is written to the kernel cache folder so that Numba can cache its machine code."""
    from numgrad.kernels import _jit

    def build(mod, cache):
        if "body" in mod.__dict__:
            mod.body = _jit.jit(mod.body, cache=cache, parallel=parallel)
        return _jit.jit(mod.interpret, cache=cache)
    return generated(src, names, build)


def generated(src, names, build):
    """``build(module, cache)`` of the module executing generated ``src`` (its free names
    bound to ``names``), once per source text: the source is written to the kernel cache
    folder (``cache``: whether it was), so that Numba's disk cache can keep its machine code
    and a second process compiles nothing."""
    from numgrad.kernels import _jit
    digest = hashlib.sha256(src.encode()).hexdigest()[:20]
    fn = _LOADED.get(digest)
    if fn is not None:
        return fn
    filename = _written(src, digest) if _jit.CACHE else None
    cache = filename is not None
    if filename is None:
        filename = f"<numgrad.compile generated {digest}>"
    # a module Numba's cache can name when it loads the compiled interpreter again
    mod = types.ModuleType(f"numgrad._compile.generated_{digest}")
    mod.__dict__.update(names)
    exec(compile(src, filename, "exec"), mod.__dict__)  # our own generated text, not a file's
    sys.modules[mod.__name__] = mod
    fn = _LOADED[digest] = build(mod, cache)
    return fn


def _written(src, digest):
    """The path of ``src`` in the kernel cache folder (written there unless that file already
    holds it), or None when it cannot be written."""
    from numgrad.kernels import _jit
    path = os.path.join(_jit.CACHE_DIR, f"{_jit.GENERATED_PREFIX}{digest}.py")
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == src:
                return path
    except OSError:
        pass
    try:
        _jit._write_private(path, src.encode(), sealed=False)
    except OSError:
        return None
    return path


# --- loop fusion: a run of elementwise kernels over the same large arrays, one loop ----------

LOOP_MIN = 1 << 12  # elements: below this a step is cheap to launch and the interpreter runs it
LOOP_MAX_STEPS = 64  # longer runs compile slowly as one loop: they are cut


_TEMPLATES = {}  # code of an elementwise loop template -> (array inputs, serial)


def _template(fn):
    """(number of array inputs, serial) when kernel ``fn`` is an elementwise loop template
    of ``numgrad.kernels.cpu.elementwise`` over flat arrays, else None."""
    if not _TEMPLATES:
        from numgrad.kernels.cpu import elementwise as ew
        for n, serial, par in ((1, ew.u_flat, ew.u_flat_par), (2, ew.b_flat, ew.b_flat_par),
                               (3, ew.t_flat, ew.t_flat_par)):
            _TEMPLATES[serial.__code__] = (n, True)
            _TEMPLATES[par.__code__] = (n, False)
    return _TEMPLATES.get(fn.py_func.__code__)


def _loop_op(step, arrays):
    """(arity, formula) for ``out[i] = f(ins[i]..., p, q)`` over same-sized float arrays;
    (0, None) for ``fill_scaled``; else None."""
    from numgrad.kernels.cpu import elementwise as ew
    fn = step[0]
    if not arrays or arrays[0].dtype.kind != "f" or len({s.dtype for s in arrays}) > 1:
        return None
    if fn is ew.fill_scaled:
        ok = len(arrays) == 2 and len(arrays[1].shape) == 1 and arrays[1].shape[0] >= LOOP_MIN
        return (0, None) if ok else None
    flat = _template(fn)
    if flat is None or len(arrays) != flat[0] + 1:
        return None
    n = arrays[-1].shape
    if len(n) != 1 or n[0] < LOOP_MIN or any(s.shape != n for s in arrays):
        return None
    return flat[0], fn.py_func.__globals__["f"]


def _loop_kind(step, index, no_guard):
    """(size, dtype) of the loop a step can join (see ``_split``), else None."""
    v = _variant(step, index, no_guard)
    if v is None or _loop_op(step, v[1]) is None:
        return None
    out = v[1][-1]
    return out.shape, out.dtype


def _disjoint(segment):
    """Whether the arrays of a run are, per buffer, the same view or apart, and no value a
    fill reads before the loop is written in it."""
    written = {s[-1].key for _, _, s, _ in segment}
    if any(op[0] == 0 and s[0].key in written for op, _, s, _ in segment):
        return False
    spans = {}
    for _, _, arrays, _ in segment:
        for s in arrays:
            n = s.shape[0] * s.dtype.itemsize
            spans.setdefault(s.key, set()).add((s.off, s.off + n))
    for iv in spans.values():
        iv = sorted(iv)
        if any(a[1] > b[0] for a, b in zip(iv, iv[1:])):
            return False
    return True


def _chain(segment, keep, load, numbers, wrap=None):
    """The per-element body of a loop doing the run ``segment`` (shared by the CPU loops and
    ``cuda_fuse``): ([lines before the loop], [body lines], {formula: name}, [formula kernel
    names], {(key, off): array number}). ``load(a)`` reads element i of array ``a``;
    ``numbers(k)`` are the lines making step k's numbers; ``wrap(k)`` (optional) the
    expression that hands ``y{k}`` to later steps."""
    names, formulas, arrays, lines = {}, [], {}, []
    dtype = segment[0][2][0].dtype.name
    body, regs = [], {}
    for k, (op, fname, specs, _) in enumerate(segment):
        for s in specs:
            if (s.key, s.off) not in arrays:
                arrays[(s.key, s.off)] = len(arrays)
        arity, f = op
        ins, out = specs[:-1], specs[-1]
        if arity == 0:  # fill_scaled: out[:] = src[0] * scale, in float64
            src = arrays[(ins[0].key, ins[0].off)]
            lines.append(f"    V{k} = np.{dtype}(np.float64(A{src}[0]) * numbers[{2 * k}])")
            value = f"V{k}"
        else:
            if f not in names:
                names[f] = f"F{len(names)}"
                formulas.append(fname)
            args = []
            for s in ins:
                a = arrays[(s.key, s.off)]
                if a not in regs:
                    regs[a] = f"x{a}"
                    body.append(f"        x{a} = {load(a)}")
                args.append(regs[a])
            lines += numbers(k)
            value = f"{names[f]}({', '.join(args)}, P{k}, Q{k})"
        o = arrays[(out.key, out.off)]
        body.append(f"        y{k} = {value}")
        regs[o] = f"y{k}"
        if keep(out, k):
            body.append(f"        {load(o)} = y{k}")
        if wrap is not None:
            body.append(f"        z{k} = {wrap(k)}")
            regs[o] = f"z{k}"
    return lines, body, names, formulas, arrays


def _loop_source(segment, index, keep, parallel):
    """Source of one loop that does the run ``segment`` element by element, and its program
    row: where each array lies (address-table slot, byte offset, length) and the loop's
    length. The source depends only on the formulas, the dtype and which arrays each step
    reads and keeps, so the loops of a recurrent network's time steps share one."""
    dtype = segment[0][2][0].dtype.name
    lines, body, names, formulas, arrays = _chain(
        segment, keep, lambda a: f"A{a}[i]",
        lambda k: [f"    P{k} = np.{dtype}(numbers[{2 * k}])",
                   f"    Q{k} = np.{dtype}(numbers[{2 * k + 1}])"])
    n = segment[0][2][-1].shape[0]
    head = ["# numgrad.compile fused loop, generated by numgrad/_compile/fuse.py"]
    head += [f"# F{j}: {name}" for j, name in enumerate(formulas)]
    head += ["import numpy as np", "from numba import carray, prange",
             "from numgrad.kernels.cpu._address import pointer", "", "",
             "def interpret(prog, numbers, addr):"]
    # the views are made here and handed to ``body``: inside a ``parallel=True`` function
    # Numba takes a ``carray`` for a new local array and drops the stores to it
    shapes = {(s.key, s.off): s.shape[0] for _, _, specs, _ in segment for s in specs}
    row = []
    for key, off in arrays:
        row += [index[key], off, shapes[(key, off)]]
    row.append(n)
    views = [f"carray(pointer(addr[prog[0, {3 * a}]] + prog[0, {3 * a + 1}], np.{dtype}), "
             f"(prog[0, {3 * a + 2}],))" for a in range(len(arrays))]
    head.append(f"    body(numbers, prog[0, {3 * len(arrays)}], " + ", ".join(views) + ")")
    head += ["", "", f"def body(numbers, n, {', '.join(f'A{a}' for a in range(len(arrays)))}):"]
    loop = [f"    for i in {'prange' if parallel else 'range'}(n):"]
    prog = np.array([row], np.int64)
    return "\n".join(head + lines + loop + body) + "\n", names, prog


def registers(piece, uses, inside, private):
    """The outputs of a loop (``piece``: each step's array specs, output last) that stay in
    registers: a ``private`` buffer (one the caller never sees) that only the steps
    ``inside`` use (``uses``: key -> steps), first seen as an output, at one view."""
    seen, droppable = set(), set()
    for arrays in piece:
        for j, spec in enumerate(arrays):
            key = spec.key
            if key in seen:
                continue
            seen.add(key)
            if (j == len(arrays) - 1 and private(key) and uses[key] <= inside
                    and len({s.off for a in piece for s in a if s.key == key}) == 1):
                droppable.add(key)  # an intermediate only this loop sees: a register
    return droppable


def _split(run, op_of):
    """A run of steps (k, (variant, array specs, numbers)) cut into ("loop", ...) pieces, runs
    of steps that ``op_of(k, v)`` gives a loop op for over the same arrays (at most
    ``LOOP_MAX_STEPS``, apart or the same view per buffer), and ("run", ...) pieces of the
    others (the interpreter's, on the CPU)."""
    pieces, seg = [], []

    def close():
        if len(seg) > 1 and _disjoint([(op, None, v[1], None) for _, v, op in seg]):
            pieces.append(("loop", list(seg)))
        elif seg:
            pieces.append(("run", [(k, v) for k, v, _ in seg]))
        seg.clear()

    for k, v in run:
        op = op_of(k, v)
        if op is not None and seg and (len(seg) >= LOOP_MAX_STEPS
                                       or seg[0][1][1][-1].shape != v[1][-1].shape
                                       or seg[0][1][1][-1].dtype != v[1][-1].dtype):
            close()
        if op is None:
            close()
            if pieces and pieces[-1][0] == "run":
                pieces[-1][1].append((k, v))
            else:
                pieces.append(("run", [(k, v)]))
        else:
            seg.append((k, v, op))
    close()
    out = []  # neighbouring "run" pieces joined
    for kind, piece in pieces:
        if out and kind == "run" and out[-1][0] == "run":
            out[-1][1].extend(piece)
        else:
            out.append((kind, piece))
    return out


def _parallel_min():
    """Elements from which eager runs an elementwise loop on all threads (and so does a
    generated loop)."""
    from numgrad.kernels._parallel import ELEMENTWISE
    return ELEMENTWISE


class Region:
    """A run of steps replayed by one interpreter call."""

    __slots__ = ("interpret", "prog", "numbers", "count", "source")

    def __init__(self, interpret, prog, numbers, count, source):
        self.interpret, self.prog, self.numbers = interpret, prog, numbers
        self.count = count  # how many of the plan's steps it replaces
        self.source = source  # the generated code it runs


class Fused:
    """A plan's steps with runs of interpretable steps replaced by regions, and the address
    table of the buffers those regions use."""

    def __init__(self, plan, no_guard, loops=True):
        """``loops=False``: interpreter regions only (no generated loop, whose source
        depends on the sizes): a family's plans (``dynamic.py``), one interpreter for all
        their sizes."""
        index, addr = {}, []
        for i in plan.used:
            index[i] = len(addr)
            addr.append(address(plan.externals[i]))
        for rid, r in plan.statics.items():
            index[("s", rid)] = len(addr)
            addr.append(address(r))
        if plan.pool is not None:  # its arena is passed to every run, which sets this
            index[POOL] = len(addr)
            addr.append(0)
        # loops over the same arrays made neighbours, so that they become one loop
        if loops:
            plan.steps = schedule(plan.steps, plan.externals,
                                  lambda step: _loop_kind(step, index, no_guard), no_guard)
        runs, run = [], []
        for k, step in enumerate(plan.steps):
            v = _variant(step, index, no_guard)
            if v is not None:
                run.append((k, v))
                continue
            if len(run) > 1:
                runs.append(run)
            run = []
        if len(run) > 1:
            runs.append(run)
        self.index = index
        self.addr = np.array(addr, np.int64)
        self.items = list(plan.steps)
        self.regions = 0
        self._slots = {}
        pieces = [p for run in runs
                  for p in _split(run, lambda k, v: _loop_op(plan.steps[k], v[1])
                                  if loops else None)]
        uses = {}
        for k, step in enumerate(plan.steps):
            for _, _, spec in step[3]:
                uses.setdefault(spec.key, set()).add(k)
        fresh = {key for key, _, _ in plan.fresh}
        runs = [piece for kind, piece in pieces if kind == "run" and len(piece) > 1]
        if runs:
            variants = sorted({v[0] for run in runs for _, v in run})
            code = {v: k for k, v in enumerate(variants)}
            interpret = _interpreter(variants)
        for kind, piece in reversed(pieces):  # from the end: earlier positions stay valid
            if kind == "loop":
                self._loop(plan, piece, uses, fresh)
            elif len(piece) > 1:
                self._run(piece, interpret, code)

    def _run(self, run, interpret, code):
        """Replace the steps of ``run`` by one interpreter call."""
        index = self.index
        width = max(1 + sum(2 + len(s.shape) for s in arrays) for _, (_, arrays, _) in run)
        count = max(1, max(len(nums) for _, (_, _, nums) in run))
        prog = np.zeros((len(run), width), np.int64)
        numbers = np.zeros((len(run), count), np.float64)
        for row, (_, (variant, arrays, nums)) in enumerate(run):
            cells = [code[variant]]
            for s in arrays:
                cells += [index[s.key], s.off, *s.shape]
            prog[row, :len(cells)] = cells
            numbers[row, :len(nums)] = nums
        first = run[0][0]
        fn, src = interpret
        self.items[first:first + len(run)] = [Region(fn, prog, numbers, len(run), src)]
        self.regions += 1

    def _loop(self, plan, piece, uses, fresh):
        """Replace the steps of ``piece`` by one generated loop."""
        first, last = piece[0][0], piece[-1][0]
        inside = set(range(first, last + 1))
        droppable = registers([arrays for _, (_, arrays, _), _ in piece], uses, inside,
                              lambda key: key.__class__ is tuple and key[0] == "s"
                              and key not in fresh)

        segment = [(op, _name(plan.steps[k][0]), arrays, nums)
                   for k, (_, arrays, nums), op in piece]
        numbers = np.zeros(2 * len(piece), np.float64)
        for k, (_, _, nums) in enumerate(v for _, v, _ in piece):
            numbers[2 * k:2 * k + len(nums)] = nums
        n = piece[0][1][1][-1].shape[0]
        parallel = n >= _parallel_min()
        src, names, prog = _loop_source(segment, self.index,
                                        lambda out, k: out.key not in droppable, parallel)
        fn = _load(src, {v: f for f, v in names.items()}, parallel)
        self.items[first:last + 1] = [Region(fn, prog, numbers, len(piece), src)]
        self.regions += 1

    def table(self, bases):
        """The address table for one replay: ``bases`` holds the buffers that moved."""
        slots, arrays, shifted = [], [], []
        index = self.index
        for key, (buf, off) in bases.items():
            k = index.get(key)
            if k is not None:
                slots.append(k)
                arrays.append(buf)
                if off:
                    shifted.append((k, off))
        if not slots:
            return self.addr  # nothing moved (it is never written)
        addr = self.addr.copy()
        if len(slots) > 16:  # a verification run: all of a plan's buffers are copies
            for k, buf in zip(slots, arrays):
                addr[k] = address(buf)
        else:
            key = tuple(slots)
            table = self._slots.get(key)
            if table is None:
                table = self._slots[key] = np.array(slots, np.int64)
            _addresses()(addr, table, *arrays)
        for k, off in shifted:
            addr[k] += off
        return addr


def _addresses():
    global _ADDRESSES
    if _ADDRESSES is None:
        from numgrad.kernels.cpu._address import addresses
        _ADDRESSES = addresses
    return _ADDRESSES


_ADDRESSES = None
