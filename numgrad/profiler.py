"""``torch.profiler``: ``profile`` (CPU activity) with ``schedule``, ``step()`` and
``on_trace_ready``, ``record_function``, ``ProfilerActivity``, ``ProfilerAction``,
``tensorboard_trace_handler``, over ``numgrad.autograd.profiler``'s recorder (numgrad's op
names, wall-clock times). A WARMUP step records nothing (PyTorch's warm-up is discarded too)."""

import enum
import os
import time
import warnings

from numgrad import _profiling
from numgrad.autograd import profiler as _autograd_profiler
from numgrad.autograd.profiler import record_function

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """Step -> action: ``skip_first`` steps of nothing, then cycles of ``wait`` steps of
    nothing, ``warmup`` steps of warm-up and ``active`` recorded steps, the last of which
    saves (``repeat`` cycles; 0: no end)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def _always_record(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """An ``on_trace_ready`` that writes each saved trace to ``dir_name`` as
    ``<worker>.<ns>.pt.trace.json`` (``.gz`` with ``use_gzip``)."""
    def handler(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            import socket
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = os.path.join(dir_name, f"{worker_name}.{time.time_ns()}.pt.trace.json")
        if not use_gzip:
            prof.export_chrome_trace(name)
            return
        import gzip
        import shutil
        prof.export_chrome_trace(name)
        with open(name, "rb") as src, gzip.open(name + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(name)
    return handler


class profile(_autograd_profiler.profile):
    """``torch.profiler.profile``: ``with`` it, or ``start()``/``stop()``; ``step()`` moves
    through ``schedule`` (each step a ``ProfilerStep#N`` range when there is one), and
    ``on_trace_ready(prof)`` runs whenever a recorded stretch is saved."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes)
        self.activities = set(activities) if activities else supported_activities()
        self.schedule = schedule or _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._step_range = None

    # recording on and off ---------------------------------------------------------------
    def _record(self):
        if self._recorder is None or _profiling.RECORDER is not self._recorder:
            self._recorder = _profiling.Recorder(self.record_shapes)
            _profiling.start(self._recorder)

    def _save(self):
        if self._recorder is not None and _profiling.RECORDER is self._recorder:
            _profiling.stop()
            self.function_events = _autograd_profiler._events(self._recorder)
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def _transit(self, prev, now):
        if prev in _RECORDING and (prev is ProfilerAction.RECORD_AND_SAVE or now not in
                                   _RECORDING):
            self._save()
        if now in _RECORDING:
            self._record()

    def _open_step(self):
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step(self):
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    # the interface ------------------------------------------------------------------------
    def start(self):
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self):
        self._close_step()
        self._transit(self.current_action, ProfilerAction.NONE)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def step(self):
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step()
