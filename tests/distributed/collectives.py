"""Run by tests/test_distributed.py under ``mpiexec -n 2``: every collective against NumPy on
every dtype, PyTorch's errors, DDP's unused-parameter handling, DistributedSampler from the
process group. Each rank computes the expected results from every rank's inputs (drawn from
per-rank seeds). Prints ``COLLECTIVES-OK`` on success; any failure raises."""

import warnings

import numpy as np

import numgrad as torch
import numgrad.distributed as dist
from numgrad.nn.parallel import DistributedDataParallel as DDP
from numgrad.utils.data.distributed import DistributedSampler

DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]
R = dist.ReduceOp


def data(rank, dtype, shape=(3, 4)):
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(1, 4, shape).astype(dtype)  # small: products stay in range


def raises(cls, msg, fn):
    try:
        fn()
    except cls as e:
        assert str(e) == msg, (str(e), msg)
        return
    raise AssertionError(f"expected {cls.__name__}: {msg}")


def expected_reduce(arrs, op, dtype):
    if dtype == "bool":
        if op in (R.SUM, R.MAX):
            return np.logical_or.reduce(arrs)
        return np.logical_and.reduce(arrs)
    f = {R.SUM: np.add, R.AVG: np.add, R.PRODUCT: np.multiply, R.MIN: np.minimum,
         R.MAX: np.maximum}[op]
    out = f.reduce(arrs).astype(dtype)
    return out / len(arrs) if op is R.AVG else out


def check_collectives(rank, world):
    for dtype in DTYPES:
        ndt = getattr(torch, dtype)
        inputs = [data(r, dtype) for r in range(world)]
        ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX] + ([R.AVG] if dtype.startswith("float") else [])
        for op in ops:
            want = expected_reduce(np.stack(inputs), op, dtype)
            t = torch.from_numpy(inputs[rank].copy())
            ptr = t.data_ptr() if hasattr(t, "data_ptr") else None
            dist.all_reduce(t, op=op)
            assert t.dtype is ndt
            np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, err_msg=f"{dtype} {op}")
            if ptr is not None:
                assert t.data_ptr() == ptr  # in place
            # non-contiguous (a transposed view) and async
            t = torch.from_numpy(inputs[rank].T.copy()).t()
            assert not t.is_contiguous()
            work = dist.all_reduce(t, op=op, async_op=True)
            assert work.wait() is True and work.is_completed()
            np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, err_msg=f"{dtype} {op} view")
        # broadcast from each root
        for src in range(world):
            t = torch.from_numpy(inputs[rank].copy())
            assert dist.broadcast(t, src) is None
            np.testing.assert_array_equal(t.numpy(), inputs[src])
        # all_gather and all_gather_into_tensor
        outs = [torch.zeros(3, 4, dtype=ndt) for _ in range(world)]
        dist.all_gather(outs, torch.from_numpy(inputs[rank]))
        for r in range(world):
            np.testing.assert_array_equal(outs[r].numpy(), inputs[r])
        big = torch.zeros(world * 3, 4, dtype=ndt)
        dist.all_gather_into_tensor(big, torch.from_numpy(inputs[rank]))
        np.testing.assert_array_equal(big.numpy(), np.concatenate(inputs))
        # reduce_scatter: rank r gets the reduction of every rank's chunk r
        if dtype != "bool":
            chunks = [[data(10 * r + k, dtype) for k in range(world)] for r in range(world)]
            out = torch.zeros(3, 4, dtype=ndt)
            dist.reduce_scatter(out, [torch.from_numpy(c) for c in chunks[rank]])
            want = expected_reduce(np.stack([chunks[r][rank] for r in range(world)]), R.SUM,
                                   dtype)
            np.testing.assert_array_equal(out.numpy(), want)
            out = torch.zeros(3, 4, dtype=ndt)
            dist.reduce_scatter_tensor(out, torch.from_numpy(np.concatenate(chunks[rank])),
                                       op=R.MAX)
            want = expected_reduce(np.stack([chunks[r][rank] for r in range(world)]), R.MAX,
                                   dtype)
            np.testing.assert_array_equal(out.numpy(), want)
    # bitwise ops on integers
    t = torch.tensor([3, 5]) + rank
    dist.all_reduce(t, op=R.BAND)
    assert t.tolist() == [0, 4]
    assert dist.barrier() is None
    assert dist.barrier(async_op=True).wait()


