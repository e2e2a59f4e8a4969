"""Compile kernels in a background process while a program starts on a cold kernel cache.

On a cold disk cache the first run of a program spends most of its time compiling kernels,
and Numba compiles with the GIL held, so a thread would not help. On the first kernel that
misses the cache, numgrad starts one worker process (``python -m numgrad._background``) that
compiles into the same disk cache while the program runs:

* the common kernels of float32 training listed in ``numgrad._common_kernels``, from the last
  one a program uses back to the first, while the program compiles what it needs from the
  first on: the two meet in the middle, and the program loads from the disk cache whatever
  the worker has finished, as it would load the kernels of an earlier run;
* then the multithreaded kernels whose serial twin ran in their place
  (``numgrad.kernels._jit.serial_twin``), so that the next run finds them compiled.

The worker is only a helper. It writes through the disk cache's own private, sealed, atomic
files (``numgrad.kernels._jit``); a failure of the worker (it does not start, crashes or is
killed) never reaches the program, which then compiles what it needs itself, as it would
without a worker. It runs at a lower priority (nice 10); when the program exits it finishes
the jobs it was given, then exits (after a minute without work if the program is still
running); only one worker at a time compiles into a cache folder (a lock file there).
``NUMGRAD_BACKGROUND_COMPILE=0`` turns it off; it is also off when the disk cache is, and in
processes forked from the one that started it. ``NUMGRAD_COMMON_KERNELS=<file>`` (a JSON list
of ``[module, qualname, signature]`` entries) stands in for the common list, here and in
``numgrad._prebuild``: the tests check the mechanism on a few kernels instead of the whole list.
"""

import atexit
import collections
import hashlib
import os
import pickle
import struct
import subprocess
import sys
import threading

ENV = "NUMGRAD_BACKGROUND_COMPILE"
COMMON_ENV = "NUMGRAD_COMMON_KERNELS"
IDLE_EXIT_S = 60.0  # the worker exits after this long without a job
_HEADER = struct.Struct(">I")

_LOCK = threading.Lock()
_STATE = {"proc": None, "owner": None, "failed": False, "sent": set()}


def enabled():
    """Whether kernels may be compiled in a background process (``NUMGRAD_BACKGROUND_COMPILE``,
    on unless set to 0/off/no/false)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


# --- the program's side ----------------------------------------------------------------------

def _worker_env(cache_dir):
    env = dict(os.environ)
    env[ENV] = "0"  # the worker never starts one of its own
    env["NUMGRAD_CACHE_DIR"] = os.path.dirname(cache_dir)  # the same versioned folder
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this numgrad's root
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _worker():
    """The running worker of this process, started if need be; None when there is none."""
    from numgrad.kernels import _jit

    proc = _STATE["proc"]
    if _STATE["owner"] is not None and _STATE["owner"] != os.getpid():
        return None  # a forked child: the worker and its pipe belong to the parent
    if proc is not None and proc.poll() is None:
        return proc
    if _STATE["failed"] or not enabled() or _jit.CACHE_DIR is None:
        return None
    if proc is not None and proc.returncode != 0:  # it crashed: do not try again
        _STATE["failed"] = True
        return None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "numgrad._background", _jit.CACHE_DIR],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=_worker_env(_jit.CACHE_DIR))
    except Exception:
        _STATE["failed"] = True
        return None
    if _STATE["owner"] is None:
        atexit.register(_close)
    _STATE.update(proc=proc, owner=os.getpid(), sent=set())
    return proc


def _send(message):
    """Send one message to the worker (started if need be); False when there is none."""
    with _LOCK:
        proc = _worker()
        if proc is None:
            return False
        payload = pickle.dumps(message)
        try:
            proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            proc.stdin.flush()
        except (OSError, ValueError):  # the worker is gone
            _STATE["failed"] = True
            return False
        return True


def defer(dispatcher, sig):
    """Ask the worker to compile ``dispatcher`` for argument types ``sig`` into the disk cache;
    False when no worker can (then the caller compiles it)."""
    from numgrad.kernels._jit import kernel_name

    key = (*kernel_name(dispatcher), tuple(sig))
    if key in _STATE["sent"] and _STATE["proc"] is not None and _STATE["proc"].poll() is None:
        return True
    if not _send(("compile", key)):
        return False
    _STATE["sent"].add(key)
    return True


def common_kernels():
    """The common kernels' (module, qualname, signature) entries: ``numgrad._common_kernels``,
    or the list in the JSON file named by ``NUMGRAD_COMMON_KERNELS``."""
    path = os.environ.get(COMMON_ENV)
    if not path:
        from numgrad._common_kernels import KERNELS
        return KERNELS
    import json
    with open(path) as fh:
        return tuple(tuple(entry) for entry in json.load(fh))


def common_digest():
    return hashlib.sha256(repr(common_kernels()).encode()).hexdigest()[:16]


def _marker(cache_dir):
    return os.path.join(cache_dir, f"common-kernels-{common_digest()}.done")


def precompile_common():
    """Start compiling the common kernels in the background, unless the disk cache already
    has them (a marker file in the cache folder says so)."""
    from numgrad.kernels import _jit

    if not (enabled() and common_kernels() and _jit.CACHE_DIR):
        return False
    if os.path.exists(_marker(_jit.CACHE_DIR)):
        return False
    if prebuilt_has_common():
        return False
    return _send(("common",))


def prebuilt_has_common():
    """Whether the prebuilt kernels (``numgrad._prebuild``) hold this list of common kernels
    compiled for this machine (their marker file names the machine)."""
    from numgrad.kernels import _jit

    if _jit.PREBUILT_DIR is None:
        return False
    try:
        return _jit.read_prebuilt(_marker(_jit.PREBUILT_DIR)) == _jit.host_key()
    except Exception:
        return False


def _close():
    """At exit: close the pipe; the worker finishes its jobs on its own."""
    proc = _STATE["proc"]
    if proc is not None and _STATE["owner"] == os.getpid():
        try:
            proc.stdin.close()
        except OSError:
            pass


def stop():
    """Stop this process's worker now (what it was compiling is left undone)."""
    proc = _STATE["proc"]
    if proc is None or _STATE["owner"] != os.getpid():
        return
    _close()
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a worker stuck in a system call
        proc.kill()


