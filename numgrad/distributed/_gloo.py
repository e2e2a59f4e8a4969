"""The ``gloo`` backend: PyTorch's ``torch.distributed`` (for jobs launched by ``torchrun``).

The NumPy arrays are lent to PyTorch with ``torch.from_numpy`` (shared memory, no copy);
PyTorch is imported only when this backend is chosen.
"""

import os


def available():
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_gloo_available()


class _Done:
    """A request that completed inside a blocking call."""

    def is_completed(self):
        return True

    def wait(self):
        return True


class GlooBackend:
    name = "gloo"

    def __init__(self, init_method, world_size, rank, timeout):
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        kwargs = {} if timeout is None else {"timeout": timeout}
        dist.init_process_group("gloo", init_method=init_method, world_size=world_size,
                                rank=rank, **kwargs)
        self.group = dist.new_group(backend="gloo")  # numgrad's own, not the user's default
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.local_size = int(os.environ.get("LOCAL_WORLD_SIZE", self.size))

    def _t(self, arr):
        return self.torch.from_numpy(arr)

    def _op(self, op):
        from numgrad.distributed._ops import ReduceOp
        R = self.dist.ReduceOp
        return {ReduceOp.SUM: R.SUM, ReduceOp.AVG: R.SUM, ReduceOp.PRODUCT: R.PRODUCT,
                ReduceOp.MIN: R.MIN, ReduceOp.MAX: R.MAX, ReduceOp.BAND: R.BAND,
                ReduceOp.BOR: R.BOR, ReduceOp.BXOR: R.BXOR}[op]

    def allreduce(self, arr, op):
        return self.dist.all_reduce(self._t(arr), self._op(op), group=self.group, async_op=True)

    def broadcast(self, arr, src):
        return self.dist.broadcast(self._t(arr), src, group=self.group, async_op=True)

    def allgather(self, send, recv):  # flat views of the contiguous buffers
        gather = getattr(self.dist, "all_gather_single", None) or self.dist.all_gather_into_tensor
        return gather(self._t(recv.reshape(-1)), self._t(send.reshape(-1)), group=self.group,
                      async_op=True)

    def reduce_scatter(self, send, recv, op):
        scatter = (getattr(self.dist, "reduce_scatter_single", None)
                   or self.dist.reduce_scatter_tensor)
        return scatter(self._t(recv.reshape(-1)), self._t(send.reshape(-1)), self._op(op),
                       group=self.group, async_op=True)

    def barrier(self):
        self.dist.barrier(group=self.group)
        return _Done()

    def test(self, req):
        return req.is_completed()

    def wait(self, req):
        req.wait()

    def destroy(self):
        self.dist.destroy_process_group()
