"""A trace of CUDA work (``cuda_tape.py``) turned into a replayable plan, its verification and
its replay.

Kernels receive whole flat device buffers with element offsets and strides as plain
integers, so a plan locates *buffers*, not views. Each device buffer a recorded event used is
one *slot*:

* an *external* slot: the buffer of a CUDA tensor the function can reach, found again at each
  call from that tensor. The signature (``device_key``) holds every such tensor's offset,
  shape, strides, dtype, buffer size and which tensors share a buffer, so the recorded
  offsets and strides are right for the buffers of any call that replays the plan;
* a *fresh* slot: a buffer made during the trace that the caller can see afterwards (the
  result, a new ``.grad``, new ``.data``): allocated anew at each call;
* a *static* slot: a buffer made during the trace that nobody outside sees (intermediates,
  constants copied from the host), or one that existed before and is not reachable: the plan
  keeps it and every call reuses it. A host-to-device copy into it is repeated at each call.

Replay runs the recorded steps in order: each launch with the same grid, block and scalar
arguments on the slots' current buffers; allocations of fresh buffers; host-to-device copies,
of a reachable CPU tensor's current data (``x.to("cuda")`` inside the function; the CPU part
of the signature fixes its layout) or else of the recorded content; and each host read (a
check numgrad makes, such as "is a target out of range") as a guard: a value different from
the trace's raises ``GuardFailed`` and the call runs eagerly. Verification (``verify``)
replays on copies of every buffer the plan touches beside the second eager call (memory the
trace made starts as 0xff bytes, NaN, not as the last call left it), and keeps
the plan only if the result, every touched external buffer, the new gradients and data are
the same bit for bit, and every guard comes before the first change to a buffer the caller
holds.
"""

import numpy as np

from numgrad._compile.cuda_fuse import fuse as fuse_launches
from numgrad._compile.cuda_tape import Alloc, CudaEvent, Launch, Read, Upload
from numgrad._compile.plan import (
    GuardFailed,
    Unplannable,
    _extent,
    _rebuild,
    _specs,
    _view,
    apply_effects,
)
from numgrad._compile.tape import address, root
from numgrad._compile.verify import same_bits, same_result
from numgrad.tensor import Tensor

LAUNCH, ALLOC, UPLOAD, READ = "launch", "alloc", "upload", "read"


def device_key(t, a, roots):
    """The signature part of a CUDA tensor ``t`` with data ``a`` (``state.signature``);
    ``roots`` numbers the buffers in order of appearance, so sharing is part of it."""
    n = roots.get(id(a.buf))
    if n is None:
        n = roots[id(a.buf)] = len(roots)
    return ("cuda", a.shape, a.strides_el, a.dtype, a.offset, a.buf.size, t._requires_grad,
            t._grad is None, t._grad_fn is None, n)


def involved(calls, pre):
    """Whether a trace did device work or reached CUDA tensors (a ``CudaPlan`` then)."""
    return any(d.__class__ is not np.ndarray for d, _, _ in pre) or any(
        isinstance(c, CudaEvent) for c in calls)


def _is_device(a):
    return hasattr(a, "copy_to_host") and not isinstance(a, np.ndarray)


def _span(buf):
    """[low, high) device addresses of flat buffer ``buf``."""
    if hasattr(buf, "_ary"):  # the simulator's device memory is host memory
        lo = buf._ary.__array_interface__["data"][0]
    else:
        lo = buf.__cuda_array_interface__["data"][0]
    return lo, lo + buf.size * buf.dtype.itemsize


class _Slots:
    """Assigns every device buffer of a trace to a slot (see the module docstring)."""

    def __init__(self, externals):
        self.of = {}  # id(buf) -> slot
        self.bufs = []  # slot -> the buffer in the trace
        self.kind = []  # slot -> external index / "made" / "kept"
        for i, d in enumerate(externals):
            if d.__class__ is not np.ndarray and id(d.buf) not in self.of:
                self._new(d.buf, i)

    def _new(self, buf, kind):
        self.of[id(buf)] = len(self.bufs)
        self.bufs.append(buf)
        self.kind.append(kind)
        return len(self.bufs) - 1

    def made(self, buf):
        if id(buf) in self.of:
            raise Unplannable("a device buffer was made twice")
        return self._new(buf, "made")

    def locate(self, buf):
        slot = self.of.get(id(buf))
        if slot is not None:
            return slot
        if len(buf.shape) != 1 or not buf.is_c_contiguous():
            raise Unplannable("a kernel received a strided device array")
        lo, hi = _span(buf)
        for other in self.bufs:
            olo, ohi = _span(other)
            if lo < ohi and olo < hi:
                raise Unplannable("a kernel received part of a device buffer")
        return self._new(buf, "kept")


