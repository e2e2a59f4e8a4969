"""``numgrad.utils.data.dataloader``: DataLoader, its single-process iterator and the collate
functions it batches with (worker processes: ``worker_pool.py`` and ``worker.py``)."""

import math
import multiprocessing
import os
import warnings

import numpy as np

from numgrad.random import default_generator
from numgrad.utils.data.collate import default_collate, default_convert
from numgrad.utils.data.dataset import IterableDataset
from numgrad.utils.data.fetch import ITERABLE, MAP, create_fetcher
from numgrad.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from numgrad.utils.data.worker import get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

# attributes that would leave a DataLoader's samplers out of step if set later
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """None forever: the 'indices' of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


def _draw_base_seed(generator):
    """One int64 draw in ``[0, 2**63)`` as PyTorch's ``random_()`` makes it (two 32-bit draws,
    high word first): the seed of this pass's workers."""
    raw = (generator or default_generator).raw(2).astype(np.uint64)
    return int(((raw[0] << np.uint64(32)) | raw[1]) % np.uint64(1 << 63))


class DataLoader:
    """Batches from a map-style or iterable dataset, in the main process or in
    ``num_workers`` worker processes."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = ITERABLE
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = MAP
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
        if sampler is None:
            if self._dataset_kind == ITERABLE:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called = None
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self._multiprocessing_context = context

    def __setattr__(self, attr, val):
        if attr in _FROZEN and self.__dict__.get("_initialized"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        self.check_worker_number_rationality()
        from numgrad.utils.data.worker_pool import MultiProcessingIter
        return MultiProcessingIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == ITERABLE:
            n = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        """Warn (as PyTorch) when more workers are asked for than this process has CPUs."""
        if not self.num_workers:
            return
        checked = hasattr(os, "sched_getaffinity")
        cpus = len(os.sched_getaffinity(0)) if checked else os.cpu_count()
        if cpus is not None and self.num_workers <= cpus:
            return
        if cpus is None:
            suggestion = ("DataLoader is not able to compute a suggested max number of worker "
                          "in current system.")
        else:
            suggestion = (f"Our suggested max number of worker in current system is {cpus}"
                          f"{'' if checked else ' (`cpuset` is not taken into account)'}, which "
                          "is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {suggestion} Please be aware that excessive worker creation "
                      "might get DataLoader running slow or even freeze, lower the worker "
                      "number to avoid potential slowness/freeze if necessary.", stacklevel=3)


class _BaseIter:
    """What every pass shares: the sampler's iterator, the workers' base seed (drawn when the
    pass starts, before any sampler draw, as in PyTorch) and the length check."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                          "used as the device,ignore pin_memory_device="
                          f"'{loader.pin_memory_device}'.", stacklevel=4)
        if loader.pin_memory:
            from numgrad import accelerator
            if not accelerator.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=4)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_base_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        reported = self._IterableDataset_len_called
        if self._dataset_kind == ITERABLE and reported is not None and \
                self._num_yielded > reported:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {reported}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have "
                   "been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data."
                        "IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", type(self).__name__)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:  # PyTorch's own check: a timeout needs workers
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = create_fetcher(self._dataset_kind, self._dataset,
                                       self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)
