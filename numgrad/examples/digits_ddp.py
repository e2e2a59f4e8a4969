"""The digits training of the demo, data-parallel over MPI ranks with DDP.

    mpiexec -n 2 python -m numgrad.examples.digits_ddp --model mlp

Each rank trains on its DistributedSampler share of every epoch (the per-rank batch is
``--batch-size / world size``, so the global batch, and the learning curve, match one
process); DistributedDataParallel averages the gradients. Rank 0 prints the progress.
Needs the demo and distributed extras: pip install "numgrad[demo,distributed]".
"""

import argparse
import time

import numgrad as torch
import numgrad.distributed as dist
from numgrad import nn
from numgrad.examples.digits import SEED, evaluate, load_digits_split, make_cnn, make_mlp
from numgrad.nn.parallel import DistributedDataParallel as DDP
from numgrad.utils.data import DataLoader, TensorDataset
from numgrad.utils.data.distributed import DistributedSampler


def train(kind="mlp", epochs=None, batch_size=64, lr=None):
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(SEED + rank)  # DDP copies rank 0's initial weights to every rank
    x_train, x_test, y_train, y_test = load_digits_split()
    model = DDP(make_mlp() if kind == "mlp" else make_cnn())
    epochs = epochs or (40 if kind == "mlp" else 20)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr or 3e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    data = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(data, seed=SEED)
    loader = DataLoader(data, batch_size=max(1, batch_size // world), sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        model.train()
        start = time.perf_counter()
        total = torch.zeros(2, dtype=torch.float64)  # loss sum and count over all ranks
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += torch.tensor([loss.item() * len(yb), len(yb)], dtype=torch.float64)
        scheduler.step()
        dist.all_reduce(total)
        if rank == 0:
            test_loss, test_acc = evaluate(model.module, x_test, y_test, loss_fn)
            mean = total[0].item() / total[1].item()
            print(f"{kind} epoch {epoch + 1:2d}/{epochs}: loss {mean:.4f} test {test_loss:.4f} "
                  f"acc {100 * test_acc:.2f}% "
                  f"({time.perf_counter() - start:.2f} s, {world} ranks)", flush=True)
    return model.module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--backend", default=None, help="mpi (default) or gloo (torchrun)")
    args = parser.parse_args(argv)
    dist.init_process_group(backend=args.backend)
    try:
        train(args.model, args.epochs, args.batch_size)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
