"""What runs inside a DataLoader worker process: seeding, ``get_worker_info`` and the loop
that turns index tasks into batches.

A worker reads ``(task_number, indices)`` from its own index queue and puts
``(task_number, batch)`` on the result queue all workers share. Each result is pickled here,
in the worker, so a batch that cannot be pickled comes back as an error for that batch
instead of being dropped by the queue's feeder thread (the main process would wait forever).
"""

import multiprocessing
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

import numpy as np

from numgrad.utils.data.fetch import ITERABLE, create_fetcher

# seconds between a waiting process's checks that the other side is still alive
POLL_INTERVAL = 1.0
# seconds a worker told to stop gets to exit before it is terminated (as PyTorch's)
EXIT_GRACE = 5.0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """About the worker process this runs in: ``id`` (0 to ``num_workers - 1``),
    ``num_workers``, ``seed`` (``base_seed + id``; numgrad's, Python's and NumPy's generators
    were seeded from it) and ``dataset`` (this process's copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


_worker_info = None


def get_worker_info():
    """The WorkerInfo of the DataLoader worker this runs in; None in the main process."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's copy of an IterableDataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Start a new pass (persistent workers): reset the fetcher and acknowledge."""


class _KeyErrorMessage(str):
    """A KeyError prints ``repr`` of its argument; this message prints as itself."""

    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text
    and raised there as the same class, its message saying where it happened."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.exc_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def __getstate__(self):
        state = dict(self.__dict__)
        try:
            pickle.dumps(self.exc_type)
        except Exception:  # a class the main process could not find: raised as RuntimeError
            state["exc_type"] = RuntimeError
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # its constructor wants other arguments
            raise RuntimeError(msg) from None
        raise exc


def _seed(base_seed, worker_id):
    """Seed numgrad's default generator, Python's ``random`` and NumPy's global generator as
    PyTorch seeds its workers: with ``base_seed + worker_id``, NumPy's with a SeedSequence of
    the worker id and the base seed's two halves."""
    import numgrad
    seed = base_seed + worker_id
    random.seed(seed)
    numgrad.manual_seed(seed)
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))
    return seed


def _where(worker_id):
    return f"in DataLoader worker process {worker_id}"


def _send(result_queue, task, data, worker_id):
    """Put ``(task, data)`` on the result queue, pickled here (see the module docstring)."""
    try:
        payload = ForkingPickler.dumps((task, data))
    except Exception:
        payload = ForkingPickler.dumps((task, ExceptionWrapper(sys.exc_info(),
                                                               _where(worker_id))))
    result_queue.put(bytes(payload))


def worker_loop(kind, dataset, index_queue, result_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    """The body of worker ``worker_id``: serve index tasks until told to stop (None) or the
    main process is gone."""
    import numgrad
    global _worker_info

    def new_fetcher():
        """The fetcher of a new pass, or the error that making it raised (every task of the
        pass reports it)."""
        try:
            return create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            return ExceptionWrapper(sys.exc_info(), _where(worker_id))

    try:
        try:  # as PyTorch: the workers run side by side on the cores
            numgrad.set_num_threads(1)
        except (ValueError, RuntimeError):  # no threading layer: nothing runs in parallel
            pass
        seed = _seed(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None  # worker_init_fn's: every task of this worker reports it
        try:
            if init_fn is not None:
                init_fn(worker_id)
        except Exception:
            init_error = ExceptionWrapper(sys.exc_info(), _where(worker_id))
        fetcher = new_fetcher() if init_error is None else None
        ended = False
        parent = multiprocessing.parent_process()
        while parent is None or parent.is_alive():
            try:
                task = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                continue
            if task is None:
                break
            if isinstance(task, _ResumeIteration):
                _send(result_queue, task, None, worker_id)
                ended = False
                fetcher = new_fetcher() if init_error is None else None
                continue
            if done_event.is_set() or ended:
                continue
            number, index = task
            if init_error is not None or isinstance(fetcher, ExceptionWrapper):
                data = init_error or fetcher
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and kind == ITERABLE:  # copy exhausted
                        data = _IterableDatasetStopIteration(worker_id)
                        ended = True
                    else:
                        data = ExceptionWrapper(sys.exc_info(), _where(worker_id))
            _send(result_queue, number, data, worker_id)
            del data, index, task
    except KeyboardInterrupt:  # the main process handles Ctrl-C
        pass
    if done_event.is_set():  # nobody reads the results any more: don't wait to flush them
        result_queue.cancel_join_thread()
        result_queue.close()
