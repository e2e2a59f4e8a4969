"""Anomaly detection: ``detect_anomaly()`` / ``set_detect_anomaly(True)`` record where each
node's forward op was called and make backward raise PyTorch's error when a backward rule
returns NaN, naming the node, the output index and the forward call site."""

import os
import traceback
import warnings

from numgrad.autograd.grad_mode import _Mode

# process-wide, as in PyTorch: [enabled, check_nan]
STATE = [False, True]


def is_anomaly_enabled():
    return STATE[0]


def is_anomaly_check_nan_enabled():
    return STATE[1]


class detect_anomaly(_Mode):
    """Context manager (and decorator) that enables anomaly detection inside."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self.prev = (False, True)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = tuple(STATE)
        STATE[0], STATE[1] = True, self.check_nan

    def __exit__(self, *exc):
        STATE[0], STATE[1] = self.prev

    def clone(self):
        return detect_anomaly(self.check_nan)


class set_detect_anomaly(_Mode):
    """Set anomaly detection now; as a context manager, restore the previous mode on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = tuple(STATE)
        self.mode = (bool(mode), check_nan)
        STATE[0], STATE[1] = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        STATE[0], STATE[1] = self.prev

    def clone(self):
        return set_detect_anomaly(*self.mode)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def record_forward(node):
    """Keep the user's part of the forward call's stack on the node (at node creation)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE)]
    node.metadata["traceback_"] = traceback.format_list(frames)


def forward_trace(node):
    stack = getattr(node, "metadata", {}).get("traceback_")
    return "".join(stack) if stack else ""


def report(node, exc):
    """PyTorch's warning naming the forward call of a failing node; also added to ``exc``."""
    trace = forward_trace(node)
    if not trace:
        return
    msg = (f"Error detected in {type(node).__name__}. Traceback of forward call that caused "
           f"the error:\n{trace}")
    warnings.warn(msg, UserWarning, stacklevel=3)
    if hasattr(exc, "add_note"):
        exc.add_note(msg)


def check_nan(node, outs):
    from numgrad.kernels import RED
    for i, g in enumerate(outs):
        if g is None or g._data.dtype.kind != "f":
            continue
        if RED.has_nan(g._data.reshape(-1)):
            raise RuntimeError(
                f"Function '{type(node).__name__}' returned nan values in its {i}th output.")
