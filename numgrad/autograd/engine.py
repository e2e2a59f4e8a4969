"""The backward engine: reverse topological execution without recursion.

1. Count, for every node reachable from the roots, how many edges point at it (an explicit
   stack, so a 100,000-op chain is fine).
2. Run ready nodes (all their consumers done) from a heap ordered by creation sequence,
   newest first, as PyTorch's CPU engine does; ``AccumulateGrad`` runs as soon as it is ready.
3. Each gradient is summed to its input's shape and cast to its dtype in one place
   (``_conform``) using the node's ``_meta``; fan-in gradients are added; saved values are
   freed after a node runs unless ``retain_graph``.
4. What a hook hands back (or rebinds a gradient's ``.data`` to) is checked as PyTorch checks
   it, type, device and size, before any node or kernel sees it.
"""

import operator
import re
import sys

import numpy as np

from numgrad import _arrays, _hook
from numgrad.autograd import anomaly_mode, grad_mode
from numgrad.autograd.anomaly_mode import STATE as ANOMALY
from numgrad.autograd.function import BackwardCFunction
from numgrad.autograd.graph import FREED_MSG, AccumulateGrad
from numgrad.autograd.regions import add_into, embedded, pieces_into
from numgrad.kernels import EW, RED
from numgrad.kernels._parallel import ELEMENTWISE, pick
from numgrad.ops._util import is_array, is_tensor_instance
from numgrad.ops.reduction import sum_to_array
from numgrad.ops.shape import (
    SelectBackward0,
    SliceBackward0,
    SplitBackward0,
    SplitWithSizesBackward0,
    UnbindBackward0,
)
from numgrad.tensor import Tensor, _wrap

_ND = np.ndarray  # data of any other class is on the GPU
# nodes whose gradient is zeros of the input's shape with the incoming one in a region
_REGIONS = frozenset((SelectBackward0, SliceBackward0))
# nodes whose gradient is the pieces' gradients, each in its region (one node, many outputs)
_PIECES = frozenset((SplitBackward0, SplitWithSizesBackward0, UnbindBackward0))

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _modified_error(shape, dtype, fn, nr, current, expected):
    desc = f"[torch.{_TYPE_NAMES.get(dtype.name, dtype.name)}Tensor [{', '.join(map(str, shape))}]]"
    if fn is not None:
        name = fn.name()  # PyTorch's C++ nodes keep their name (torch::autograd::CopySlices)
        if not name.startswith("torch::"):
            name = re.sub(r'Backward[0-9]*$', '', type(fn).__name__)
        desc += f", which is output {nr} of {name},"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {desc} is at version {current}; expected version {expected} instead. Hint: "
        "enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def check_versions(node):
    """Raise PyTorch's error when a tensor this node saved was modified in place since (the
    forms of ``node._vchk``: see ``numgrad.ops._util.attach``)."""
    chk = node._vchk
    if chk is True or chk[0].__class__ is int:  # the short forms: all saved at version 0
        saved = node._saved or ()
        if chk is not True and chk[0]:  # the node's own saved output
            for arr in filter(is_array, saved):
                raise _modified_error(arr.shape, arr.dtype, node, 0, chk[0], 0)
        for v in saved:
            if v.__class__ is Tensor or is_tensor_instance(v):
                vc = v._vc
                if vc is not None and vc[0]:
                    raise _modified_error(v._data.shape, v._data.dtype, v.grad_fn,
                                          v._output_nr, vc[0], 0)
        return
    for target, expected, arr in chk:
        if arr is None:
            vc = target._vc
            if vc is not None and vc[0] != expected:
                raise _modified_error(target._data.shape, target._data.dtype, target.grad_fn,
                                      target._output_nr, vc[0], expected)
        elif target[0] != expected:
            raise _modified_error(arr.shape, arr.dtype, node, 0, target[0], expected)


_SEQ = operator.attrgetter("_seq")