def check_errors(rank, world):
    raises(ValueError, "trying to initialize the default process group twice!",
           dist.init_process_group)
    raises(RuntimeError, f"ProcessGroupGloo::allgather: invalid output tensor list at index 0 "
           f"(expected length {world}, got 1)",
           lambda: dist.all_gather([torch.zeros(2)], torch.ones(2)))
    raises(RuntimeError, "ProcessGroupGloo::allgather: invalid tensor size at index 0 "
           "(expected (2), got (3))",
           lambda: dist.all_gather([torch.zeros(3)] * world, torch.ones(2)))
    raises(ValueError, "Invalid usage of tensors with different dtypesFound torch.float64 and  "
           "torch.float32",
           lambda: dist.all_gather([torch.zeros(2, dtype=torch.float64)] * 2, torch.ones(2)))
    raises(RuntimeError, "ProcessGroupGloo::broadcast: invalid root rank: 5",
           lambda: dist.broadcast(torch.ones(2), 5))
    raises(RuntimeError, "ProcessGroupGloo::broadcast: invalid root rank: -1",
           lambda: dist.broadcast(torch.ones(2), -1))
    raises(RuntimeError, "result type Float can't be cast to the desired output type Long",
           lambda: dist.all_reduce(torch.arange(3), op=R.AVG))
    raises(RuntimeError, "Cannot use ReduceOp.BAND with non-integral dtype",
           lambda: dist.all_reduce(torch.ones(2), op=R.BAND))
    raises(RuntimeError, "invalid input tensor list size, must be world size",
           lambda: dist.reduce_scatter(torch.zeros(2), [torch.ones(2)]))
    raises(TypeError, "Invalid function argument. Expected parameter `tensor` of type "
           "torch.Tensor\n             but got <class 'list'> instead.",
           lambda: dist.all_reduce([1, 2]))
    raises(RuntimeError, "DistributedDataParallel is not needed when a module doesn't have any "
           "parameter that requires a gradient.",
           lambda: DDP(torch.nn.Linear(2, 2).requires_grad_(False)))


class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 2)
        self.b = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.a(x)


def check_ddp(rank, world):
    # an unused parameter: PyTorch's error at the next forward; the used ones are averaged
    d = DDP(TwoHeads())
    d(torch.ones(1, 2)).sum().backward()
    assert d.module.b.weight.grad is None
    try:
        d(torch.ones(1, 2))
    except RuntimeError as e:
        msg = str(e)
        assert msg.startswith("Expected to have finished reduction in the prior iteration"), msg
        assert f"Parameter indices which did not receive grad for rank {rank}: 2 3\n" in msg
    else:
        raise AssertionError("no error for unused parameters")
    # find_unused_parameters=True: no error; unused weights keep grad None; used averaged
    d = DDP(TwoHeads(), find_unused_parameters=True)
    for _ in range(2):
        d.zero_grad()
        d(torch.ones(1, 2) * (rank + 1)).sum().backward()
        assert d.module.b.weight.grad is None
        np.testing.assert_allclose(d.module.a.weight.grad.numpy(), np.full((2, 2), 1.5))
    # a parameter used on rank 0 only gets rank 0's gradient averaged with zeros
    class Either(TwoHeads):
        def forward(self, x):
            return self.a(x) if rank else self.b(self.a(x))
    d = DDP(Either(), find_unused_parameters=True)
    out = d(torch.ones(1, 2))
    out.sum().backward()
    gb = d.module.b.bias.grad
    assert gb is not None
    np.testing.assert_allclose(gb.numpy(), [0.5, 0.5])
    # no_sync: local accumulation, then the next synced backward averages the sums
    m = torch.nn.Linear(2, 2)
    d = DDP(m)
    with d.no_sync():
        d(torch.ones(1, 2) * (rank + 1)).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), np.full((2, 2), rank + 1.0))
    d(torch.ones(1, 2) * (rank + 1)).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), np.full((2, 2), 3.0))
    # buffers and parameters come from rank 0 at construction
    torch.manual_seed(rank)
    bn = torch.nn.BatchNorm1d(3)
    bn.running_mean.fill_(float(rank))
    lin = torch.nn.Linear(3, 3)
    d = DDP(torch.nn.Sequential(lin, bn))
    flat = torch.cat([lin.weight.detach().reshape(-1), bn.running_mean])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    assert all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered)
    assert bn.running_mean.tolist() == [0.0, 0.0, 0.0]
    assert list(d.state_dict())[0] == "module.0.weight"


def check_sampler(rank, world):
    s = DistributedSampler(range(11), shuffle=False)
    assert (s.num_replicas, s.rank) == (world, rank)
    assert list(s) == list(range(11) if False else [i % 11 for i in range(12)])[rank::world]


def check_threads(world):
    """Each rank runs its share of the cores: numgrad's kernel threads and OpenBLAS's."""
    import ctypes
    import os

    from numgrad.distributed._threads import cores
    from numgrad.kernels.cpu._openblas import _loaded_openblas
    if any(k in os.environ for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                                     "OPENBLAS_NUM_THREADS")):
        return
    want = max(1, cores() // world)
    assert torch.get_num_threads() == want, (torch.get_num_threads(), want)
    lib = ctypes.CDLL(_loaded_openblas())
    getter = getattr(lib, "scipy_openblas_get_num_threads64_", None) or \
        lib.openblas_get_num_threads
    assert getter() == want, (getter(), want)


def main():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.init_process_group(backend="mpi", world_size=2, rank=0)
    assert any("For MPI backend, world_size (2) and rank (0) are ignored" in str(w.message)
               for w in caught)
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "mpi" and world == 2
    check_threads(world)
    check_collectives(rank, world)
    check_errors(rank, world)
    check_ddp(rank, world)
    check_sampler(rank, world)
    dist.destroy_process_group()
    assert not dist.is_initialized()
    if rank == 0:
        print("COLLECTIVES-OK", flush=True)


if __name__ == "__main__":
    main()
