"""matmul's graph against PyTorch's: an N-D @ 2-D (or 1-D) product folds to one mm (mv) and
an ``UnsafeViewBackward0`` of it, over a ``ViewBackward0`` of the input (or a clone's
``UnsafeViewBackward0`` when the input's strides do not allow a view)."""

import numpy as np
import pytest
from conftest import assert_close, raised

import numgrad as ng

torch = pytest.importorskip("torch")


def _chain(fn, depth=4):
    if fn is None:
        return "None"
    if depth == 0:
        return "..."
    inner = ", ".join(_chain(n[0], depth - 1) for n in fn.next_functions)
    return f"{type(fn).__name__}({inner})"


CASES = {
    "3d@2d": ((2, 3, 4), (4, 5), None),
    "4d@2d": ((2, 2, 3, 4), (4, 5), None),
    "3d@1d": ((2, 3, 4), (4,), None),
    "3d_transposed@2d": ((2, 4, 3), (4, 5), lambda x: x.transpose(1, 2)),
    "3d@2d_t": ((2, 3, 4), (5, 4), "t"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_folded_matmul_graph_values_and_grads_match_torch(name):
    sa, sb, how = CASES[name]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    out = []
    for L in (ng, torch):
        x, w = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        xa = how(x) if callable(how) else x
        wb = w.t() if how == "t" else w
        y = xa @ wb
        y.backward(L.ones_like(y))
        out.append((_chain(y.grad_fn), y.detach(), x.grad, w.grad))
    (nc, ny, nxg, nwg), (tc, ty, txg, twg) = out
    assert nc == tc
    assert_close(ny, ty)
    assert_close(nxg, txg)
    assert_close(nwg, twg)


def test_folded_matmul_without_grad_and_errors():
    x, w = ng.ones(2, 3, 4), ng.ones(4, 5, requires_grad=True)
    y = x @ w
    assert _chain(y.grad_fn) == "UnsafeViewBackward0(MmBackward0(None, AccumulateGrad()))"
    assert (x @ ng.ones(4, 5)).grad_fn is None
    for f in (lambda L: L.ones(2, 3, 4) @ L.ones(5, 5, requires_grad=True),
              lambda L: L.ones(2, 3, 4) @ L.ones(5),
              lambda L: L.ones(0, 3, 4) @ L.ones(4, 2, requires_grad=True)):
        assert raised(f, ng) == raised(f, torch)
