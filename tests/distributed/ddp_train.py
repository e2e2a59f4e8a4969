"""Run by tests/test_distributed.py under ``mpiexec -n 2``: DDP against one process.

Each rank builds the model from its own seed (so only DDP's initial broadcast makes them
equal), trains on its half of every batch, and rank 0 also trains a plain copy of rank 0's
model on the whole batch; after every step the parameters must agree (float32 tolerance).
``--bucket-mb X`` sets ``bucket_cap_mb``; ``--no-allreduce`` replaces the all-reduce with
nothing (the check must then fail); ``--accumulate`` adds a ``no_sync()`` micro-batch;
``--as-view`` sets ``gradient_as_bucket_view``; ``--zero-grads`` zeroes gradients in place
(``zero_grad(set_to_none=False)``), so they accumulate into the bucket views.
Prints ``DDP-OK`` on success.
"""

import argparse
import sys

import numpy as np

import numgrad as torch
import numgrad.distributed as dist
from numgrad.nn.parallel import DistributedDataParallel as DDP


class _Done:
    def Test(self):  # noqa: N802
        return True

    def Wait(self):  # noqa: N802
        pass


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bucket-mb", type=float, default=None)
    ap.add_argument("--no-allreduce", action="store_true")
    ap.add_argument("--accumulate", action="store_true")
    ap.add_argument("--as-view", action="store_true")
    ap.add_argument("--zero-grads", action="store_true")
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2, world
    model = make_model(100 + rank)
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb, gradient_as_bucket_view=args.as_view)
    if args.no_allreduce:
        backend = ddp.reducer.pg.backend
        backend.allreduce = lambda buf, op: _Done()
        backend.wait = backend.test = lambda req: True
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    if rank == 0:
        ref = make_model(100)
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(7)  # the same batches on every rank
    half = 8
    worst = 0.0
    for step in range(args.steps):
        x = rng.standard_normal((2 * half, 12)).astype(np.float32)
        y = rng.integers(0, 5, 2 * half)
        xs, ys = torch.from_numpy(x), torch.from_numpy(y)
        mine = slice(rank * half, (rank + 1) * half)
        opt.zero_grad(set_to_none=not args.zero_grads)
        if args.accumulate:  # two micro-batches per rank, the first without communication
            q = half // 2
            with ddp.no_sync():
                (torch.nn.functional.cross_entropy(ddp(xs[mine][:q]), ys[mine][:q]) / 2).backward()
            (torch.nn.functional.cross_entropy(ddp(xs[mine][q:]), ys[mine][q:]) / 2).backward()
        else:
            torch.nn.functional.cross_entropy(ddp(xs[mine]), ys[mine]).backward()
        opt.step()
        if args.as_view:  # every gradient is its slot in a bucket
            views = sum(p.grad.numpy().base is not None for p in model.parameters())
            assert views == len(list(model.parameters())), views
        if rank == 0:
            ref_opt.zero_grad()
            if args.accumulate:
                q = half // 2
                parts = [slice(0, q), slice(q, half), slice(half, half + q),
                         slice(half + q, 2 * half)]
                loss = sum(torch.nn.functional.cross_entropy(ref(xs[p]), ys[p]) for p in parts) / 4
            else:
                loss = torch.nn.functional.cross_entropy(ref(xs), ys)
            loss.backward()
            ref_opt.step()
            for a, b in zip(model.parameters(), ref.parameters()):
                worst = max(worst, float(np.abs(a.detach().numpy() - b.detach().numpy()).max()))
        # every rank holds the same parameters after each step
        flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        other = torch.from_numpy(flat.copy())
        dist.broadcast(other, 0)
        if not np.array_equal(other.numpy(), flat):
            print(f"rank {rank}: parameters differ from rank 0's at step {step}", flush=True)
            sys.exit(1)
    if rank == 0:
        print(f"max |ddp - single process| = {worst:.3g}; buckets "
              f"{[len(b.indices) for b in ddp.reducer.buckets]}", flush=True)
        if worst > 1e-5:
            print("DDP-MISMATCH", flush=True)
            sys.exit(1)
        print("DDP-OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
