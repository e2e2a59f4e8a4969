"""``numgrad.distributed``: ``torch.distributed``'s process group and collectives, on MPI.

Launch with ``mpiexec -n N python train.py`` (or a cluster's ``srun``) and call
``init_process_group()``: the default backend, ``"mpi"``, runs the collectives of
`mpi4py <https://mpi4py.readthedocs.io>`_ on the tensors' own buffers (a contiguous tensor
is never copied). ``backend="gloo"`` uses PyTorch's ``torch.distributed`` instead, for jobs
launched by ``torchrun`` (the default there). Each collective starts non-blocking; with
``async_op=True`` it returns a ``Work`` whose ``wait()`` finishes it, otherwise it is waited
on at once. Errors are PyTorch's (class and message), checked before MPI sees any buffer.
"""

import os

import numpy as np

from numgrad.distributed._ops import ReduceOp
from numgrad.distributed._world import (
    Work,
    _default,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
)
from numgrad.tensor import Tensor


def is_available():
    """True: numgrad's distributed package is always built (a backend may still be missing)."""
    return True


def is_mpi_available():
    from numgrad.distributed import _mpi
    return _mpi.available()


def is_gloo_available():
    from numgrad.distributed import _gloo
    return _gloo.available()


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


class _Group:
    WORLD = None


GroupMember = group = _Group

_DTYPE_NAMES = {"float32": "torch.float32", "float64": "torch.float64", "int64": "torch.int64",
                "int32": "torch.int32", "int16": "torch.int16", "int8": "torch.int8",
                "uint8": "torch.uint8", "bool": "torch.bool"}


def _check_tensor(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")


def _check_list(ts, name):
    if not isinstance(ts, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} instead.")
    if not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} with elements of "
                        f"type {[type(t) for t in ts]}.")


def _same_dtype(*tensors):
    first = None
    for t in tensors:
        if first is None:
            first = t.dtype
        elif t.dtype is not first:
            raise ValueError("Invalid usage of tensors with different dtypes"
                             f"Found {first} and  {t.dtype}")


def _array(t):
    """The tensor's NumPy storage; collectives run on CPU tensors of PyTorch's 8 dtypes."""
    a = t._data
    if a.__class__ is not np.ndarray:
        raise RuntimeError("numgrad.distributed runs collectives on CPU tensors; move the "
                           "tensor with .cpu() first")
    if a.dtype.name not in _DTYPE_NAMES:
        raise RuntimeError(f"numgrad.distributed does not support {t.dtype} tensors")
    return a


def _check_group(grp):
    if grp is not None and grp is not _Group.WORLD:
        raise ValueError("numgrad.distributed has only the default (world) group")


def _sizes(shape):
    return f"({', '.join(map(str, shape))})"


def _contiguous(a):
    """``a`` itself when it is contiguous, else a contiguous copy to send and copy back."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _start(req, finish, async_op):
    work = Work(req, finish)
    if async_op:
        return work
    work.wait()
    return None


def _copy_back(dst, src):
    if dst is not src:
        np.copyto(dst, src)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks, in place (``ReduceOp.AVG``: the mean)."""
    _check_tensor(tensor, "tensor")
    pg = _default()
    _check_group(group)
    a = _array(tensor)
    op = _reduce_op(op)
    if op is ReduceOp.AVG and not tensor.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_TYPE_WORDS[a.dtype.name]}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and tensor.dtype.is_floating_point:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    buf = _contiguous(a)
    req = pg.backend.allreduce(buf, op)

    def finish():
        _copy_back(a, buf)
        if op is ReduceOp.AVG:
            tensor.div_(pg.size)
    return _start(req, finish, async_op)


_TYPE_WORDS = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
               "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double"}


def _reduce_op(op):
    if isinstance(op, ReduceOp.RedOpType) and op is not ReduceOp.PREMUL_SUM:
        return op
    raise ValueError(f"numgrad.distributed does not support reduce op {op}")