class _View:
    """A CudaArray to rebuild on a slot's buffer."""

    __slots__ = ("slot", "offset", "shape", "strides", "owner")

    def __init__(self, slots, a):
        self.slot = slots.locate(a.buf)
        self.offset, self.shape, self.strides = a.offset, a.shape, a.strides_el
        self.owner = a.base is None

    def build(self, bufs):
        from numgrad.kernels.cuda.array import CudaArray
        buf = bufs[self.slot]
        if self.owner:
            return CudaArray(buf, self.offset, self.shape, self.strides)
        base = CudaArray(buf, 0, (buf.size,), (1,))
        return CudaArray(buf, self.offset, self.shape, self.strides, base=base)


def _describe(x, slots, detach):
    """The structure of a function result, its CUDA tensors as ``_View``s. CudaArrays (a
    forward plan's saved buffers) stay CudaArrays."""
    if hasattr(x, "strides_el"):
        return ("a", _View(slots, x))
    if isinstance(x, Tensor):
        if x._requires_grad and not detach:
            raise Unplannable("the function returns a tensor that requires grad")
        if x._data.__class__ is np.ndarray:
            raise Unplannable("the function returns a CPU tensor made from CUDA data")
        return ("t", _View(slots, x._data))
    if isinstance(x, (tuple, list)):
        return (type(x), [_describe(v, slots, detach) for v in x])
    if isinstance(x, dict):
        return (dict, {k: _describe(v, slots, detach) for k, v in x.items()})
    if isinstance(x, np.ndarray):
        raise Unplannable("the function returns an array")
    return ("v", x)


def device_buffers(event):
    """The device buffers a recorded event used (a launch's, possibly in tuples)."""
    if event.__class__ is not Launch:
        return [event.buf] if isinstance(event, CudaEvent) else []
    out = []
    for a in event.args:
        if _is_device(a):
            out.append(a)
        elif a.__class__ in (tuple, list):
            out.extend(b for b in a if _is_device(b))
    return out


def _launch_step(event, slots):
    """(LAUNCH, kernel, config, argument template, [(position, inner index, slot)])."""
    holes = []
    for pos, a in enumerate(event.args):
        if _is_device(a):
            holes.append((pos, None, slots.locate(a)))
        elif a.__class__ in (tuple, list):
            for j, b in enumerate(a):
                if _is_device(b):
                    holes.append((pos, j, slots.locate(b)))
                elif isinstance(b, np.ndarray):
                    raise Unplannable("a host array reached a CUDA kernel")
        elif isinstance(a, np.ndarray):
            raise Unplannable("a host array reached a CUDA kernel")
    return [LAUNCH, event.kernel, event.config, tuple(event.args), tuple(holes)]


def _host_source(source, externals):
    """Where the host array a host-to-device copy read lies: (index of the reachable CPU
    tensor, byte offset from its data, shape, strides, dtype), to be read again at each call;
    None for memory no reachable tensor holds (a constant, replayed with its content)."""
    if source.size == 0:
        return None
    for j, d in enumerate(externals):
        if d.__class__ is np.ndarray and d.size and np.may_share_memory(source, d):
            span, dspan = _extent(source), _extent(d)
            if root(source) is not root(d) or not (dspan[0] <= span[0] and
                                                   span[1] <= dspan[1]):
                raise Unplannable("a copy to the GPU read memory outside a CPU tensor")
            return (j, address(source) - address(d), source.shape, source.strides,
                    source.dtype)
    return None


def _host_content(datas, source):
    """The flat C-ordered content a CPU tensor's copy to the GPU uploads now."""
    j, off, shape, strides, dtype = source
    d = datas[j]
    if d.flags.c_contiguous:
        base = (d, 0)
    else:
        r = root(d)
        if not (r.flags.c_contiguous or r.flags.f_contiguous):
            raise GuardFailed  # memory NumPy cannot view anew: run eagerly
        base = (r, address(d) - address(r))
    return np.ascontiguousarray(_view(base, off, shape, strides, dtype)).reshape(-1)


def _host_copy(buf):
    return buf.copy_to_host()


def _device_copy(buf):
    from numgrad.kernels.cuda import _launch
    out = _launch.alloc(buf.size, buf.dtype)
    out.copy_to_device(buf)
    return out


def _poisoned(n, dtype):
    """A new device buffer of ``n`` elements, every byte 0xff (NaN in every float type)."""
    from numgrad.kernels.cuda import _launch
    out = _launch.alloc(n, dtype)
    out.copy_to_device(np.full(out.size * out.dtype.itemsize, 255, np.uint8).view(out.dtype))
    return out


def _same_array(a, b):
    """Whether two tensor datas (CudaArrays) are the same layout and bits."""
    return a.__class__ is b.__class__ and a.shape == b.shape and a.dtype == b.dtype and \
        a.strides_el == b.strides_el and same_bits(a.to_host(), b.to_host())


