"""``numgrad._hook``: the one module eager code reports to the compile tracer through."""

import ast
import pathlib

import numpy as np

import numgrad
from numgrad import _arrays, _hook

_ROOT = pathlib.Path(numgrad.__file__).parent

# modules that may import ``numgrad._compile``: the package's public ``compile`` and the ONNX
# exporter, which runs its own trace
_CLIENTS = {"__init__.py", "onnx/__init__.py"}


def _imports_compiler(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("numgrad._compile"):
            return True
        if isinstance(node, ast.Import) and any(
                a.name.startswith("numgrad._compile") for a in node.names):
            return True
    return False


def test_eager_modules_do_not_import_the_compiler():
    found = {p.relative_to(_ROOT).as_posix() for p in _ROOT.rglob("*.py")
             if "_compile" not in p.relative_to(_ROOT).parts and _imports_compiler(p)}
    assert found <= _CLIENTS, sorted(found - _CLIENTS)
    assert _imports_compiler(_ROOT / "onnx" / "__init__.py")  # (imports inside functions too)


def test_hook_passes_through_with_no_trace():
    assert _hook.TAPE is None
    a = np.arange(3.0)
    assert _hook.record(np.add, a, 1.0).tolist() == [1.0, 2.0, 3.0]
    assert _hook.record_draw(lambda g, n: (g, n), "gen", 2) == ("gen", 2)
    assert _hook.constant(a) is a and _hook.uninit(a) is a
    _hook.host_read("item()")
    _hook.unreplayable("why")
    assert a.tolist() == [0.0, 1.0, 2.0]  # uninit leaves memory alone outside a trace


def test_trace_attaches_to_the_hook_and_detaches():
    from numgrad._compile import tape as _tape
    t = _tape.start()
    try:
        assert _hook.TAPE is t
        sizes = _arrays.sizes([2, 3])
        new = _arrays.new(4, np.float64)
        total = _hook.record(np.add, sizes, sizes)
        _hook.host_read("item()")
        _hook.unreplayable("seeding a generator")
        _hook.unreplayable("seeding a generator")  # noted once
    finally:
        _tape.stop()
    assert _hook.TAPE is None
    assert id(sizes) in t.constants
    assert t.uninit[id(new)] is new and new.view(np.uint8).tolist() == [255] * 32
    assert total.tolist() == [4, 6]
    assert [c[0] for c in t.calls] == [np.add] and id(total) in t.produced
    assert t.breaks == ["item() reads a tensor's values in Python", "seeding a generator"]
