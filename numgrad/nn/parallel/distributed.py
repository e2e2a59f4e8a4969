"""``DistributedDataParallel``: data-parallel training over ``numgrad.distributed``.

Construction broadcasts rank 0's parameters and buffers to every rank; each forward (in
training with gradients enabled) broadcasts the buffers again and arms the reducer, which
averages the gradients with bucketed all-reduces that overlap the rest of backward (see
``_reducer``). ``no_sync()`` accumulates gradients locally for gradient accumulation.
"""

import contextlib

from numgrad.autograd import grad_mode
from numgrad.distributed import _world
from numgrad.distributed._ops import ReduceOp  # noqa: F401  (re-exported for users)
from numgrad.nn.modules.module import Module
from numgrad.nn.parallel._reducer import Reducer

_MB = 1024 * 1024
DEFAULT_BUCKET_CAP_MB = 25
DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


class DistributedDataParallel(Module):
    """Wraps ``module``; ``forward`` calls it; ``backward`` averages the gradients over ranks.

    PyTorch's signature; CPU modules only (``device_ids`` and ``output_device`` must be
    None). ``gradient_as_bucket_view=True`` makes each ``.grad`` a view of its slot in the
    communication bucket, as in PyTorch (no copy back after the all-reduce; keep no
    reference to a gradient across steps); ``static_graph`` is accepted and changes nothing.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        pg = _world._default()
        if process_group is not None:
            raise ValueError("numgrad.distributed has only the default (world) group")
        if device_ids is not None or output_device is not None:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                "{device(type='cpu')}.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self.module = module
        self.dim = dim
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * _MB)
        first = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._pg = pg
        if init_sync:
            self._broadcast([p for _, p in module.named_parameters()]
                            + [b for _, b in module.named_buffers()])
        self.reducer = Reducer(params, pg, self.bucket_bytes_cap, first, find_unused_parameters,
                               as_view=gradient_as_bucket_view)

    def _broadcast(self, tensors):
        """Rank 0's values into ``tensors`` (in place: started together, then waited on)."""
        if self._pg.size == 1:
            return
        backend = self._pg.backend
        reqs = []
        for t in tensors:
            a = t._data
            if not a.flags.c_contiguous:
                raise RuntimeError("DistributedDataParallel needs contiguous parameters and "
                                   "buffers")
            reqs.append(backend.broadcast(a, 0))
        for r in reqs:
            backend.wait(r)

    def forward(self, *inputs, **kwargs):
        sync = grad_mode.is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            self.reducer.check_finished()
            self.reducer.prepare_forward()
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                self._broadcast(buffers)
        out = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare_backward(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally (no communication); the first
        backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
