"""The forward form of ``numgrad.compile``: ``out = f(x)`` returns tensors whose backward is one
node, ``CompiledFunctionBackward``, as PyTorch's AOTAutograd makes it.

A trace runs ``f`` eagerly and then, on the same tape, the backward of what it returned:
``autograd.grad`` of the outputs that require grad, for the leaves their graph reaches, with a
fixed pattern as output gradients and the graph kept for the caller. The tape is cut in two:

* the forward plan replays the forward's kernels and also returns the buffers of the forward
  that the backward reads ("saved"). Those are made anew at every call, so the results of two
  calls can be backpropagated in any order;
* the backward plan replays the backward's kernels on the reachable tensors, the saved buffers
  and the output gradients the node receives, and returns the leaves' gradients. The engine
  accumulates them into ``.grad``, so hooks on leaves run there, eagerly.

The node checks, as eager nodes do, that no tensor it reads was modified in place since the
forward, and frees the saved buffers after a backward without ``retain_graph``. Gradients
made with ``create_graph=True`` are right but cannot be differentiated again, as with
PyTorch's compiled functions.

On CUDA tensors (``CudaForwardPlan``) the two plans are ``CudaPlan``s (``cuda_plan.py``) and
the saved buffers are the device buffers the forward allocated that the backward reads: each
is a fresh buffer of the forward plan, allocated at every call.
"""

import threading

import numpy as np

from numgrad import _arrays, _hook, autograd
from numgrad._compile.cuda_plan import READ, UPLOAD, CudaPlan, device_buffers
from numgrad._compile.cuda_tape import Alloc, Upload
from numgrad._compile.fuse import POOL
from numgrad._compile.plan import (
    _NO_GUARD,
    GuardFailed,
    Plan,
    Pool,
    Unplannable,
    apply_effects,
    poolable,
)
from numgrad._compile.tape import root
from numgrad._compile.verify import replay, same_result, shadow, unchanged
from numgrad.autograd import grad_mode, graph
from numgrad.autograd.graph import FREED_MSG, AccumulateGrad, Node
from numgrad.tensor import Tensor, _wrap, edge

DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"


