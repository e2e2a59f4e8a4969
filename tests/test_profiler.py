"""``torch.profiler`` / ``torch.autograd.profiler``: the summary table's layout as PyTorch's
(columns, widths, footer), rows for the ops that ran (numgrad's registry names) and for
``record_function`` ranges, consistent totals, Chrome trace JSON, and the op functions put
back untouched when recording stops."""

import json
import re

import pytest
from conftest import requires_torch, torch

import numgrad as ng
from numgrad import _intercept, _profiling
from numgrad.profiler import ProfilerActivity, profile, record_function

HEADERS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
           "# of Calls"]


def _program(m, calls=3):
    x = m.ones(8, 4)
    w = m.ones(4, 3, requires_grad=True)
    for _ in range(calls):
        (x @ w).relu().sum().backward()


def _profiled(m, record_shapes=False):
    with m.profiler.profile(activities=[m.profiler.ProfilerActivity.CPU],
                            record_shapes=record_shapes) as prof:
        with m.profiler.record_function("model_inference"):
            _program(m)
    return prof


def _columns(table):
    """(dash-group widths of the separator, header names, rows as cell lists, footer)."""
    lines = table.rstrip("\n").split("\n")
    widths = [len(g) for g in lines[0].split("  ") if g]
    headers = re.split(r"\s{2,}", lines[1].strip())
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in lines[3:-2]]
    return widths, headers, rows, lines[-1]


def _us(text):
    scale = {"us": 1.0, "ms": 1e3, "s": 1e6}
    num, unit = re.fullmatch(r"([0-9.]+)(us|ms|s)", text).groups()
    return float(num) * scale[unit]


def test_table_layout_rows_and_totals():
    _program(ng, 1)  # kernels loaded before timing
    prof = _profiled(ng)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    widths, headers, rows, footer = _columns(table)
    names = [r[0] for r in rows]
    assert headers == HEADERS
    assert widths == [max(map(len, names)) + 4] + [12] * 6
    assert table.split("\n")[0] == table.split("\n")[2] == table.split("\n")[-3]
    assert names[0] == "model_inference"  # encloses everything: the largest total
    assert {"matmul", "relu", "sum"} <= set(names)
    by = {r[0]: r for r in rows}
    assert by["model_inference"][3] == "100.00%" and by["model_inference"][6] == "1"
    for op in ("matmul", "relu", "sum"):
        assert by[op][6] == "3"
    for r in rows:
        assert _us(r[4]) >= _us(r[2]) - 1e-3  # total >= self
        step = {"us": 1e-3, "ms": 1.0, "s": 1e3}[re.sub(r"[0-9.]", "", r[5])]  # printed digits
        assert abs(_us(r[5]) * int(r[6]) - _us(r[4])) <= step * int(r[6]) + 1e-3 * _us(r[4])
    shares = [float(r[1].rstrip("%")) for r in rows]
    assert abs(sum(shares) - 100.0) < 0.1  # every recorded event is listed here
    total = re.fullmatch(r"Self CPU time total: (\S+)", footer).group(1)
    assert abs(_us(total) - _us(by["model_inference"][4])) <= 1e-3 * _us(total) + 1e-3
    self_total = prof.key_averages().self_cpu_time_total
    assert abs(_us(total) - self_total) <= 1e-3 * self_total + 1e-3
    assert len(prof.key_averages().table(row_limit=2).rstrip("\n").split("\n")) == 3 + 2 + 2


@requires_torch
def test_table_layout_as_pytorchs():
    ours = _columns(_profiled(ng).key_averages().table(sort_by="cpu_time_total"))
    theirs = _columns(_profiled(torch).key_averages().table(sort_by="cpu_time_total"))
    assert ours[1] == theirs[1] == HEADERS
    assert ours[0][1:] == theirs[0][1:]
    assert ours[3].startswith("Self CPU time total: ") and theirs[3].startswith(
        "Self CPU time total: ")
    oshape = _columns(_profiled(ng, True).key_averages(group_by_input_shape=True).table())
    tshape = _columns(_profiled(torch, True).key_averages(group_by_input_shape=True).table())
    assert oshape[1] == tshape[1] == HEADERS + ["Input Shapes"]
    orows = {r[0]: r[-1] for r in oshape[2]}
    trows = {r[0].removeprefix("aten::"): r[-1] for r in tshape[2]}
    assert orows["model_inference"] == trows["model_inference"] == "[]"
    assert orows["matmul"] == trows["matmul"] == "[[8, 4], [4, 3]]"


def test_autograd_profiler_and_record_function_decorator(tmp_path):
    @record_function("step")
    def step():
        return ng.ones(3).mul(2).add(1)

    with ng.autograd.profiler.profile(record_shapes=True) as prof:
        step()
        step()
    events = prof.function_events
    assert [e.key for e in events if e.cpu_parent is None] == ["step", "step"]
    assert [c.key for c in events[0].cpu_children] == ["mul", "add"]  # registry ops only
    assert events[0].cpu_children[0].input_shapes == [[3], []]
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["step"].count == 2 and avg["mul"].count == 2
    assert avg["step"].cpu_time_total >= avg["add"].cpu_time_total
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in trace] == [e.key for e in events]
    assert {e["ph"] for e in trace} == {"X"} and trace[0]["cat"] == "user_annotation"
    parent, child = trace[0], trace[1]
    assert parent["ts"] <= child["ts"] and child["ts"] + child["dur"] <= parent["ts"] + \
        parent["dur"] + 1e-3