LOCK_NAME = "background.lock"


def _lock(cache_dir):
    """Hold the cache folder's worker lock (waiting for another program's worker to finish);
    an open file to keep, or None where there are no advisory locks."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    fd = os.open(os.path.join(cache_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def worker_running(cache_dir):
    """Whether a worker holds ``cache_dir``'s lock now (for tests and benchmarks)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return False
    path = os.path.join(cache_dir, LOCK_NAME)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


# --- the worker's side -----------------------------------------------------------------------

def parse_signature(text):
    """The argument types of a signature written as in ``numgrad._common_kernels``."""
    from numba.core import sigutils

    args, _ = sigutils.normalize_signature(f"({text},)")
    return tuple(args)


def describe_signature(sig):
    """``sig`` written as ``parse_signature`` reads it, or None for types it cannot write
    (read-only or unaligned arrays, records...)."""
    from numba import types

    parts = []
    for t in sig:
        if isinstance(t, types.Array):
            if not (t.mutable and t.aligned) or t.layout not in "CA" or t.ndim < 1:
                return None
            dims = [":"] * t.ndim
            if t.layout == "C":
                dims[-1] = "::1"
            parts.append(f"{t.dtype}[{', '.join(dims)}]")
        elif isinstance(t, types.Boolean):
            parts.append("boolean")
        elif isinstance(t, (types.Integer, types.Float)):
            parts.append(str(t))
        else:
            return None
    text = ", ".join(parts)
    try:
        return text if parse_signature(text) == tuple(sig) else None
    except Exception:
        return None


class _Jobs:
    """The worker's queue: the common kernels first (in the order given), then the rest."""

    def __init__(self):
        self.now = collections.deque()
        self.later = collections.deque()
        self.closed = False
        self.cond = threading.Condition()

    def put(self, jobs, now):
        with self.cond:
            (self.now if now else self.later).extend(jobs)
            self.cond.notify()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()

    def get(self, timeout):
        """The next job; None when there are none left and the program is gone, or none came
        for ``timeout`` seconds."""
        with self.cond:
            if not (self.now or self.later or self.closed):
                self.cond.wait(timeout)
            if not (self.now or self.later):
                return None
            return (self.now or self.later).popleft()


def _common_jobs(cache_dir):
    """The common kernels as jobs: the serial ones from the last used back to the first, then
    the multithreaded ones; the marker file is written after the last."""
    from numgrad.kernels import _jit

    serial, parallel = [], []
    for module, qualname, text in common_kernels():
        dispatcher = _jit.find(module, qualname)
        if dispatcher is None:
            continue
        job = ("compile", (module, qualname, parse_signature(text)))
        (parallel if dispatcher.targetoptions.get("parallel") else serial).append(job)
    return serial[::-1] + parallel + [("marker", _marker(cache_dir))]


def _read_messages(stream, jobs, cache_dir):
    """The worker's reader thread: queue what the program sends until its pipe closes."""
    while True:
        try:
            head = stream.read(_HEADER.size)
            if len(head) < _HEADER.size:
                break
            kind, *rest = pickle.loads(stream.read(_HEADER.unpack(head)[0]))
        except Exception:
            break
        try:
            if kind == "common":
                jobs.put(_common_jobs(cache_dir), now=True)
            elif kind == "compile":
                jobs.put([("compile", rest[0])], now=False)
        except Exception:  # a message it cannot use: the next may do
            pass
    jobs.close()


def _run(job):
    from numgrad.kernels import _jit

    kind, what = job
    if kind == "marker":
        _jit._write_private(what, b"", sealed=False)
        return
    module, qualname, sig = what
    dispatcher = _jit.find(module, qualname)
    if dispatcher is not None and not _jit.is_cached(dispatcher, sig):
        dispatcher.compile(sig)


def main(argv):
    """The worker: compile what the program asks for into the disk cache ``argv[0]``."""
    import warnings

    warnings.simplefilter("ignore")  # no one reads the worker's stderr
    from numgrad.kernels import _jit

    if not argv or _jit.CACHE_DIR != argv[0]:  # not the program's cache: do nothing
        return 2
    jobs = _Jobs()
    threading.Thread(target=_read_messages, args=(sys.stdin.buffer, jobs, argv[0]),
                     daemon=True).start()
    try:
        os.nice(10)
    except (AttributeError, OSError):  # pragma: no cover - Windows
        pass
    lock = _lock(argv[0])  # noqa: F841 - held until the process exits
    while True:
        job = jobs.get(IDLE_EXIT_S)
        if job is None:
            return 0
        try:
            _run(job)
        except Exception:  # one kernel that does not compile does not stop the others
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
