"""``spawn``: run ``fn(i, *args)`` in ``nprocs`` fresh processes and wait for them. A child's
exception reaches the parent through a one-shot file holding its formatted traceback."""

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import warnings


class ProcessException(Exception):
    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception (its traceback text is in the message)."""


class ProcessExitedException(ProcessException):
    """A child process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _child(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback

        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """True once every process has exited cleanly, False while some still run; the first
        failure stops the others and raises its cause."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.join(grace_period or 0)
            if p.is_alive():
                p.terminate()
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join()
        proc = self.processes[failed]
        path = self.error_files[failed]
        if not os.access(path, os.R_OK):
            code = proc.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {failed:d} terminated with signal {name}",
                                             failed, proc.pid, code, name)
            raise ProcessExitedException(f"process {failed:d} terminated with exit code {code:d}",
                                         failed, proc.pid, code)
        with open(path, "rb") as fh:
            trace = pickle.load(fh)
        os.unlink(path)
        raise ProcessRaisedException(
            f"\n\n-- Process {failed:d} terminated with the following error:\n{trace}",
            failed, proc.pid)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="numgrad-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(path)  # the file exists only once a child has failed
        p = ctx.Process(target=_child, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``fn(i, *args)`` for i in range(nprocs), each in a spawned process."""
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
