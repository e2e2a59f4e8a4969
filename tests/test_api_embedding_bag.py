"""``F.embedding_bag`` / ``nn.EmbeddingBag`` with ``padding_idx``: padding positions left out
of the sum, mean and max and of each bag's count, ``per_sample_weights`` (sum mode),
``include_last_offset`` and the 2-D input form. Against PyTorch: values, gradients of the
weight and the per-sample weights (and float64 finite differences), node names, errors."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, raised, requires_torch, to_numpy, torch
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

pytestmark = requires_torch


def _run(lib, w, idx, offsets, mode, padding_idx, psw, last, g):
    """(output, weight grad, psw grad) of one embedding_bag call in ``lib``."""
    wt = lib.tensor(w, requires_grad=True)
    pt = None if psw is None else lib.tensor(psw, requires_grad=True)
    off = None if offsets is None else lib.tensor(offsets, dtype=lib.int64)
    y = lib.nn.functional.embedding_bag(lib.tensor(idx, dtype=lib.int64), wt, off, mode=mode,
                                        padding_idx=padding_idx, per_sample_weights=pt,
                                        include_last_offset=last)
    y.backward(lib.tensor(g.astype(w.dtype)))
    return (y, to_numpy(y.detach()), to_numpy(wt.grad),
            None if pt is None else to_numpy(pt.grad))


def _check(w, idx, offsets, mode, padding_idx, psw=None, last=False, seed=0):
    rng = np.random.default_rng(seed)
    n_bags = (len(offsets) - (1 if last else 0)) if offsets is not None else len(idx)
    g = rng.standard_normal((n_bags, w.shape[1]))
    y, out, gw, gp = _run(ng, w, idx, offsets, mode, padding_idx, psw, last, g)
    ty, tout, tgw, tgp = _run(torch, w, idx, offsets, mode, padding_idx, psw, last, g)
    tol = dict(rtol=1e-5, atol=1e-5) if w.dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    assert_close(out, tout, **tol)
    assert_close(gw, tgw, **tol)
    if psw is not None:
        assert_close(gp, tgp, **tol)
    assert y.grad_fn.name() == ty.grad_fn.name() == "EmbeddingBagBackward0"
    return out, gw


W = np.random.default_rng(1).standard_normal((6, 4))
IDX = [1, 2, 5, 5, 0, 5, 3, 2]
OFF = [0, 2, 3, 5, 5]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [None, 5, -1, 2])
def test_padding_1d_offsets(mode, dtype, padding_idx):
    out, gw = _check(W.astype(dtype), IDX, OFF, mode, padding_idx)
    if padding_idx is not None:
        assert not gw[padding_idx].any()  # the padding row gets no gradient
    if padding_idx in (5, -1):
        assert not out[1].any() and not out[3].any()  # an all-padding bag and an empty one


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_padding_2d_and_last_offset(mode):
    idx2 = [[1, 5, 2], [5, 5, 5], [0, 3, 5]]
    _check(W, idx2, None, mode, 5)
    _check(W, IDX, OFF + [len(IDX)], mode, 5, last=True)


def test_per_sample_weights_with_padding():
    psw = np.random.default_rng(2).standard_normal(len(IDX))
    _check(W, IDX, OFF, "sum", 5, psw=psw)
    _check(W, [[1, 5, 2], [5, 0, 3]], None, "sum", 0,
           psw=np.random.default_rng(3).standard_normal((2, 3)))


def test_gradients_match_finite_differences():
    psw = np.random.default_rng(4).standard_normal(len(IDX))
    g = np.random.default_rng(5).standard_normal((len(OFF), 4))
    idx, off = ng.tensor(IDX), ng.tensor(OFF)

    def f(w, p):
        return ng.nn.functional.embedding_bag(idx, ng.tensor(w), off, mode="sum", padding_idx=5,
                                              per_sample_weights=ng.tensor(p)).numpy()

    _, _, gw, gp = _run(ng, W, IDX, OFF, "sum", 5, psw, False, g)
    assert_close(gw, finite_difference(f, [W, psw], 0, g), rtol=1e-6, atol=1e-7)
    assert_close(gp, finite_difference(f, [W, psw], 1, g), rtol=1e-6, atol=1e-7)
    for mode in ("mean", "max"):
        def h(w, mode=mode):
            return ng.nn.functional.embedding_bag(idx, ng.tensor(w), off, mode=mode,
                                                  padding_idx=5).numpy()
        _, _, gw, _ = _run(ng, W, IDX, OFF, mode, 5, None, False, g)
        assert_close(gw, finite_difference(h, [W], 0, g), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("padding_idx", [6, -7, 100, 1.5])
def test_padding_idx_errors(padding_idx):
    def call(lib):
        return lib.nn.functional.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF),
                                               padding_idx=padding_idx)
    expected = raised(call, torch)
    assert expected is not None
    assert raised(call, ng) == expected


def test_other_errors():
    def psw_mean(lib):
        return lib.nn.functional.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF),
                                               mode="mean", padding_idx=1,
                                               per_sample_weights=lib.ones(len(IDX)))

    def psw_shape(lib):
        return lib.nn.functional.embedding_bag(lib.tensor(IDX), lib.tensor(W), lib.tensor(OFF),
                                               mode="sum", per_sample_weights=lib.ones(3))
    for fn in (psw_mean, psw_shape):
        expected = raised(fn, torch)
        assert expected is not None and raised(fn, ng) == expected


@pytest.mark.parametrize("padding_idx", [3, -1, -4, 4, -5])
def test_module_padding_idx(padding_idx):
    def make(lib):
        return lib.nn.EmbeddingBag(4, 4, padding_idx=padding_idx, mode="sum")
    expected = raised(make, torch)
    if expected is not None:
        assert raised(make, ng) == expected
        return
    m, tm = make(ng), make(torch)
    assert m.padding_idx == tm.padding_idx and repr(m) == repr(tm)
    assert not to_numpy(m.weight.detach())[m.padding_idx].any()
    with ng.no_grad():
        m.weight.copy_(ng.tensor(W[:4]))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(W[:4]))
    y = m(ng.tensor([0, 1, 2, 3]), ng.tensor([0, 2]))
    ty = tm(torch.tensor([0, 1, 2, 3]), torch.tensor([0, 2]))
    assert_close(y, ty)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_bags(data):
    rows = data.draw(st.integers(1, 5), label="rows")
    n = data.draw(st.integers(0, 9), label="n")
    idx = data.draw(st.lists(st.integers(0, rows - 1), min_size=n, max_size=n), label="idx")
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4), label="cuts"))
    last = data.draw(st.booleans(), label="last")
    offsets = [0] + cuts + ([n] if last else [])
    mode = data.draw(st.sampled_from(["sum", "mean", "max"]), label="mode")
    pad = data.draw(st.one_of(st.none(), st.integers(-rows, rows - 1)), label="padding_idx")
    use_psw = mode == "sum" and data.draw(st.booleans(), label="psw")
    rng = np.random.default_rng(n * 7 + rows)
    w = rng.standard_normal((rows, 3))
    psw = rng.standard_normal(n) if use_psw else None
    _check(w, idx, offsets, mode, pad, psw=psw, last=last)
