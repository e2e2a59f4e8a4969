"""The ``mpi`` backend: collectives of mpi4py on the arrays' own buffers.

Every collective is started non-blocking (``Iallreduce``, ``Ibcast``, ...) and returns the
MPI request; a blocking call is the same request waited on at once. The arrays are handed to
MPI as they are (contiguous NumPy arrays, the tensors' storage), so nothing is copied.
"""

import os

import numpy as np

_NP_TO_OP = None


def _ops():
    from mpi4py import MPI

    from numgrad.distributed._ops import ReduceOp
    # bool data reduces with the logical ops (MPI defines no arithmetic on C_BOOL): a sum or
    # a maximum of bools is their "or", a product or a minimum their "and", as in PyTorch
    arith = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
             ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
             ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}
    logical = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
               ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND, ReduceOp.BAND: MPI.LAND,
               ReduceOp.BXOR: MPI.LXOR}
    return arith, logical


def available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


class MpiBackend:
    name = "mpi"

    def __init__(self):
        from mpi4py import MPI

        global _NP_TO_OP
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_size = node.Get_size()
        node.Free()
        if _NP_TO_OP is None:
            _NP_TO_OP = _ops()

    def _op(self, op, arr):
        return _NP_TO_OP[1 if arr.dtype == np.bool_ else 0][op]

    def allreduce(self, arr, op):
        return self.comm.Iallreduce(self.MPI.IN_PLACE, arr, self._op(op, arr))

    def broadcast(self, arr, src):
        return self.comm.Ibcast(arr, root=src)

    def allgather(self, send, recv):
        return self.comm.Iallgather(send, recv)

    def reduce_scatter(self, send, recv, op):
        return self.comm.Ireduce_scatter_block(send, recv, self._op(op, send))

    def barrier(self):
        return self.comm.Ibarrier()

    def test(self, req):
        return req.Test()

    def wait(self, req):
        # poll, yielding the core between polls: MPICH's own Wait spins without yielding,
        # which on a machine with more busy threads than cores holds up the rank we wait for
        while not req.Test():
            os.sched_yield()

    def destroy(self):
        self.comm.Free()