def test_ops_are_untouched_when_not_profiling():
    before = (ng.add, ng.Tensor.__add__, ng.Tensor.add_, ng.Tensor.__dict__["sum"])
    cells = [c.cell_contents for c in ng.Tensor.__add__.__closure__]
    with profile() as prof:
        assert ng.add is not before[0]
        ng.ones(2) + 1
        with pytest.raises(RuntimeError, match="already enabled"):
            profile().__enter__()
    assert (ng.add, ng.Tensor.__add__, ng.Tensor.add_, ng.Tensor.__dict__["sum"]) == before
    assert [c.cell_contents for c in ng.Tensor.__add__.__closure__] == cells
    assert _profiling.RECORDER is None
    assert [e.key for e in prof.events()] == ["add"]
    with record_function("idle"):  # no profiler: nothing recorded, nothing raised
        ng.ones(1)


def test_errors_and_activities():
    prof = ng.autograd.profiler.profile()
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        prof.key_averages()
    with profile(activities=[ProfilerActivity.CPU]) as p:
        pass
    assert p.key_averages().table() == ""
    assert ProfilerActivity.CPU in ng.profiler.supported_activities()


def test_exception_inside_closes_events():
    with pytest.raises(RuntimeError), profile() as prof:
        with record_function("outer"):
            ng.ones(2, 3) @ ng.ones(2, 3)
    assert _profiling.RECORDER is None
    events = prof.events()
    assert events[0].key == "outer" and events[0].cpu_time_total >= 0
    assert all(e.end_us >= e.start_us for e in events)


def _scheduled(m, tmp):
    """What each saved cycle of a wait=1, warmup=1, active=2, repeat=2 schedule holds, and
    the trace files a tensorboard handler writes."""
    saved = []

    def ready(p):
        saved.append(sorted((e.key.removeprefix("aten::"), e.count) for e in p.key_averages()
                            if e.key.startswith("ProfilerStep") or e.key.endswith("mul")))
    x = m.ones(3)
    sched = m.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with m.profiler.profile(schedule=sched, on_trace_ready=ready) as p:
        for _ in range(10):
            x.mul(2)
            p.step()
    with m.profiler.profile(on_trace_ready=m.profiler.tensorboard_trace_handler(
            str(tmp), worker_name="w")):
        x.mul(3)
    files = list(tmp.iterdir())
    assert len(files) == 1 and files[0].name.endswith(".pt.trace.json")
    assert files[0].name.startswith("w.")
    assert "traceEvents" in json.loads(files[0].read_text())
    return saved


@requires_torch
def test_schedule_steps_and_trace_handler_as_pytorchs(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's note that cycles do not accumulate
        theirs = _scheduled(torch, tmp_path / "torch")
    ours = _scheduled(ng, tmp_path / "ng")
    assert ours == theirs == [[("ProfilerStep*", 2), ("mul", 2)]] * 2
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        ng.profiler.schedule(wait=0, warmup=0, active=0)


def test_module_imported_while_recording_gets_the_originals_back():
    import sys
    import types
    mod = types.ModuleType("numgrad._profiler_probe")
    sys.modules[mod.__name__] = mod
    try:
        with profile():
            mod.add = ng.add  # ``from numgrad import add`` in a module first imported now
            assert hasattr(mod.add, "__profiled__")
        assert mod.add is ng.add and not hasattr(ng.add, "__profiled__")
    finally:
        del sys.modules[mod.__name__]


def test_profiler_during_onnx_export_and_out_of_order_exit():
    pytest.importorskip("onnx")
    import io

    from numgrad.onnx._record import Recorder
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(4, 3), ng.nn.ReLU()).eval()
    x = ng.randn(2, 4)
    alone = io.BytesIO()
    ng.onnx.export(model, (x,), alone)
    before = (ng.add, ng.Tensor.__add__, ng.nn.functional.linear, ng.Tensor.__dict__["T"])
    with profile() as prof:  # an export inside a profile: both see the ops
        inside = io.BytesIO()
        ng.onnx.export(model, (x,), inside)
    assert inside.getvalue() == alone.getvalue()
    assert {"linear", "relu"} <= {e.key for e in prof.events()}
    # a profiler started inside a recording and stopped before it ends
    rec = Recorder()
    rec.__enter__()
    p = profile()
    p.start()
    ng.ones(2).mul(3)
    rec.__exit__(None, None, None)  # the recorder leaves first
    ng.ones(2).add(1)
    p.stop()
    assert [c.name for c in rec.calls] == ["mul"]
    assert [e.key for e in p.events()] == ["mul", "add"]
    assert (ng.add, ng.Tensor.__add__, ng.nn.functional.linear,
            ng.Tensor.__dict__["T"]) == before
    assert not _intercept.active()


def test_other_threads_ops_are_not_recorded():
    import threading
    out = []
    with profile() as prof:
        ng.ones(2).mul(2)
        t = threading.Thread(target=lambda: out.append(ng.ones(2).add(5).tolist()))
        t.start()
        t.join()
    assert out == [[6.0, 6.0]]
    assert [e.key for e in prof.events()] == ["mul"]
