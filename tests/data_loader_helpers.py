"""Datasets and worker functions for tests/test_data_loader.py, in a module of their own so
that a worker started by forkserver or spawn can import them (and only numgrad and NumPy
with them). ``lib`` names the library a dataset reports through: "numgrad" or "torch"."""

import importlib
import os
import random
import time

import numpy as np

import numgrad.utils.data as ngdata

_INIT = {}


def record_init(worker_id):
    """A worker_init_fn: remembers that it ran, in this worker process."""
    _INIT["worker"] = worker_id


def failing_init(worker_id):
    """A worker_init_fn that fails."""
    raise KeyError(f"no config for worker {worker_id}")


class Probe:
    """Sample ``i`` says where and with which random state it was made."""

    def __init__(self, n, lib):
        self.n = n
        self.lib = lib

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        lib = importlib.import_module(self.lib)
        info = lib.utils.data.get_worker_info()
        return {"index": i, "worker": info.id, "workers": info.num_workers, "seed": info.seed,
                "init": _INIT.get("worker", -1), "same_dataset": info.dataset.n == self.n,
                "random": random.random(), "numpy": float(np.random.rand()),
                "lib": lib.rand(2).tolist()}


class Faulty:
    """Raises ValueError at index ``bad``; elsewhere a float32 array."""

    def __init__(self, n, bad):
        self.n = n
        self.bad = bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"bad index {i}")
        return np.full(2, i, np.float32)


class Crashing(Faulty):
    """The worker process dies (without an exception) at index ``bad``."""

    def __getitem__(self, i):
        if i == self.bad:
            os._exit(3)
        return np.full(2, i, np.float32)


class Slow(Faulty):
    """Index ``bad`` takes ``delay`` seconds."""

    def __init__(self, n, bad, delay):
        super().__init__(n, bad)
        self.delay = delay

    def __getitem__(self, i):
        if i == self.bad:
            time.sleep(self.delay)
        return np.full(2, i, np.float32)


class Range(ngdata.IterableDataset):
    """PyTorch's IterableDataset example: ``start..end-1``, split over the workers in
    ``__iter__`` by ``get_worker_info``."""

    def __init__(self, start, end):
        super().__init__()
        self.start = start
        self.end = end

    def __iter__(self):
        info = ngdata.get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per_worker = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per_worker
        return iter(range(lo, min(lo + per_worker, self.end)))

    def __len__(self):
        return self.end - self.start
