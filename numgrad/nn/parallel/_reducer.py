"""DDP's gradient reducer: buckets, asynchronous all-reduces from the autograd hooks.

As in PyTorch, the parameters' gradients are grouped into buckets (per dtype; a bucket
closes when it reaches its byte limit). While backward runs, the post-accumulate-grad hook
of each parameter writes its gradient divided by the world size into its bucket; when a
bucket's last gradient has arrived its all-reduce (a sum) starts (non-blocking),
buckets always in the same order on every rank. A callback queued on the engine waits for
the all-reduces before ``backward()`` returns and copies the averages back into ``.grad``.

The first iteration uses one bucket per dtype (PyTorch's default when the graph may differ
from the parameters' order); afterwards the buckets are rebuilt once in the order the
gradients became ready, with PyTorch's limits (1 MiB for the first bucket, then
``bucket_cap_mb``), and rank 0's order is broadcast so every rank agrees.
"""

import sys

import numpy as np

from numgrad.autograd.engine import queue_callback
from numgrad.autograd.graph import AccumulateGrad
from numgrad.distributed._ops import ReduceOp
from numgrad.kernels import EW
from numgrad.tensor import Tensor, _wrap

UNUSED_MSG = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}\n"
    " In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either "
    "INFO or DETAIL to print out information about which particular parameters did not "
    "receive gradient on this rank as part of this error")


def assign_buckets(params, order, limits):
    """Lists of parameter indices, one per bucket: parameters taken in ``order`` join the open
    bucket of their dtype, which closes once it holds ``limits[k]`` bytes (k counts that
    dtype's closed buckets; the last limit repeats). Without an explicit order the buckets
    are sorted by their first parameter, as PyTorch sorts them."""
    explicit = order is not None
    order = range(len(params)) if order is None else order
    open_ = {}
    done = []
    for i in order:
        a = params[i]._data
        entry = open_.get(a.dtype)
        if entry is None:
            entry = open_[a.dtype] = [[], 0, 0]
        entry[0].append(i)
        entry[1] += a.nbytes
        if entry[1] >= limits[min(entry[2], len(limits) - 1)]:
            done.append(entry[0])
            open_[a.dtype] = [[], 0, entry[2] + 1]
    done += [e[0] for e in open_.values() if e[0]]
    if not explicit:
        done.sort(key=min)
    return done


class _Bucket:
    __slots__ = ("indices", "buffer", "slots", "pending", "work")

    def __init__(self, params, indices):
        self.indices = indices
        dtype = params[indices[0]]._data.dtype
        self.buffer = np.zeros(sum(params[i]._data.size for i in indices), dtype)
        self.slots = {}
        at = 0
        for i in indices:
            n = params[i]._data.size
            self.slots[i] = self.buffer[at:at + n]
            at += n
        self.pending = len(indices)
        self.work = None


def _same_buffer(a, b):
    """Whether array ``a`` starts where ``b`` does (a gradient that is its bucket slot)."""
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def _graph_leaves(out):
    """ids of the leaves (AccumulateGrad variables) the outputs' graph reaches."""
    stack, seen, leaves = [], set(), set()

    def collect(o):
        if isinstance(o, Tensor):
            if o.grad_fn is not None:
                stack.append(o.grad_fn)
            elif o.requires_grad:
                leaves.add(id(o))
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)
    collect(out)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.__class__ is AccumulateGrad:
            leaves.add(id(node.variable))
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                stack.append(nxt)
    return leaves


