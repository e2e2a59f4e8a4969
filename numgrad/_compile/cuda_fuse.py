"""Runs of a CUDA plan's elementwise launches replayed as one generated ``numba.cuda`` kernel.

A flat elementwise launch (``kernels/cuda/elementwise.py``: ``u_flat``/``b_flat``/``t_flat``,
operands C-contiguous with the output's element count) is ``out[o + i] = f(x[xo + i].., p,
q)`` for i < n. Consecutive such launches of one float dtype and one ``n`` whose views of
each buffer are the same or apart become one grid-stride kernel that evaluates the chain per
element with the same device formulas and the same typed ``p``/``q`` arguments, in order.
The grouping, which outputs stay in registers (a buffer the plan made that nobody outside
the run reads) and the caching of generated source are ``fuse.py``'s, shared with the CPU
loops.

Floating point: eager kernels are compiled with NVVM's default FMA contraction, inside one
formula. A value handed from one formula to the next passes through ``handoff``: its bits
xor a kernel argument that is 0 at run time, which neither NVVM nor ptxas can see through,
so no multiply of one formula is contracted with an add of the next (eager stores it
between them), while each formula is contracted as in its own kernel.
"""

import collections
import hashlib

import numpy as np

from numgrad._compile import fuse as shared

Spec = collections.namedtuple("Spec", "key off shape dtype")  # off in bytes, as fuse.py's

_ARITY = {}  # code of a flat elementwise template -> number of inputs


def _flat(kernel):
    """(arity, device formula, name) of an eager flat elementwise kernel, else None."""
    if not _ARITY:
        from numgrad.kernels.cuda import elementwise as ew
        _ARITY.update({ew.u_flat.__code__: 1, ew.b_flat.__code__: 2, ew.t_flat.__code__: 3})
    py = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    arity = _ARITY.get(getattr(py, "__code__", None))
    if arity is None:
        return None
    f = py.__globals__["f"]
    code = (getattr(f, "py_func", None) or f.fn).__code__
    digest = hashlib.sha256(shared._code_bytes(code)).hexdigest()[:12]
    return arity, f, f"{py.__qualname__} {digest}"  # generated source names one formula


def _step_op(step):
    """(op, array specs, numbers) of a plan's launch step that a fused kernel can take."""
    from numgrad._compile.cuda_plan import LAUNCH
    if step[0] is not LAUNCH:
        return None
    _, kernel, _, template, holes = step
    flat = _flat(kernel)
    if flat is None:
        return None
    arity, f, name = flat
    n, p, q = template[2 * arity + 2:]
    slot = {pos: s for pos, j, s in holes if j is None}
    specs = []
    for j in range(arity + 1):
        buf, off = template[2 * j], template[2 * j + 1]
        if 2 * j not in slot or buf.dtype.kind != "f":
            return None
        size = buf.dtype.itemsize
        specs.append(Spec(slot[2 * j], off * size, (n,), buf.dtype))
    if len({s.dtype for s in specs}) > 1 or np.dtype(type(p)) != specs[0].dtype:
        return None
    return (arity, f), specs, [p, q], name


def fuse(steps, kinds, escaping):
    """``steps`` with runs of fusable launches replaced by one launch each; ``kinds``: slot ->
    external index / "made" / "kept"; ``escaping``: slots the caller sees."""
    from numgrad._compile.cuda_plan import ALLOC, LAUNCH, READ, UPLOAD
    # allocations read nothing: first, so that they do not cut runs
    steps = [s for s in steps if s[0] is ALLOC] + [s for s in steps if s[0] is not ALLOC]
    ops = [_step_op(s) for s in steps]
    run = [(k, (None, o[1], o[2]) if o else (None, [], [])) for k, o in enumerate(ops)]
    pieces = shared._split(run, lambda k, v: ops[k][0] if ops[k] else None)
    uses = {}
    for k, s in enumerate(steps):
        if s[0] is LAUNCH:
            slots = [h[2] for h in s[4]]
        elif s[0] in (READ, UPLOAD):
            slots = [s[1]]
        else:
            slots = []
        for slot in slots:
            uses.setdefault(slot, set()).add(k)
    out = list(steps)
    for kind, piece in reversed(pieces):  # from the end: earlier positions stay valid
        if kind != "loop":
            continue
        first, last = piece[0][0], piece[-1][0]
        dropped = shared.registers([v[1] for _, v, _ in piece], uses,
                                 set(range(first, last + 1)),
                                 lambda key: kinds[key] == "made" and key not in escaping)
        out[first:last + 1] = [_launch_step(steps[first][2], [ops[k] for k, _, _ in piece],
                                            dropped)]
    return out


def _launch_step(config, chain, dropped):
    """One LAUNCH step doing ``chain`` (each (op, specs, numbers, name)) per element."""
    from numgrad._compile.cuda_plan import LAUNCH
    segment = [(op, name, specs, nums) for op, specs, nums, name in chain]
    dtype = chain[0][1][0].dtype
    lines, body, names, formulas, arrays = shared._chain(
        segment, lambda out, k: out.key not in dropped, lambda a: f"A{a}[O{a} + i]",
        lambda k: [], wrap=lambda k: f"H(y{k}, Z)")
    params = [f"A{a}, O{a}" for a in range(len(arrays))]
    params += ["n", "Z"] + [f"P{k}, Q{k}" for k in range(len(chain))]
    src = "\n".join(
        ["# numgrad.compile fused CUDA kernel, generated by numgrad/_compile/cuda_fuse.py"]
        + [f"# F{j}: {name}" for j, name in enumerate(formulas)]
        + ["from numba import cuda", "", "", f"def kernel({', '.join(params)}):"]
        + ["    for i in range(cuda.grid(1), n, cuda.gridsize(1)):"] + body) + "\n"
    bind = {v: f for f, v in names.items()}
    bind["H"] = handoff()
    kernel = shared.generated(src, bind, _jit)
    template, holes = [], []
    for key, off in arrays:
        holes.append((len(template), None, key))
        template += [None, off // dtype.itemsize]
    n = chain[0][1][-1].shape[0]
    template += [n, (np.int32 if dtype.itemsize == 4 else np.int64)(0)]
    for _, _, nums, _ in chain:
        template += nums
    return [LAUNCH, kernel, config, tuple(template), tuple(holes)]


def _jit(mod, cache):
    from numba import cuda

    from numgrad.kernels._jit import guard_cache
    from numgrad.kernels.cuda import _launch
    return guard_cache(cuda.jit(mod.kernel, cache=cache and _launch.CACHE))


_HANDOFF = []


def handoff():
    """``H(y, zero)``: ``y`` as the float type of ``zero``'s width, passed through an xor of
    its bits with ``zero`` (0 at run time, unknown to the compilers)."""
    if _HANDOFF:
        return _HANDOFF[0]
    from numgrad.kernels.cuda import _launch
    if _launch.SIM:
        def h(y, zero):
            return (np.float32 if zero.dtype.itemsize == 4 else np.float64)(y)
    else:
        h = _intrinsic()
    _HANDOFF.append(h)
    return h


def _intrinsic():
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def h(typingctx, y, zero):
        if not isinstance(y, (types.Float, types.Integer, types.Boolean)) or \
                not isinstance(zero, types.Integer):
            return None
        fty = types.float32 if zero.bitwidth == 32 else types.float64

        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[0], sig.args[0], fty)  # as the store rounds it
            ity = ir.IntType(zero.bitwidth)
            bits = builder.xor(builder.bitcast(v, ity), args[1])
            return builder.bitcast(bits, context.get_value_type(fty))
        return fty(y, zero), codegen
    return h