def _same_result(x, y):
    return same_result(x, y, _same_array)


class CudaPlan:
    """A replayable trace of CUDA work. ``call(tensors)`` replays it on the reachable tensors
    and returns the function's result; ``shadow`` and ``verify`` check it against an eager
    call first."""

    fresh = ()  # (no fresh buffer starts from traced content: ``api`` retries none)
    fused = None

    def __init__(self, calls, pre, post, result, detach=False, fuse=True, trusted=None):
        """``calls`` from the tape; ``pre``/``post`` the reachable tensors' (data, grad,
        version) before and after the traced run; ``result`` what the function returned;
        ``detach``: it ran its own backward (a result that requires grad is replayed
        detached); ``fuse``: runs of elementwise launches become one kernel
        (``cuda_fuse.py``); ``trusted``: ids of the host arrays (other than reachable CPU
        tensors) a copy to the GPU may replay with their traced content: constants made from
        Python values, values read from the GPU (checked at each replay)."""
        externals = [d for d, _, _ in pre]
        slots = _Slots(externals)
        steps = []
        for event in calls:
            cls = event.__class__
            if cls is Launch:
                steps.append(_launch_step(event, slots))
            elif cls is Alloc:
                steps.append([ALLOC, slots.made(event.buf), event.buf.size, event.buf.dtype])
            elif cls is Upload:
                source = _host_source(event.source, externals)
                if source is None and trusted is not None and event.source.size and \
                        id(root(event.source)) not in trusted:
                    raise Unplannable("a copy to the GPU read host values computed outside the "
                                      "recorded work")
                steps.append([UPLOAD, slots.made(event.buf), event.content, source])
            elif cls is Read:
                steps.append([READ, slots.locate(event.buf), event.offset, event.shape,
                              event.strides, event.value])
            else:
                raise Unplannable("CPU kernels ran beside CUDA ones")
        self.result = _describe(result, slots, detach)
        escaping = _specs(self.result)
        self.effects = []
        for i, ((d0, g0, v0), (d1, g1, v1)) in enumerate(zip(pre, post)):
            cpu = d0.__class__ is np.ndarray
            if d1 is not d0:
                if cpu or d1.__class__ is np.ndarray:
                    raise Unplannable("the function moves a tensor between devices")
                self.effects.append((i, "data", _View(slots, d1)))
            if g1 is not g0:
                if g1 is not None and (cpu or g1._requires_grad or g1._grad_fn is not None
                                       or g1._data.__class__ is np.ndarray):
                    raise Unplannable("the function leaves a gradient with history or on "
                                      "the CPU")
                self.effects.append((i, "grad", None if g1 is None else _View(slots, g1._data)))
            if v1 != v0:
                if cpu:
                    raise Unplannable("the function changes a CPU tensor")
                self.effects.append((i, "version", v1 - v0))
        escaping += [v for _, kind, v in self.effects if kind != "version" and v is not None]
        fresh = {v.slot for v in escaping if slots.kind[v.slot] == "made"}
        # static slots start as the trace's own buffers; fresh ones are allocated per call
        self.steps = [s for s in steps if s[0] is not ALLOC or s[1] in fresh]
        for s in self.steps:
            if s[0] is UPLOAD:
                s.append(s[1] in fresh)
        self.unfused_launches = sum(s[0] is LAUNCH for s in self.steps)
        if fuse:
            self.steps = fuse_launches(self.steps, slots.kind,
                                       {v.slot for v in escaping})
        # kernel launches one replay makes
        self.launches = sum(s[0] is LAUNCH for s in self.steps)
        if self.launches < self.unfused_launches:
            self.fused = self.unfused_launches - self.launches  # launches fusion saved
        self.uploads = [n for n, s in enumerate(self.steps) if s[0] is UPLOAD and s[3]]
        self.preset = [None if k.__class__ is int or s in fresh else b
                       for s, (k, b) in enumerate(zip(slots.kind, slots.bufs))]
        used = {h[2] for s in self.steps if s[0] is LAUNCH for h in s[4]}
        used |= {s[1] for s in self.steps if s[0] is READ} | {v.slot for v in escaping}
        self.externals = [(s, k) for s, k in enumerate(slots.kind)
                          if k.__class__ is int and s in used]
        self.statics = [s for s, b in enumerate(self.preset) if b is not None]
        self.kinds = slots.kind
        self.kept = [s for s in self.statics if slots.kind[s] == "kept"]
        self.guards_first = False

    # -----------------------------------------------------------------------------------------
    def call(self, tensors):
        """Replay on the reachable ``tensors``, leave the effects on them, return the result."""
        result, effects = self.run([t._data for t in tensors])
        apply_effects(tensors, effects)
        return result

    def run(self, datas):
        """Replay on the external data ``datas`` (the reachable tensors' data, in the order
        the plan was made with); returns (result, effects)."""
        bufs = list(self.preset)
        for slot, i in self.externals:
            bufs[slot] = datas[i].buf
        return self._run(bufs, datas if self.uploads else None)

    def _run(self, bufs, datas, watch=None):
        """Replay on the slot buffers ``bufs`` (``datas``: the reachable tensors' data, read
        by copies of CPU tensors to the GPU); returns (result, effects). Raises
        ``GuardFailed``. ``watch`` (verification): {slot: host copy at the start} of the
        buffers the caller holds, to check that every guard comes before they change."""
        from numgrad.kernels.cuda import _launch
        from numgrad.kernels.cuda.array import CudaArray
        # what CPU tensors hand the GPU, first: a layout NumPy cannot view fails before any
        # kernel runs
        contents = {k: _host_content(datas, self.steps[k][3]) for k in self.uploads}
        for n, step in enumerate(self.steps):
            kind = step[0]
            if kind is LAUNCH:
                _, k, config, template, holes = step
                args = list(template)
                for pos, j, slot in holes:
                    if j is None:
                        args[pos] = bufs[slot]
                    else:
                        inner = list(args[pos])
                        inner[j] = bufs[slot]
                        args[pos] = type(template[pos])(inner)
                k[config](*args)
            elif kind is ALLOC:
                if watch is not None:  # a verification must not pass on stale memory
                    bufs[step[1]] = _poisoned(step[2], step[3])
                else:
                    bufs[step[1]] = _launch.alloc(step[2], step[3])
            elif kind is UPLOAD:
                _, slot, content, _, fresh = step
                content = contents.get(n, content)
                if fresh:
                    bufs[slot] = _launch.to_device(content)
                else:
                    bufs[slot].copy_to_device(content)
            else:
                _, slot, offset, shape, strides, value = step
                if watch is not None and any(not same_bits(_host_copy(bufs[s]), v)
                                             for s, v in watch.items()):
                    self.guards_first = False
                got = CudaArray(bufs[slot], offset, shape, strides).to_host()
                if not same_bits(got, value):
                    raise GuardFailed
        effects = [(i, kind, v if kind == "version" or v is None else v.build(bufs))
                   for i, kind, v in self.effects]
        return _rebuild(self.result, bufs), effects

    # -----------------------------------------------------------------------------------------
    def shadow(self, datas):
        """Copies of every buffer the plan touches, as the call starts (``datas``: the
        reachable tensors' data), the external buffers they copy, and ``datas``."""
        copies, originals = {}, {}
        for slot, i in self.externals:
            originals[slot] = datas[i].buf
            copies[slot] = _device_copy(datas[i].buf)
        for slot in self.statics:
            # memory the trace made is written before it is read at every call: a verification
            # starts it as NaN bytes, so that a plan missing a step does not pass on what the
            # last call left there (the same inputs, or the forward form's fixed output
            # gradients, leave the same values)
            buf = self.preset[slot]
            copies[slot] = _poisoned(buf.size, buf.dtype) if self.kinds[slot] == "made" \
                else _device_copy(buf)
        return copies, originals, datas

    def verify(self, shadow, tensors, result):
        """Replay on the ``shadow`` copies and compare with the eager run that just ran on
        the originals: its ``result``, the external buffers, and the tensors' new data and
        gradients. Keeps the plan (returns True) only if all of it is the same bit for bit."""
        return self.check(shadow, tensors, result)[0]

    def check(self, shadow, tensors, result, part=None):
        """``verify``, returning also the replay's result: (same, result). ``part``: compare
        only that element of the replayed result (a forward plan also returns the buffers its
        backward reads)."""
        copies, originals, datas = shadow
        bufs = list(self.preset)
        for slot, buf in copies.items():
            bufs[slot] = buf
        held = {s: _host_copy(copies[s]) for s in (*originals, *self.kept)}
        self.guards_first = True
        try:
            res, effects = self._run(bufs, datas, watch=held)
        except Exception:  # noqa: BLE001 - a plan that cannot replay is not kept
            return False, None
        if not self.guards_first or not _same_result(result, res if part is None else res[part]):
            return False, None
        for slot, buf in originals.items():
            if not same_bits(_host_copy(buf), _host_copy(copies[slot])):
                return False, None
        for slot in self.kept:
            if not same_bits(_host_copy(self.preset[slot]), _host_copy(copies[slot])):
                return False, None
        for i, kind, v in effects:
            t = tensors[i]
            if kind == "grad":
                if (v is None) != (t._grad is None) or (
                        v is not None and not _same_array(t._grad._data, v)):
                    return False, None
            elif kind == "data" and not _same_array(t._data, v):
                return False, None
        return True, res
