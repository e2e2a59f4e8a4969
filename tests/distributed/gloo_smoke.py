"""Run by tests/test_distributed.py as two processes with torchrun's environment: the
``gloo`` backend (PyTorch's torch.distributed) chosen by default, its collectives and DDP.
Prints ``GLOO-OK <rank>``."""

import numpy as np

import numgrad as torch
import numgrad.distributed as dist
from numgrad.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group()  # TORCHELASTIC_RUN_ID is set: gloo
    r = dist.get_rank()
    assert dist.get_backend() == "gloo", dist.get_backend()
    t = torch.arange(4.0) * (r + 1)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [0, 1.5, 3, 4.5], t
    gathered = [torch.zeros(2) for _ in range(2)]
    dist.all_gather(gathered, torch.ones(2) * r)
    assert gathered[1].tolist() == [1, 1]
    out = torch.zeros(2)
    dist.reduce_scatter(out, [torch.ones(2) * (r + 1), torch.ones(2) * 10])
    assert out.tolist() == ([3.0, 3.0] if r == 0 else [20.0, 20.0]), out
    b = torch.full((2,), float(r))
    dist.broadcast(b, 1, async_op=True).wait()
    assert b.tolist() == [1, 1]
    dist.barrier()
    torch.manual_seed(r)
    m = torch.nn.Linear(3, 2)
    d = DDP(m)
    d(torch.ones(1, 3) * (r + 1)).sum().backward()
    assert np.allclose(m.weight.grad.numpy(), 1.5), m.weight.grad
    dist.destroy_process_group()
    print("GLOO-OK", r, flush=True)


if __name__ == "__main__":
    main()