# where each edge sits in a flat ``(node, output_nr, node, output_nr, ...)`` tuple, for nodes of
# up to 16 edges: the backward loop iterates this ready tuple instead of a new range per node
_MANY_EDGES = 33
_EDGE_AT = tuple(tuple(range(0, n, 2)) for n in range(_MANY_EDGES))

# callbacks queued during the running backward pass (None outside one); see queue_callback
_FINAL = [None]


def queue_callback(callback):
    """Run ``callback()`` when the backward pass now running has finished (after every node
    and hook), as PyTorch's ``Variable._execution_engine.queue_callback``; DDP waits on its
    gradient all-reduces this way. Callbacks run in the order queued, and may queue more."""
    queue = _FINAL[0]
    if queue is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    queue.append(callback)


def _run_final(queue):
    i = 0
    while i < len(queue):
        queue[i]()
        i += 1


class _ExecutionEngine:
    """What ``Variable._execution_engine`` offers: ``queue_callback``."""

    queue_callback = staticmethod(queue_callback)


EXECUTION_ENGINE = _ExecutionEngine()


def _collect(roots):
    """Nodes reachable from ``roots`` (explicit stack, no recursion), newest first, and for
    each AccumulateGrad the number of edges that feed it.

    Newest-first is a topological order (a node is always created after its inputs' nodes)
    and it is the order PyTorch's CPU engine runs nodes in; an AccumulateGrad runs as soon
    as its last producer has run, as in PyTorch.
    """
    nodes = []
    acc_in = {}
    seen = set(roots)
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node.__class__ is AccumulateGrad:
            continue
        nodes.append(node)
        nx = node._next
        nb = node._next2
        if nb is False and nx.__class__ is not tuple:  # one edge (nx, 0): most nodes
            if nx.__class__ is AccumulateGrad:
                acc_in[nx] = acc_in.get(nx, 0) + 1
            if nx not in seen:
                seen.add(nx)
                stack.append(nx)
            continue
        for nxt in (nx[::2] if nx.__class__ is tuple else (nx, nb)):
            if nxt is None:
                continue
            if nxt.__class__ is AccumulateGrad:
                acc_in[nxt] = acc_in.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    nodes.sort(key=_SEQ, reverse=True)
    return nodes, acc_in


