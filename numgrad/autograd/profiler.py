"""``torch.autograd.profiler``: ``profile`` records each numgrad op called inside it (under
its registry name: ``add``, ``mm``, ``linear``; numgrad has no ``aten::`` namespace) and each
``record_function`` range, with wall-clock times, nesting and, with ``record_shapes``, input
sizes. ``key_averages().table(...)`` prints PyTorch's table layout; ``export_chrome_trace``
writes Chrome's trace-event JSON. The hook is ``numgrad._profiling`` (nothing runs per op
when no profiler is active)."""

import contextlib
import os
import threading

from numgrad import _profiling

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _share(us, total):
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


class FunctionEvent:
    """One recorded call: ``key`` (name), times in microseconds, children, input shapes."""

    def __init__(self, id, name, start_us, end_us, input_shapes, kind):
        self.id = id
        self.name = self.key = name
        self.start_us, self.end_us = start_us, end_us
        self.input_shapes = input_shapes
        self.is_user_annotation = kind == "user_annotation"
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.device_time_total = self.self_device_time_total = 0

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    cpu_time_str = property(lambda self: _format_time(self.cpu_time))

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """Events of one name (and input shapes, when grouped by them), summed."""

    def __init__(self, key, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.node_id = -1
        self.is_async = False
        self.is_user_annotation = False
        self.cpu_parent = None
        self.device_time_total = self.self_device_time_total = 0

    def add(self, ev):
        self.count += 1
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.is_user_annotation = ev.is_user_annotation
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    cpu_time_str = property(lambda self: _format_time(self.cpu_time))

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str}"
                f" cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's ``table``, ``key_averages``, ``total_average``,
    ``self_cpu_time_total`` and ``export_chrome_trace``."""

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        groups = {}
        for ev in self:
            # the steps share one row, as in PyTorch
            key = "ProfilerStep*" if ev.key.startswith("ProfilerStep#") else ev.key
            k = (key, str(ev.input_shapes)) if group_by_input_shape else key
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(
                    key, ev.input_shapes if group_by_input_shape else None)
            avg.add(ev)
        return EventList(groups.values())

    def total_average(self):
        total = FunctionEventAvg("Total")
        for ev in self:
            total.count += ev.count
            total.cpu_time_total += ev.cpu_time_total
            total.self_cpu_time_total += ev.self_cpu_time_total
        return total

    @property
    def self_cpu_time_total(self):
        return sum(ev.self_cpu_time_total for ev in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        return _table(self, sort_by, row_limit, max_name_column_width, max_shapes_column_width,
                      header, top_level_events_only, time_unit)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        _chrome_trace(self, path)


def _table(events, sort_by, row_limit, max_name, max_shapes, header, top_only, time_unit):
    """PyTorch's summary table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time
    avg, # of Calls (and Input Shapes when recorded); columns of 12 characters, the name's as
    wide as the longest name plus 4 (at most ``max_name``), two spaces after each column;
    percentages of the summed self times, which the footer prints."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    shapes = any(e.input_shapes for e in events)
    name_w = max(len(e.key) for e in events) + 4
    if max_name is not None:
        name_w = min(name_w, max_name)
    widths = [name_w] + [12] * 6
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    if shapes:
        shape_w = max(len(str(e.input_shapes)) for e in events) + 4
        widths.append(min(shape_w, max_shapes) if max_shapes is not None else shape_w)
        headers.append("Input Shapes")
    row = "".join("{: >" + str(w) + "}  " for w in widths)
    sep = "".join("-" * w + "  " for w in widths)
    line_len = sum(w + 2 for w in widths) - 2

    def t(us, default):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return default

    total = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_len, header]
    if top_only:
        out += ["=" * line_len, "This report only display top-level ops statistics"]
    out += [sep, row.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name is not None and len(name) >= max_name - 3:
            name = name[:max_name - 3] + "..."
        values = [name, _share(e.self_cpu_time_total, total),
                  t(e.self_cpu_time_total, e.self_cpu_time_total_str),
                  _share(e.cpu_time_total, total), t(e.cpu_time_total, e.cpu_time_total_str),
                  t(e.cpu_time, e.cpu_time_str), e.count]
        if shapes:
            values.append(str(e.input_shapes)[:max_shapes])
        out.append(row.format(*values))
    out += [sep, f"Self CPU time total: {t(total, _format_time(total))}"]
    return "".join(s + "\n" for s in out)


def _chrome_trace(events, path):
    import json
    pid, tid = os.getpid(), threading.get_ident() % (1 << 31)
    trace = []
    for e in events:
        ev = {"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
              "name": e.key, "pid": pid, "tid": tid, "ts": round(e.start_us, 3),
              "dur": round(e.cpu_time_total, 3), "args": {"External id": e.id}}
        if e.input_shapes:
            ev["args"]["Input Dims"] = e.input_shapes
        trace.append(ev)
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "traceName": os.fspath(path), "displayTimeUnit": "ms",
                   "traceEvents": trace}, f)


def _events(recorder):
    """The recorder's raw events as FunctionEvents (times in microseconds from its start),
    linked to their parents by nesting depth."""
    t0 = recorder.t0
    out = EventList()
    stack = []
    for i, (name, start, end, depth, shapes, kind) in enumerate(recorder.events):
        ev = FunctionEvent(i + 1, name, (start - t0) / 1e3, (max(end, start) - t0) / 1e3,
                           shapes, kind)
        del stack[depth:]
        if stack:
            ev.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(ev)
        stack.append(ev)
        out.append(ev)
    return out


class profile:
    """``torch.autograd.profiler.profile``: records the ops run inside ``with`` (or between
    ``start``/``__enter__`` and ``__exit__``)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=True, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.use_device = use_device
        self.function_events = None
        self.entered = False
        self._recorder = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder = _profiling.Recorder(self.record_shapes)
        _profiling.start(self._recorder)
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.enabled:
            return False
        if _profiling.RECORDER is self._recorder:
            _profiling.stop()
        self.function_events = _events(self._recorder)
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        self._check_finish()
        return self.function_events.table(sort_by, row_limit, max_src_column_width,
                                          max_name_column_width, max_shapes_column_width,
                                          header, top_level_events_only)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def export_chrome_trace(self, path):
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    def events(self):
        self._check_finish()
        return self.function_events

    def __str__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None \
            else str(self.function_events)


class record_function(contextlib.ContextDecorator):
    """A named range in the active profiler's record (nothing when none is active)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._ev = None
        self._rec = None

    def __enter__(self):
        rec = _profiling.RECORDER
        if rec is not None:
            self._rec = rec
            self._ev = rec.begin(self.name, (), kind="user_annotation")
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            self._rec.end(self._ev)
            self._ev = self._rec = None
        return False
