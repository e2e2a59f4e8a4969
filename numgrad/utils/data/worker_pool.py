"""The main process's side of ``DataLoader(num_workers > 0)``.

Task ``k`` (the sampler's ``k``-th batch of indices) goes to worker ``k % num_workers``'s own
index queue; ``prefetch_factor * num_workers`` tasks are out at a time. Every worker puts its
results on one shared result queue, and the iterator hands them out in task order (results
that arrive early wait in ``_task_info``), or as they come with ``in_order=False``.

Start method. PyTorch forks its workers on Linux. numgrad does not by default: once a
parallel Numba kernel has run, the process holds a GNU OpenMP thread pool, and a forked child
is killed at once ("Terminating: fork() called from a process already using GNU OpenMP, this
is unsafe."); a fork can also copy a lock some other thread holds. So the default is
``forkserver`` (a clean single-threaded server process forks the workers; numgrad is
preloaded into it, so a worker starts without importing it again), or ``spawn`` where there
is no forkserver. As with spawn, the dataset, ``collate_fn`` and ``worker_init_fn`` must
pickle (module-level classes and functions) and a script must guard its entry point with
``if __name__ == "__main__":``. ``multiprocessing_context="fork"`` still forks.
"""

import atexit
import itertools
import multiprocessing
import multiprocessing.util  # registers its exit handler before ours (ours runs first)
import pickle
import queue
import warnings
import weakref

from numgrad.utils.data import worker as _worker
from numgrad.utils.data.dataloader import _BaseIter
from numgrad.utils.data.fetch import ITERABLE

_exiting = [False]
_live = weakref.WeakSet()  # iterators whose workers may be running


@atexit.register
def _shutdown_at_exit():
    # stop the workers of iterators still alive (a persistent loader's, say) before
    # multiprocessing terminates them, so they exit cleanly; an iterator collected after
    # this must not touch their queues any more
    for it in list(_live):
        it._shutdown_workers()
    _exiting[0] = True


# imported by the forkserver when it starts, so that workers need not import them: importing
# is fork-safe, loading Numba's threading layer (numgrad.kernels.cpu) would not be
_PRELOAD = ("numgrad", "numba")


def _preload_numgrad():
    """Add numgrad and Numba to the modules the forkserver imports when it starts (keeping
    the others); no effect once it runs."""
    from multiprocessing import forkserver
    modules = getattr(getattr(forkserver, "_forkserver", None), "_preload_modules", None)
    if modules is not None and not set(_PRELOAD) <= set(modules):
        forkserver.set_forkserver_preload([*modules, *(m for m in _PRELOAD if m not in modules)])


def default_context():
    """The start method numgrad's workers use unless told otherwise (module docstring)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        _preload_numgrad()
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


class MultiProcessingIter(_BaseIter):
    """One pass over a DataLoader with worker processes (reused by persistent workers)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:  # no task would ever be sent: an empty pass
            raise AssertionError("prefetch_factor must be greater than 0 for "
                                 "MultiProcessingDataLoaderIter")
        self._shutdown = False
        self._workers = []
        self._index_queues = []
        self._workers_status = []  # whether each worker still takes tasks
        ctx = loader.multiprocessing_context or default_context()
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        _live.add(self)
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()  # the main process never waits to flush tasks
            w = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                self._dataset_kind, self._dataset, index_queue, self._result_queue,
                self._done_event, self._auto_collation, self._collate_fn, self._drop_last,
                self._base_seed, loader.worker_init_fn, i, self._num_workers))
            try:
                w.start()
            except (TypeError, AttributeError, pickle.PicklingError):
                warnings.warn(
                    "Got pickle error when attempting to start a worker Process. numgrad "
                    "starts DataLoader workers with the 'forkserver' (or 'spawn') start method, "
                    "which needs the dataset, collate_fn and worker_init_fn to pickle: define "
                    "them at module level, or pass multiprocessing_context='fork' (unsafe once "
                    "numgrad has run a parallel CPU kernel).", stacklevel=4)
                self._shutdown_workers()
                raise
            self._index_queues.append(index_queue)
            self._workers.append(w)
            self._workers_status.append(True)
        self._reset(loader, first=True)

    # passes ---------------------------------------------------------------------------
    def _reset(self, loader, first=False):
        super()._reset(loader)
        self._send_idx = 0  # number of the next task to send
        self._rcvd_idx = 0  # number of the next task to hand out
        self._task_info = {}  # task -> (worker,) while out, (worker, data) once it is back
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:  # persistent workers: every worker restarts its fetcher and says so
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            waiting = self._num_workers
            while waiting:
                task, _ = self._get_data()
                if isinstance(task, _worker._ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker still running
            wid = next(self._worker_cycle)
            if self._workers_status[wid] and (
                    self._in_order or
                    self._workers_num_tasks[wid] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._workers_num_tasks[wid] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    # results --------------------------------------------------------------------------
    def _try_get_data(self, timeout):
        try:
            payload = self._result_queue.get(timeout=timeout)
        except Exception as e:
            dead = [i for i, w in enumerate(self._workers)
                    if self._workers_status[i] and not w.is_alive()]
            if dead:
                for i in dead:
                    self._mark_worker_unavailable(i)
                pids = ", ".join(str(self._workers[i].pid) for i in dead)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                   "unexpectedly") from e
            if isinstance(e, queue.Empty):
                return False, None
            raise
        return True, pickle.loads(payload)

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            ok, data = self._try_get_data(_worker.POLL_INTERVAL)
            if ok:
                return data

    def _next_data(self):
        while True:
            # skip tasks whose worker has finished its iterable dataset without a result
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # arrived earlier
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1], info[0])
            task, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == ITERABLE and \
                    isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task == self._rcvd_idx:
                wid = self._task_info.pop(task)[0]
                self._rcvd_idx += 1
                return self._process_data(data, wid)
            if not self._in_order:
                return self._process_data(data, self._task_info.pop(task)[0])
            self._task_info[task] += (data,)

    def _process_data(self, data, wid):
        self._workers_num_tasks[wid] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    # shutdown -------------------------------------------------------------------------
    def _mark_worker_unavailable(self, wid, shutdown=False):
        """Tell worker ``wid`` to exit (it finishes the task in hand first)."""
        self._index_queues[wid].put(None)
        self._workers_status[wid] = False

    def _shutdown_workers(self):
        if _exiting[0] or self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for wid in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[wid]:
                    self._mark_worker_unavailable(wid, shutdown=True)
            for w in self._workers:
                w.join(timeout=_worker.EXIT_GRACE)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker.POLL_INTERVAL)

    def __del__(self):
        if "_shutdown" in self.__dict__:
            self._shutdown_workers()
