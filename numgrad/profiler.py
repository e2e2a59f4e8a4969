"""``torch.profiler``: ``profile`` (CPU activity), ``record_function`` and
``ProfilerActivity``, over ``numgrad.autograd.profiler``'s recorder (numgrad's op names,
wall-clock times). A ``schedule`` is accepted and not applied: every step is recorded."""

import enum

from numgrad.autograd import profiler as _autograd_profiler
from numgrad.autograd.profiler import record_function

__all__ = ["profile", "record_function", "ProfilerActivity", "supported_activities"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"

    def __str__(self):
        return f"ProfilerActivity.{self.name}"


def supported_activities():
    return {ProfilerActivity.CPU}


class profile(_autograd_profiler.profile):
    """``torch.profiler.profile``: ``with`` it, or ``start()``/``stop()``; ``step()`` is
    counted; ``on_trace_ready(prof)`` runs when it stops."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes)
        self.activities = set(activities) if activities else supported_activities()
        self.on_trace_ready = on_trace_ready
        self.step_num = 0

    def start(self):
        self.__enter__()

    def stop(self):
        self.__exit__(None, None, None)

    def __exit__(self, exc_type, exc, tb):
        super().__exit__(exc_type, exc, tb)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
        return False

    def step(self):
        self.step_num += 1