class Reducer:
    def __init__(self, params, pg, bucket_bytes, first_bucket_bytes, find_unused,
                 as_view=False):
        self.params = params
        # gradient_as_bucket_view: .grad becomes a view of its bucket slot (no copy back;
        # a gradient accumulated in place into it is averaged in place)
        self.as_view = as_view
        self.pg = pg
        self.world = pg.size
        self.find_unused = find_unused
        self.bucket_bytes = bucket_bytes
        self.first_bucket_bytes = first_bucket_bytes
        limits = ([first_bucket_bytes, bucket_bytes] if find_unused and
                  first_bucket_bytes < bucket_bytes else [sys.maxsize])
        self._set_buckets(list(reversed(assign_buckets(params, None, limits))))
        self.rebuild_pending = False
        self.rebuilt = find_unused  # PyTorch rebuilds only for a graph it trusts to repeat
        self.ready_order = []
        self.armed = False
        self.started = False
        self.ready = None
        self.unused = ()
        self.handles = [p.register_post_accumulate_grad_hook(self._hook(i))
                        for i, p in enumerate(params)]

    def _set_buckets(self, buckets):
        self.buckets = [_Bucket(self.params, ix) for ix in buckets]
        self.bucket_of = {i: b for b in self.buckets for i in b.indices}

    # -------------------------------------------------------------- per iteration
    def check_finished(self):
        """PyTorch's error when the previous backward left parameters without gradients."""
        if self.started:
            missing = [i for i in range(len(self.params)) if not self.ready[i]]
            raise RuntimeError(UNUSED_MSG.format(rank=self.pg.rank,
                                                 indices=" ".join(map(str, missing))))

    def prepare_forward(self):
        if self.rebuild_pending:
            self._rebuild()

    def prepare_backward(self, outputs):
        """Arm the hooks for the backward of ``outputs`` (called after forward)."""
        self.armed = True
        self.started = False
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        for b in self.buckets:
            b.pending = len(b.indices)
            b.work = None
        if self.find_unused:
            reached = _graph_leaves(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]

    def _hook(self, index):
        def hook(param):
            if self.armed:
                self._mark_ready(index, param)
        return hook

    def _mark_ready(self, index, param):
        if not self.started:
            self.started = True
            queue_callback(self._finalize)
            for i in self.unused:  # nothing will reach them: their buckets hold zeros
                self._ready(i, None)
        if self.ready[index]:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of "
                "the following reasons: 1) Use of a module parameter outside the `forward` "
                "function. 2) Reused parameters in multiple reentrant backward passes.")
        self._ready(index, param.grad)

    def _ready(self, index, grad):
        self.ready[index] = True
        if not self.rebuilt:
            self.ready_order.append(index)
        b = self.bucket_of[index]
        slot = b.slots[index]
        if grad is None:
            slot.fill(0)
        else:  # the share of the average, written straight into the bucket: one pass
            g = grad._data
            src = slot if self.as_view and _same_buffer(g, slot) else (
                g.reshape(-1) if g.flags.c_contiguous else g.ravel())
            EW.unary(EW.div_s, src, slot.dtype, float(self.world), 0.0, out=slot)
        b.pending -= 1
        backend = self.pg.backend
        if b.pending == 0:
            while self.next_bucket < len(self.buckets):
                nb = self.buckets[self.next_bucket]
                if nb.pending:
                    break
                nb.work = backend.allreduce(nb.buffer, ReduceOp.SUM)
                self.next_bucket += 1
        elif self.next_bucket:  # let MPI progress the all-reduce started last
            w = self.buckets[self.next_bucket - 1].work
            if w is not None:
                backend.test(w)

    def _finalize(self):
        """Wait for the all-reduces and copy the averages into ``.grad``."""
        self.armed = False
        if self.next_bucket < len(self.buckets):
            return  # some parameter got no gradient: the next forward raises
        self.started = False
        backend = self.pg.backend
        for b in self.buckets:
            backend.wait(b.work)
            b.work = None
        used = None
        if self.find_unused:
            used = np.zeros(len(self.params), np.int32)
            for i in range(len(self.params)):
                used[i] = i not in self.unused
            backend.wait(backend.allreduce(used, ReduceOp.MAX))
        for i, p in enumerate(self.params):
            slot = self.bucket_of[i].slots[i]
            g = p.grad
            if g is None and used is not None and not used[i]:
                continue
            if self.as_view:
                if g is None or not _same_buffer(g._data, slot):
                    p.grad = _wrap(slot.reshape(p._data.shape))
            elif g is None:
                p.grad = _wrap(slot.reshape(p._data.shape).copy())
            else:
                np.copyto(g._data, slot.reshape(g._data.shape))
        if not self.rebuilt:
            self.rebuilt = True
            self.rebuild_pending = True

    def _rebuild(self):
        """Buckets in the order rank 0's gradients became ready (PyTorch's rebuild)."""
        self.rebuild_pending = False
        order = np.full(len(self.params), -1, np.int64)
        order[:len(self.ready_order)] = self.ready_order[:len(self.params)]
        backend = self.pg.backend
        backend.wait(backend.broadcast(order, 0))
        order = [int(i) for i in order if i >= 0]
        seen = set(order)
        order += [i for i in range(len(self.params)) if i not in seen]
        self._set_buckets(assign_buckets(self.params, order,
                                         [self.first_bucket_bytes, self.bucket_bytes]))
        self.ready_order = []

    def remove(self):
        for h in self.handles:
            h.remove()
