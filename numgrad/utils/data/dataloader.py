"""``numgrad.utils.data.dataloader``: DataLoader and the collate functions it batches
with."""

import warnings

import numpy as np

from numgrad.random import default_generator
from numgrad.tensor import Tensor, _wrap
from numgrad.utils.data.dataset import TensorDataset
from numgrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """Stack tensors and arrays, turn numbers into tensors, recurse into tuples and dicts."""
    from numgrad.ops.shape import stack
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        return stack([_wrap(np.asarray(b)) for b in batch], 0)
    if isinstance(elem, (bool, np.bool_)):
        return _wrap(np.asarray(batch, np.bool_))
    if isinstance(elem, (int, np.integer)):
        return _wrap(np.asarray(batch, np.int64))
    if isinstance(elem, (float, np.floating)):
        return _wrap(np.asarray(batch, np.float64))
    if isinstance(elem, str):
        return list(batch)
    if isinstance(elem, dict):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, (tuple, list)):
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")


def default_convert(data):
    """What a DataLoader without batching yields: arrays as tensors, tuples as lists."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SUO":
        return _wrap(data)
    if isinstance(data, dict):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):
        return [default_convert(d) for d in data]
    return data


class DataLoader:
    """Batches from a dataset; a TensorDataset is batched with one gather per tensor."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.generator = generator
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self._default_collate = collate_fn is None
        self.collate_fn = collate_fn or (default_collate if batch_sampler is not None
                                         else default_convert)

    def __iter__(self):
        if self.pin_memory:
            from numgrad import accelerator
            if not accelerator.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", UserWarning,
                              stacklevel=2)
        # each pass draws a base seed first (PyTorch seeds its workers with it), which keeps
        # the generator's stream, hence the shuffled order, in step with PyTorch's
        (self.generator or default_generator).raw(2)
        return self._batches()

    def _batches(self):
        if self.batch_sampler is None:
            for idx in self.sampler:
                yield self.collate_fn(self.dataset[idx])
            return
        fast = self._default_collate and isinstance(self.dataset, TensorDataset)
        for indices in self.batch_sampler:
            if fast:
                idx = _wrap(np.asarray(indices, np.int64))
                yield [t[idx] for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        if self.batch_sampler is None:
            return len(self.sampler)
        return len(self.batch_sampler)
