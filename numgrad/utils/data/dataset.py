"""``numgrad.utils.data.dataset``: Dataset, IterableDataset, TensorDataset, ConcatDataset,
ChainDataset, Subset and random_split."""

from typing import Generic, TypeVar

import numpy as np

from numgrad.random import default_generator

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style data set: samples by index (``__getitem__``), usually with ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples (``__iter__``). With ``num_workers > 0`` every worker iterates its
    own copy; ``get_worker_info()`` inside ``__iter__`` tells a copy which share to yield."""

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """The samples of several IterableDatasets, one after the other."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class TensorDataset(Dataset):
    """Samples are the index-th rows of each tensor."""

    def __init__(self, *tensors):
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1]) if self.cumulative_sizes else 0

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        k = int(np.searchsorted(self.cumulative_sizes, idx, side="right"))
        start = 0 if k == 0 else int(self.cumulative_sizes[k - 1])
        return self.datasets[k][idx - start]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=default_generator):
    """Split into non-overlapping subsets of the given lengths (or fractions)."""
    n = len(dataset)
    if all(0 <= x <= 1 for x in lengths) and abs(sum(lengths) - 1) < 1e-9 and sum(lengths) != n:
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = generator.randperm(n).tolist()
    out = []
    offset = 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out