def _check_root(pg, src, what):
    if not isinstance(src, int) or not 0 <= src < pg.size:
        raise RuntimeError(f"ProcessGroupGloo::{what}: invalid root rank: {src}")


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s ``tensor`` into every rank's ``tensor``, in place."""
    _check_tensor(tensor, "tensor")
    pg = _default()
    _check_group(group)
    if src is None:
        src = group_src
    if src is None:
        raise ValueError("Must specify global_rank or group_rank")
    _check_root(pg, src, "broadcast")
    a = _array(tensor)
    buf = _contiguous(a)
    req = pg.backend.broadcast(buf, src)
    return _start(req, lambda: _copy_back(a, buf), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list[r]`` with rank ``r``'s ``tensor``."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    _same_dtype(*tensor_list, tensor)
    pg = _default()
    _check_group(group)
    if len(tensor_list) != pg.size:
        raise RuntimeError("ProcessGroupGloo::allgather: invalid output tensor list at index 0 "
                           f"(expected length {pg.size}, got {len(tensor_list)})")
    for i, t in enumerate(tensor_list):
        if t.shape != tensor.shape:
            raise RuntimeError(f"ProcessGroupGloo::allgather: invalid tensor size at index {i} "
                               f"(expected {_sizes(tensor.shape)}, got {_sizes(t.shape)})")
    a = _array(tensor)
    outs = [_array(t) for t in tensor_list]
    recv = np.empty((pg.size,) + a.shape, a.dtype)
    req = pg.backend.allgather(_contiguous(a), recv)

    def finish():
        for r, o in enumerate(outs):
            np.copyto(o, recv[r])
    return _start(req, finish, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Ranks' ``input_tensor`` concatenated along dim 0 (or stacked) into ``output_tensor``."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    _same_dtype(output_tensor, input_tensor)
    pg = _default()
    _check_group(group)
    out, inp = _array(output_tensor), _array(input_tensor)
    if out.size != inp.size * pg.size:
        raise RuntimeError("ProcessGroupGloo::allgather: output tensor must have "
                           f"{inp.size * pg.size} elements (world size x input), got {out.size}")
    buf = _contiguous(out)
    req = pg.backend.allgather(_contiguous(inp), buf)
    return _start(req, lambda: _copy_back(out, buf), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[r]`` over all ranks into rank ``r``'s ``output``."""
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    _same_dtype(output, *input_list)
    pg = _default()
    _check_group(group)
    if len(input_list) != pg.size:
        raise RuntimeError("invalid input tensor list size, must be world size")
    for i, t in enumerate(input_list):
        if t.shape != output.shape:
            raise RuntimeError(f"ProcessGroupGloo::reduce_scatter: invalid tensor size at index "
                               f"{i} (expected {_sizes(output.shape)}, got {_sizes(t.shape)})")
    op = _reduce_op(op)
    out = _array(output)
    send = np.empty((pg.size,) + out.shape, out.dtype)
    for r, t in enumerate(input_list):
        np.copyto(send[r], _array(t))
    return _reduce_scatter(pg, output, out, send, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """Reduce ``input`` (``world_size`` chunks along dim 0) over ranks; chunk ``r`` to rank r."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    _same_dtype(output, input)
    pg = _default()
    _check_group(group)
    out, inp = _array(output), _array(input)
    if inp.size != out.size * pg.size:
        raise RuntimeError("ProcessGroupGloo::reduce_scatter: input tensor must have "
                           f"{out.size * pg.size} elements (world size x output), got {inp.size}")
    return _reduce_scatter(pg, output, out, _contiguous(inp), _reduce_op(op), async_op)


def _reduce_scatter(pg, output, out, send, op, async_op):
    if op is ReduceOp.AVG and not output.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_TYPE_WORDS[out.dtype.name]}")
    buf = _contiguous(out)
    req = pg.backend.reduce_scatter(send, buf, op)

    def finish():
        _copy_back(out, buf)
        if op is ReduceOp.AVG:
            output.div_(pg.size)
    return _start(req, finish, async_op)


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Return once every rank has called ``barrier``."""
    pg = _default()
    _check_group(group)
    return _start(pg.backend.barrier(), None, async_op)


__all__ = ["ReduceOp", "Work", "is_available", "is_mpi_available", "is_gloo_available",
           "is_torchelastic_launched", "init_process_group", "destroy_process_group",
           "is_initialized", "get_rank", "get_world_size", "get_backend", "barrier",
           "broadcast", "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "group", "GroupMember"]
