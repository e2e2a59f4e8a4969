"""The default process group: which backend, this rank, the world size; and ``Work``."""

import os
import warnings

_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


class _ProcessGroup:
    __slots__ = ("backend", "rank", "size", "threads")

    def __init__(self, backend):
        self.backend = backend
        self.rank = backend.rank
        self.size = backend.size
        self.threads = None


_STATE = {"pg": None}


def _default():
    pg = _STATE["pg"]
    if pg is None:
        raise ValueError(_NOT_INIT)
    return pg


class Work:
    """What a collective with ``async_op=True`` returns: ``wait()`` finishes it."""

    __slots__ = ("_req", "_finish", "_done")

    def __init__(self, req, finish=None):
        self._req = req
        self._finish = finish
        self._done = False

    def _complete(self):
        self._done = True
        self._req = None
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def wait(self, timeout=None):
        """Block until the collective has finished on this rank; returns True."""
        if not self._done:
            _default().backend.wait(self._req)
            self._complete()
        return True

    def is_completed(self):
        """True once the collective has finished (never blocks)."""
        if not self._done and _default().backend.test(self._req):
            self._complete()
        return self._done

    def is_success(self):
        return self.is_completed()


def _pick_backend(backend):
    from numgrad.distributed import _gloo, _mpi
    if backend is None:
        if os.environ.get("TORCHELASTIC_RUN_ID") is not None and _gloo.available():
            return "gloo"  # launched by torchrun
        return "mpi" if _mpi.available() or not _gloo.available() else "gloo"
    if not isinstance(backend, str):
        backend = str(backend)
    name = backend.lower()
    if name not in ("mpi", "gloo"):
        raise ValueError(f"Invalid backend: '{backend}' (numgrad.distributed has 'mpi' and "
                         "'gloo')")
    return name


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's process group. ``"mpi"`` (the default; ``mpiexec``/``srun`` assign
    rank and world size) or ``"gloo"`` (PyTorch's, for ``torchrun``: ``init_method``,
    ``world_size``, ``rank`` as in PyTorch). Each rank then runs ``cores // ranks per
    machine`` kernel and BLAS threads unless the thread counts were set in the environment."""
    if _STATE["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("numgrad.distributed does not take a store; use init_method")
    name = _pick_backend(backend)
    if name == "mpi":
        from numgrad.distributed import _mpi
        if not _mpi.available():
            raise RuntimeError("Distributed package doesn't have MPI: install mpi4py and an MPI "
                               "runtime (pip install 'numgrad[distributed]')")
        if world_size != -1 or rank != -1:
            warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are "
                          "ignored since they are assigned by the MPI runtime.", stacklevel=2)
        impl = _mpi.MpiBackend()
    else:
        from numgrad.distributed import _gloo
        if not _gloo.available():
            raise RuntimeError("backend 'gloo' needs PyTorch's torch.distributed "
                               "(pip install torch)")
        impl = _gloo.GlooBackend(init_method, world_size, rank, timeout)
    pg = _ProcessGroup(impl)
    from numgrad.distributed import _threads
    pg.threads = _threads.share(impl.local_size)
    _STATE["pg"] = pg


def destroy_process_group(group=None):
    """Leave the process group (after which ``is_initialized()`` is False)."""
    pg = _STATE["pg"]
    if pg is None:
        raise AssertionError("Process group cannot be None")
    _STATE["pg"] = None
    pg.backend.destroy()


def is_initialized():
    return _STATE["pg"] is not None


def get_rank(group=None):
    return _default().rank


def get_world_size(group=None):
    return _default().size


def get_backend(group=None):
    return _default().backend.name
