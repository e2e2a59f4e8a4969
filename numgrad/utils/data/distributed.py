"""``DistributedSampler``: each rank's share of a data set, in PyTorch's order.

The indices are a permutation drawn from a generator seeded with ``seed + epoch`` (numgrad's
``randperm`` gives PyTorch's permutation for a seed), padded by repeating the first indices
until every rank has as many (or cut down with ``drop_last``), and dealt out round-robin:
rank ``r`` takes positions ``r, r + num_replicas, ...``.
"""

import math

from numgrad.random import Generator
from numgrad.utils.data.sampler import Sampler


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from numgrad import distributed as dist
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = Generator().manual_seed(self.seed + self.epoch).randperm(n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            pad = self.total_size - n
            repeats = 1 if pad <= n else math.ceil(pad / n)
            indices += (indices * repeats)[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use permutation number ``epoch`` (call before each epoch's loader pass)."""
        self.epoch = epoch