def _needed(roots, targets):
    """Nodes that must run to deliver gradients to ``targets``: those with an edge path to one.

    A target itself runs only when another target lies beyond it; its incoming gradient is
    captured before that (so grad(z, y) leaves y's own node, and its saved values, alone).
    """
    parents = {}
    stack = list(roots)
    seen = set(roots)
    while stack:
        node = stack.pop()
        nx = node._next
        nb = node._next2
        for nxt in (nx[::2] if nx.__class__ is tuple else (nx,) if nb is False else (nx, nb)):
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    needed = set()
    stack = [t for t in targets if t in seen]
    while stack:
        node = stack.pop()
        for p in parents.get(node, ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def _run_checked(node, inp):
    """Run a node in anomaly mode: report the forward call site of any failure, check NaN."""
    try:
        if node._vchk is not None:
            check_versions(node)
        outs = node._run(inp)
        if ANOMALY[1]:
            anomaly_mode.check_nan(node, outs)
    except Exception as e:
        anomaly_mode.report(node, e)
        raise
    return outs


def _conform(node, outs):
    """Sum each gradient to its input's recorded shape and cast it to the input's dtype."""
    outs = list(outs)
    for i, m in enumerate(node._meta):
        g = outs[i]
        if m is None or g is None:
            continue
        shape, dtype = m
        a = g._data
        if a.shape != shape:
            lead = len(shape) - a.ndim  # leading 1s a node's gradient may leave out
            if lead > 0 and all(n == 1 for n in shape[:lead]):
                if a.__class__ is _ND and not grad_mode.state.enabled:
                    g = _wrap(_summed_to(g, a, shape[lead:]).reshape(shape))
                else:
                    g = g.sum_to_size(shape[lead:]).reshape(shape)
            elif a.__class__ is _ND and not grad_mode.state.enabled:
                g = _wrap(_summed_to(g, a, shape).reshape(shape))
            else:
                g = g.sum_to_size(shape)
        if g.dtype is not dtype:
            g = g.to(dtype)
        outs[i] = g
    return outs


def _summed_to(g, a, target):
    """Array ``a`` (``g``'s data) summed over the dims that ``target`` (a shape ``a``
    broadcasts from) lacks or has as 1: ``sum_to_size``'s kernel call, without the op
    around it (no graph is recorded here); ``g.sum_to_size`` raises PyTorch's error for a
    ``target`` that does not broadcast to ``a``'s shape."""
    src = a.shape
    if src == target:
        return a
    if not target:  # all into one element: sum_to_array's one-pass kernel call, directly
        return RED.sum_all(a, a.dtype, 1.0 if a.dtype.kind == "f" else 1)
    if len(target) > len(src) or not all(
            s == t or t == 1 for s, t in zip(reversed(src), reversed(target))):
        return g.sum_to_size(target)._data
    return sum_to_array(a, target)


def _hook_name(fn):
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _type_str(a):
    """PyTorch's legacy type name of data ``a`` (``torch.FloatTensor``)."""
    where = "" if a.__class__ is _ND else "cuda."
    return f"torch.{where}{_TYPE_NAMES.get(a.dtype.name, a.dtype.name)}Tensor"


def _check_value(fn, ref, value):
    """``value``, which hook ``fn`` handed back for a gradient whose data was ``ref``, after
    PyTorch's checks: a tensor of the same type, device and size (anything else would reach
    the next node's kernels)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(value).__name__}'")
    b = value._data
    if b.dtype != ref.dtype or b.__class__ is not ref.__class__:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value (was "
                           f"{_type_str(ref)} got {_type_str(b)})")
    if b.shape != ref.shape:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value")
    return value


def _check_values(fn, refs, values):
    """The gradients a node hook returned (a tuple, one per gradient it was given)."""
    if not isinstance(values, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(values).__name__}'")
    if len(values) != len(refs):
        raise RuntimeError(f"hook '{_hook_name(fn)}' has returned an incorrect number of values "
                           f"(got {len(values)}, but expected {len(refs)})")
    for ref, v in zip(refs, values):
        if v is not None:
            if ref is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            _check_value(fn, ref, v)
    return list(values)


def _data_of(grads):
    return [None if g is None else g._data for g in grads]


def _check_kept(fn, refs, grads):
    """A hook that rebound a gradient's ``.data`` kept its type and size."""
    for ref, g in zip(refs, grads):
        if g is not None and ref is not None and g._data is not ref:
            _check_value(fn, ref, g)


def _run_hooks_before(node, hooks, grads, captured, capture, shared):
    """Tensor hooks, retain_grad, autograd.grad captures, node pre-hooks: PyTorch's order.

    Returns the gradients to run the node on, or None when hooks left none to a built-in node.
    What hooks return may be held by the user: it joins ``shared`` (never stolen as a .grad).
    """
    if hooks is not None:
        _hook.unreplayable("autograd hooks")
        for nr, fns in hooks.tensor_pre.items():
            for fn in list(fns.values()):
                g = grads[nr]
                if g is None:
                    continue
                ref = g._data
                r = fn(g)
                if r is not None:
                    grads[nr] = _check_value(fn, ref, r)
                    shared.add(id(r))
                elif g._data is not ref:
                    _check_value(fn, ref, g)
        for nr, fn in hooks.retain.items():
            if grads[nr] is not None:
                fn(grads[nr])
    if capture is not None:
        for nr, slots in capture.get(node, {}).items():
            for slot in slots:
                captured[slot] = grads[nr]
    if hooks is not None and hooks.pre:
        leaf = node.__class__ is AccumulateGrad
        for fn in list(hooks.pre.values()):
            refs = _data_of(grads)
            r = fn(tuple(grads))
            if r is not None:
                grads = _check_values(fn, refs, r)
                shared.update(id(v) for v in r)
            if not leaf:  # a leaf's gradient may change size, as in PyTorch
                _check_kept(fn, refs, grads)
        if (not leaf and len(grads) == 1 and grads[0] is None
                and not isinstance(node, BackwardCFunction)):
            return None  # a built-in node has nothing to do without its gradient
    return grads


def _leaf_hooks(var, g, shared):
    """``var.register_hook`` hooks: they run first, as the tensor pre-hooks of its node."""
    _hook.unreplayable("autograd hooks")
    for fn in list(var._hooks.values()):
        r = fn(g)
        if r is not None and r is not g:
            g = _check_value(fn, g._data, r)
            if sys.getrefcount(r) > 3:  # the caller still holds it: never steal its buffer
                shared.add(id(r))
    return g


def _post_accumulate(var):
    """``register_post_accumulate_grad_hook`` hooks, after ``var.grad`` was updated."""
    _hook.unreplayable("autograd hooks")
    for fn in list(var._post_acc_hooks.values()):
        r = fn(var)
        if r is not None:
            _check_value(fn, var._data, r)
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def _sum(old, g, owned):
    """``old + g`` for two gradients arriving at one input (no graph recorded): a float sum
    of one shape runs the add kernel directly, into ``old`` itself when ``old`` is a sum this
    engine made (``owned``: ids of such sums that nothing but a buffer holds), else into a new
    array that joins ``owned``. The same kernel on the same operands as ``old + g``."""
    a = old._data
    b = g._data
    if (a.__class__ is _ND and b.__class__ is _ND and a.dtype is b.dtype and a.shape == b.shape
            and a.dtype.kind == "f" and a.flags.c_contiguous and b.flags.c_contiguous):
        k = EW.add
        n = a.size
        run = pick(k.flat, k.flat_par, n, ELEMENTWISE)
        if id(old) in owned:
            if n:
                run(a.ravel(), b.ravel(), a.ravel(), 0.0, 0.0)
            return old
        r = _arrays.new(a.shape, a.dtype)
        if n:
            run(a.ravel(), b.ravel(), r.ravel(), 0.0, 0.0)
        s = _wrap(r)
        owned.add(id(s))
        return s
    owned.discard(id(old))
    return old + g


def _hold(dense, old, buffers, buf, nx, nr, owned):
    """Make ``dense`` (a fresh gradient) the engine's sum for input ``nr`` of ``nx``, the
    gradient ``old`` waiting there (which the user may hold) added into it."""
    owned.add(id(dense))
    if buf is None:
        buf = buffers[nx] = [None] * nx._n_outputs
    buf[nr] = dense if old is None else _sum(dense, old, owned)


def _into_region(node, g, buffers, owned):
    """Run ``x[key]``'s ``SelectBackward0`` or ``SliceBackward0`` into the engine's sum at
    ``x``: with a sum the engine made already waiting there (``owned``), ``g`` is added into
    its region in place (``regions.add_into``: one kernel pass instead of the zeros of ``x``'s
    shape, the copy into them and the add); else the node's dense gradient (``embedded``:
    written in one pass) becomes a sum the engine owns, the gradient waiting there (which
    the user may hold) added into it, so the gradients arriving after it add into it too.
    False, having done nothing, where the kernel does not apply (see ``add_into``)."""
    nx = node._next
    nr = 0
    if nx.__class__ is tuple:
        nx, nr = nx
    if nx is None or node._next2 is not False:
        return False
    buf = buffers.get(nx)
    old = None if buf is None else buf[nr]
    shape, key = node._saved
    if old is not None and id(old) in owned:
        return add_into(old, g, shape, key)
    dense = embedded(g, shape, key)
    if dense is None:
        dense = node._backward(g)[0]
    _hold(dense, old, buffers, buf, nx, nr, owned)
    return True


def _into_pieces(node, grads, buffers, owned):
    """Run a split/unbind node (all its pieces' gradients ``grads``) into the engine's sum at
    ``x``: with a sum the engine made already waiting there (``owned``), each piece's gradient
    is added into its region in place (``regions.pieces_into``); else the node's gradient
    (``pieces_dense``: each item written once) becomes a sum the engine owns, the gradient
    waiting there added into it. False, having done nothing, where the kernel does not apply
    and a sum is waiting."""
    nx = node._next
    nr = 0
    if nx.__class__ is tuple:
        nx, nr = nx
    if nx is None:
        return False
    buf = buffers.get(nx)
    old = None if buf is None else buf[nr]
    if old is not None and id(old) in owned:
        if node._saved is None:
            raise RuntimeError(FREED_MSG)
        return pieces_into(old, node, grads)
    dense = node._run(grads)[0]
    _hold(dense, old, buffers, buf, nx, nr, owned)
    return True


def _disown(inp, owned):
    """Gradients leaving the buffers are no longer the engine's to add into."""
    for g in inp:
        owned.discard(id(g))


def _fire(acc, buffers, captured, capture, accumulate, shared, owned=None):
    """Run an AccumulateGrad node whose producers are all done."""
    inp = buffers.pop(acc, None)
    if inp is None:
        return
    if owned:
        _disown(inp, owned)
    var = acc.variable
    hooks = acc._hooks
    if hooks is None and capture is None and accumulate is True and not var._hooks:
        acc.accumulate(inp[0], shared)  # the common case: no hooks, no autograd.grad
        if var._post_acc_hooks:
            _post_accumulate(var)
        return
    run = accumulate is True or (accumulate and acc in accumulate)
    if not run and (capture is None or acc not in capture):
        return
    if var._hooks:
        inp[0] = _leaf_hooks(var, inp[0], shared)
    if hooks is not None or capture is not None:
        inp = _run_hooks_before(acc, hooks if run else None, inp, captured, capture, shared)
    if run:
        if inp[0] is not None:
            acc.accumulate(inp[0], shared)
            if var._post_acc_hooks:
                _post_accumulate(var)
        if hooks is not None:
            for fn in list(hooks.post.values()):
                r = fn((), tuple(inp))
                if r is not None:
                    _check_values(fn, (), r)


def execute(roots, grads, keep_graph, create_graph, capture=None, targets=None,
            accumulate=True):
    """Run backward from ``roots`` ((node, output_nr) pairs) seeded with ``grads``.

    ``capture`` maps node -> {output_nr: [slot, ...]}: the gradients arriving there are
    returned in a list (autograd.grad). ``targets`` limits execution to nodes that lead to
    them. ``accumulate`` is True (every leaf), False (none) or a set of AccumulateGrad nodes.
    """
    if len(roots) == 1:
        root_nodes = [roots[0][0]]
    else:
        root_nodes = list(dict.fromkeys(n for n, _ in roots))
    nodes, acc_in = _collect(root_nodes)
    needed = _needed(root_nodes, targets) if targets is not None else None
    shared = {id(g) for g in grads}  # user-provided gradients are never stolen
    buffers = {}
    for (node, nr), g in zip(roots, grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    captured = None
    if capture is not None:
        captured = [None] * (1 + max(s for d in capture.values() for v in d.values() for s in v))
    anomaly = ANOMALY[0]
    tape = _hook.TAPE
    if tape is not None:
        tape.ran_backward = True
        if anomaly:
            tape.unreplayable("anomaly detection")
    state = grad_mode.state
    prev = state.enabled
    state.enabled = create_graph
    outer_final = _FINAL[0]
    final = _FINAL[0] = []
    pop = buffers.pop
    get = buffers.get
    # sums of fan-in gradients this engine made; None with create_graph (a sum is then a node)
    owned = None if create_graph else set()
    try:
        for node in root_nodes:
            if node.__class__ is AccumulateGrad and node not in acc_in:
                _fire(node, buffers, captured, capture, accumulate, shared)
        for node in nodes:
            inp = pop(node, None)
            outs = None
            if inp is not None:
                if owned:  # gradients leaving the buffers are no longer the engine's to add into
                    for g in inp:
                        owned.discard(id(g))
                hooks = node._hooks
                if hooks is not None or capture is not None:
                    inp = _run_hooks_before(node, hooks, inp, captured, capture, shared)
                if inp is not None and (needed is None or node in needed):
                    if anomaly:
                        outs = _run_checked(node, inp)
                    elif (node.__class__ in _REGIONS and owned is not None
                          and hooks is None and capture is None and _hook.TAPE is None
                          and node._meta is None and _into_region(node, inp[0], buffers, owned)):
                        pass  # delivered: outs stays None
                    elif (node.__class__ in _PIECES and owned is not None and hooks is None
                          and capture is None and _hook.TAPE is None
                          and _into_pieces(node, inp, buffers, owned)):
                        pass  # delivered: outs stays None
                    elif node._plain:
                        saved = node._saved
                        if saved is None:
                            raise RuntimeError(FREED_MSG)
                        if node._vchk is not None:
                            check_versions(node)
                        outs = node._backward(inp[0])
                        if not keep_graph and saved and not node._meta_only:
                            node._saved = None
                    else:
                        if node._vchk is not None:
                            check_versions(node)
                        outs = node._run(inp)
                        if not keep_graph:
                            node._release()
                    if node._meta is not None:
                        outs = _conform(node, outs)
                    if hooks is not None and hooks.post:
                        for fn in list(hooks.post.values()):
                            refs = _data_of(outs)
                            r = fn(tuple(outs), tuple(inp))
                            if r is not None:
                                outs = _check_values(fn, refs, r)
                                shared.update(id(v) for v in r)
                            _check_kept(fn, refs, outs)
                    if node._shares_outputs:
                        shared.update(id(g) for g in outs if g is not None)
            inp = None  # gone before a leaf below may take an output's memory as its .grad
            nx = node._next
            if nx.__class__ is not tuple:  # one edge (node, 0), or two (node, 0), (_next2, 0)
                nb = node._next2
                nx = (nx, 0) if nb is False else (nx, 0, nb, 0)
            n = len(nx)
            for j in _EDGE_AT[n] if n < _MANY_EDGES else range(0, n, 2):
                nxt = nx[j]
                if nxt is not None:
                    if outs is not None:
                        g = outs[j >> 1]
                        if g is not None:
                            nr = nx[j + 1]
                            buf = get(nxt)
                            if buf is None:
                                buffers[nxt] = [g] if nxt._n_outputs == 1 else \
                                    [g if k == nr else None for k in range(nxt._n_outputs)]
                            else:
                                old = buf[nr]
                                buf[nr] = g if old is None else old + g if owned is None \
                                    else _sum(old, g, owned)
                    if nxt.__class__ is AccumulateGrad:
                        left = acc_in[nxt] - 1
                        acc_in[nxt] = left
                        if left == 0:
                            _fire(nxt, buffers, captured, capture, accumulate, shared, owned)
        if final:
            _run_final(final)
    finally:
        state.enabled = prev
        _FINAL[0] = outer_final
    return captured


def backward_scalar(t):
    """``t.backward()`` for a one-element tensor with PyTorch's defaults (the common call)."""
    fn = t._grad_fn
    a = t._data
    if fn is None or a.size != 1 or a.dtype.kind != "f":
        return False
    if a.__class__ is _ND:
        g = _wrap(_arrays.constant(np.ones(a.shape, a.dtype)))
    else:
        g = _wrap(a.__class__.full(a.shape, 1, a.dtype))
    execute([(fn, t._output_nr)], [g], False, False)
    return True
