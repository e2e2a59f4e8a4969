"""Fetchers: one batch (or sample) from a data set, in the main process or in a worker."""

import numpy as np


class _MapFetcher:
    """Samples by index from a map-style data set, collated."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.fast = auto_collation and _gathers(dataset, collate_fn)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.fast:  # default_collate of TensorDataset rows is one gather per tensor
            from numgrad.tensor import _wrap
            idx = _wrap(np.asarray(index, np.int64))
            return [t[idx] for t in self.dataset.tensors]
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if getitems else [self.dataset[i] for i in index]
        return self.collate_fn(data)


def _gathers(dataset, collate_fn):
    """Whether a batch of ``dataset`` under ``collate_fn`` is exactly ``t[indices]`` per tensor:
    a TensorDataset's own rows, default_collate, no tensor that records a graph (stacking would
    name its node StackBackward0)."""
    from numgrad.utils.data.collate import default_collate
    from numgrad.utils.data.dataset import TensorDataset
    return (collate_fn is default_collate and isinstance(dataset, TensorDataset)
            and type(dataset).__getitem__ is TensorDataset.__getitem__
            and getattr(dataset, "__getitems__", None) is None
            and not any(t.requires_grad for t in dataset.tensors))


class _IterableFetcher:
    """The next samples of an iterable data set's iterator, collated."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


MAP, ITERABLE = 0, 1


def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _MapFetcher if kind == MAP else _IterableFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