def flat(x, out):
    """The tensors in a function result, in the order ``plan`` describes them."""
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            flat(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            flat(v, out)
    return out


def needs_backward(result):
    return grad_mode.state.enabled and any(t._requires_grad for t in flat(result, []))


def mark():
    """A node sequence number: nodes made after this call have larger ones."""
    return next(graph._seq)


class Recording:
    """What the traced backward was run on and gave."""

    __slots__ = ("req", "leaves", "gouts", "grads")

    def __init__(self, req, leaves, gouts, grads):
        self.req = req  # positions (in ``flat``) of the outputs that require grad
        self.leaves = leaves  # indices (in the reachable tensors) of the leaves reached
        self.gouts = gouts  # the output gradients used
        self.grads = grads  # what autograd.grad returned for the leaves


def record(result, tensors, start):
    """Run the backward of ``result`` on the active tape (see the module docstring). Returns a
    ``Recording``, or why the forward form cannot replay this call."""
    outs = flat(result, [])
    req = [nr for nr, o in enumerate(outs) if o._requires_grad]
    index = {id(t): i for i, t in enumerate(tensors)}
    reached = set()
    seen = set()
    stack = [edge(outs[nr])[0] for nr in req]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.__class__ is AccumulateGrad:
            i = index.get(id(node.variable))
            if i is None:
                return "its result's graph reaches a tensor that requires grad and that " \
                       "the function makes or cannot see"
            reached.add(i)
            continue
        if node._seq < start:
            return "its result's graph reaches tensors computed before the call"
        if node._hooks is not None:
            return "autograd hooks"
        stack.extend(n for n, _ in node.next_functions)
    leaves = sorted(reached)
    gouts = [_pattern(outs[nr]._data) for nr in req]
    held = [tensors[i]._hooks for i in leaves]
    for i in leaves:
        tensors[i]._hooks = None  # they run when the compiled node's gradients arrive
    try:
        grads = autograd.grad([outs[nr] for nr in req], [tensors[i] for i in leaves],
                     [_wrap(g) for g in gouts], retain_graph=True, allow_unused=True)
    finally:
        for i, h in zip(leaves, held):
            tensors[i]._hooks = h
    return Recording(req, leaves, gouts, list(grads))


def _pattern(a):
    """Output gradients for the traced backward: exact in every float type, not all equal.
    For a CUDA output (a CudaArray) the pattern is copied to the GPU outside the tape: the
    backward plan receives it as an input, as it receives the engine's gradients later."""
    p = (0.75 + 0.0625 * (np.arange(a.size) % 9)).astype(a.dtype).reshape(a.shape)
    if a.__class__ is np.ndarray:
        return p
    from numgrad.kernels.cuda.array import CudaArray
    tape = _hook.TAPE
    if tape is not None:
        tape._depth += 1  # not recorded: the tapes record outermost calls only
    try:
        return CudaArray.from_host(p)
    finally:
        if tape is not None:
            tape._depth -= 1


def _arrays_in(x, out):
    if x.__class__ is np.ndarray:
        out.append(x)
    elif x.__class__ in (tuple, list):
        for v in x:
            _arrays_in(v, out)
    return out


class ForwardPlan:
    """The two plans of a forward-form trace; ``call`` replays the forward and returns its
    result, with the outputs that require grad attached to a new ``CompiledFunctionBackward``."""

    def __init__(self, calls, split, pre, mid, result, tape, rec, fuse=True):
        n = len(pre)
        mids = [d for d, _, _ in mid]
        known = {id(root(d)) for d, _, _ in pre} | {id(root(d)) for d in mids}
        outs = flat(result, [])
        # buffers the forward made that the backward reads: one arena for those nobody else
        # sees, the others (outputs, arrays kernels returned) passed one by one
        own = {id(root(o._data)) for o in outs}
        own |= {id(root(g._data)) for _, g, _ in mid if g is not None}  # a .grad it set
        cands, pooled = {}, {}
        for _, args, _, res in calls[:split]:
            for a in _arrays_in(res, []):
                own.add(id(root(a)))
            for a in _arrays_in(args, _arrays_in(res, [])):
                r = root(a)
                if id(r) not in known:
                    cands.setdefault(id(r), r)
        read = {id(root(a)) for _, args, _, _ in calls[split:] for a in _arrays_in(args, [])}
        for key, r in list(cands.items()):
            if key in read and key not in own and poolable(r):
                pooled[key] = cands.pop(key)
        cands = list(cands.values())
        ext = [(d, None, 0) for d in mids + cands + rec.gouts]
        pool = Pool(list(pooled.values()), tape) if pooled else None
        bwd = Plan(calls[split:], ext, ext, tuple(rec.grads), tape, detach=True, fuse=fuse,
                   pool=pool, reuse=True)
        if any(step[5] is not _NO_GUARD for step in bwd.steps):
            raise Unplannable("its backward depends on tensor values")
        used = set(bwd.used)
        self.m = len(cands)
        self.saved_at = [j for j in range(self.m) if n + j in used]
        for j in range(self.m):
            if n + j not in used:
                bwd.externals[n + j] = None  # not kept alive by the plan
        saved = [cands[j] for j in self.saved_at]
        self.fwd = Plan(calls[:split], pre, mid, (result, tuple(saved)), tape, detach=True,
                        fuse=fuse, pool=pool, reuse=True)
        self.bwd = bwd
        self.pool = pool
        self.free = []  # arenas of released nodes, for the next calls
        self.lock = threading.Lock()  # backward replays share the plan's intermediates
        _describe_outputs(self, outs, rec)
        self.reads = [i for i in bwd.used if i < n]
        saved_ids = {id(s) for s in saved}
        self.saved_outs = [nr for nr, o in enumerate(outs) if id(root(o._data)) in saved_ids]
        # a gradient that is an input buffer (the output gradient itself, say) is copied
        self.alias = [d[0] == "t" and (d[1].key.__class__ is int or d[1].key == POOL)
                      for d in bwd.result[1]]

    @property
    def fused(self):
        return self.fwd.fused or self.bwd.fused

    def _arena(self):
        pool = self.pool
        if pool is None:
            return None
        if self.free:
            return pool.reset(self.free.pop())
        return pool.arena()

    def call(self, tensors):
        datas = [t._data for t in tensors]
        arena = self._arena()
        (result, saved), effects = self.fwd.run(datas, arena=arena)
        if effects:
            apply_effects(tensors, effects)
            datas = [t._data for t in tensors]
        return _attach(self, tensors, datas, result, saved, arena)

    def backward(self, datas, saved, arena, grads):
        """The leaves' gradients (one per ``inputs``) from the output gradients ``grads`` (one
        per output, None where none arrived)."""
        gs = []
        for nr, dtype, (shape, npdtype) in zip(self.outs, self.out_dtypes, self.out_meta):
            g = grads[nr]
            if g is None:
                gs.append(np.zeros(shape, npdtype))
                continue
            if g.dtype is not dtype:
                g = g.to(dtype)
            a = g._data
            gs.append(a if a.flags.c_contiguous else _arrays.contiguous(a))
        cands = [None] * self.m
        for j, a in zip(self.saved_at, saved):
            cands[j] = a
        try:
            with self.lock:
                res, _ = self.bwd.run(datas + cands + gs, arena=arena)
        except GuardFailed:
            raise RuntimeError("numgrad.compile: a kernel of the compiled backward returned an "
                               "array of another shape than when it was traced") from None
        return [_wrap(res[k]._data.copy()) if self.alias[k] else res[k] for k in self.grad_at]

    # ---------------------------------------------------------------------------------------
    def verify(self, copies, tensors, result, rec):
        """Replay both plans on copies and compare with the eager run: its ``result``, the
        tensors after it and the gradients its traced backward gave (``rec``)."""
        if self.pool is not None:
            copies[POOL] = (self.pool.arena(verify=True), 0)
        ok, res = replay(self.fwd, copies, tensors, result, part=0)
        if not ok or rec.req != self.outs or rec.leaves != self.leaves or \
                [k for k, g in enumerate(rec.grads) if g is not None] != self.grad_at:
            return False
        n = len(tensors)
        cands = [None] * self.m
        for j, s in zip(self.saved_at, res[1]):
            cands[j] = s
        datas = [t._data for t in tensors] + cands + rec.gouts
        bcopies = shadow(self.bwd, datas)
        if self.pool is not None:
            bcopies[POOL] = (copies[POOL][0].copy(), 0)
        try:
            grads, _ = self.bwd.run(None, bcopies)
        except Exception:
            return False
        want = tuple(rec.grads)
        return same_result(want, grads) and unchanged(self.bwd, bcopies, datas, skip=range(
            n, n + self.m))


def _describe_outputs(plan, outs, rec):
    """What both forward plans (CPU and CUDA) keep of the traced call's outputs and of its
    traced backward (``rec``): which outputs need grad, their dtypes, the output gradients'
    shapes, the leaves and which of them got a gradient."""
    plan.n_outputs = len(outs)
    plan.outs = rec.req
    plan.out_dtypes = [outs[nr].dtype for nr in rec.req]
    plan.out_meta = [(g.shape, g.dtype) for g in rec.gouts]
    plan.leaves = rec.leaves
    plan.inputs = [i for i, g in zip(rec.leaves, rec.grads) if g is not None]
    plan.grad_at = [k for k, g in enumerate(rec.grads) if g is not None]


def _attach(plan, tensors, datas, result, saved, arena):
    """Make the forward call's ``CompiledFunctionBackward`` node, holding what its backward
    reads, and attach the outputs that require grad to it; returns ``result``."""
    node = CompiledFunctionBackward(plan, tensors, datas, saved, arena)
    outs = flat(result, [])
    for nr in plan.outs:
        o = outs[nr]
        o._grad_fn = node
        o._output_nr = nr
        o._requires_grad = True
    checks = [(tensors[i], tensors[i]._version, None) for i in plan.reads]
    checks += [(outs[nr], 0, None) for nr in plan.saved_outs]
    node._vchk = checks or None
    return result


class CudaForwardPlan:
    """``ForwardPlan`` on CUDA tensors: the forward and backward parts of the tape become two
    ``CudaPlan``s. The forward plan returns ``(result, saved)``, ``saved`` being whole device
    buffers (CudaArrays) the forward allocated or copied to the GPU and the backward reads;
    being part of the result, they are allocated anew at every call, so the results of two
    calls can be backpropagated in any order. The backward plan's inputs are the reachable
    tensors' data after the forward, the saved buffers and the output gradients, in that
    order; it returns the leaves' gradients."""

    fused = None
    pool = None

    def __init__(self, calls, split, pre, mid, result, rec, fuse=True, trusted=None):
        from numgrad.kernels.cuda.array import CudaArray
        n = len(pre)
        mids = [d for d, _, _ in mid]
        known = {id(d.buf) for d in [d for d, _, _ in pre] + mids
                 if d.__class__ is not np.ndarray}
        made = {}
        for event in calls[:split]:
            if event.__class__ in (Alloc, Upload):
                made[id(event.buf)] = event.buf
        read = {id(b) for event in calls[split:] for b in device_buffers(event)}
        saved = [CudaArray(b, 0, (b.size,), (1,)) for key, b in made.items()
                 if key in read and key not in known]
        ext = [(d, None, 0) for d in mids + saved + rec.gouts]
        bwd = CudaPlan(calls[split:], ext, ext, tuple(rec.grads), detach=True, fuse=fuse,
                       trusted=trusted)
        if any(step[0] is READ for step in bwd.steps):
            raise Unplannable("its backward depends on tensor values")
        self.fwd = CudaPlan(calls[:split], pre, mid, (result, tuple(saved)), detach=True,
                            fuse=fuse, trusted=trusted)
        self.bwd = bwd
        if self.fwd.fused or bwd.fused:  # a failed verification retries without fusion
            self.fused = (self.fwd.fused or 0) + (bwd.fused or 0)
        self.free = []  # (no arenas: CompiledFunctionBackward._release keeps none)
        self.lock = threading.Lock()  # backward replays share the plan's intermediates
        outs = flat(result, [])
        _describe_outputs(self, outs, rec)
        # the reachable tensors the backward reads: device buffers, CPU tensors it copies
        reads = {i for _, i in bwd.externals if i < n}
        reads |= {s[3][0] for s in bwd.steps if s[0] is UPLOAD and s[3] is not None
                  and s[3][0] < n}
        self.reads = sorted(reads)
        saved_ids = {id(a.buf) for a in saved}
        self.saved_outs = [nr for nr, o in enumerate(outs) if id(o._data.buf) in saved_ids]
        # a gradient in a buffer the call does not make for it alone (an output gradient
        # passed through, a buffer the plan keeps, another gradient's) is copied
        self.alias, seen = [], set()
        for d in bwd.result[1]:
            slot = d[1].slot if d[0] == "t" else None
            self.alias.append(slot is not None and (bwd.kinds[slot] != "made" or slot in seen))
            seen.add(slot)

    def shadow(self, datas):
        return self.fwd.shadow(datas)

    def call(self, tensors):
        datas = [t._data for t in tensors]
        (result, saved), effects = self.fwd.run(datas)
        if effects:
            apply_effects(tensors, effects)
            datas = [t._data for t in tensors]
        return _attach(self, tensors, datas, result, list(saved), None)

    def backward(self, datas, saved, arena, grads):
        """The leaves' gradients (one per ``inputs``) from the output gradients ``grads`` (one
        per output, None where none arrived)."""
        from numgrad.kernels.cuda.array import CudaArray, c_strides
        gs = []
        for nr, dtype, (shape, npdtype) in zip(self.outs, self.out_dtypes, self.out_meta):
            g = grads[nr]
            if g is None:  # the output got no gradient: d(loss)/d(output) = 0
                gs.append(CudaArray.full(shape, 0, npdtype))
                continue
            if g.dtype is not dtype:
                g = g.to(dtype)
            a = g._data
            if a.__class__ is np.ndarray or a.shape != shape:
                raise RuntimeError(f"numgrad.compile: the compiled backward expected a CUDA "
                                   f"gradient of shape {tuple(shape)}, got {g.device} "
                                   f"{tuple(a.shape)}")
            # the launches take the traced layout's offset and strides as numbers
            gs.append(a if a.offset == 0 and a.strides_el == c_strides(shape) else a.copy())
        with self.lock:
            res, _ = self.bwd.run(datas + saved + gs)
        return [_wrap(res[k]._data.copy()) if self.alias[k] else res[k] for k in self.grad_at]

    def verify(self, copies, tensors, result, rec):
        """Replay both plans on copies and compare with the eager run: its ``result``, the
        tensors after it and the gradients its traced backward gave (``rec``)."""
        ok, res = self.fwd.check(copies, tensors, result, part=0)
        if not ok or rec.req != self.outs or rec.leaves != self.leaves or \
                [k for k, g in enumerate(rec.grads) if g is not None] != self.grad_at:
            return False
        datas = [t._data for t in tensors] + list(res[1]) + rec.gouts
        # the backward must also leave every buffer it reads as it found it
        return self.bwd.check(self.bwd.shadow(datas), tensors, tuple(rec.grads))[0]


class CompiledFunctionBackward(Node):
    """The one backward node of a compiled forward call."""

    _plain = False

    def __init__(self, plan, tensors, datas, saved, arena):
        Node.__init__(self, tuple(edge(tensors[i]) for i in plan.inputs), (datas, saved, arena))
        self._plan = plan
        self._n_outputs = plan.n_outputs

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {id(self):#x}>"

    def _run(self, grads):
        if self._saved is None:
            raise RuntimeError(FREED_MSG)
        out = self._plan.backward(*self._saved, grads)
        if grad_mode.state.enabled:  # create_graph: the gradients cannot be differentiated
            node = CompiledFunctionBackwardBackward(self.next_functions)
            for k, g in enumerate(out):
                g._grad_fn, g._output_nr, g._requires_grad = node, k, True
            node._n_outputs = len(out)
        return out

    def _release(self):
        saved, self._saved = self._saved, None
        free = self._plan.free
        if saved is not None and saved[2] is not None and len(free) < 2:
            free.append(saved[2])  # nothing else holds it: gradients in it were copied


class CompiledFunctionBackwardBackward(Node):
    _plain = False

    def _run(self, grads):
        raise RuntimeError(DOUBLE_BACKWARD)


for _cls in (CompiledFunctionBackward, CompiledFunctionBackwardBackward):
    _cls.__module__ = "numgrad.autograd.function"
