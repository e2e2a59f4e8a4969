"""Region gradients (select, slice, narrow, split, chunk, unbind) that the engine adds straight
into its fan-in sums (``numgrad.autograd.regions``), against PyTorch: random chains of region
views and in-place ops on them, the regions' box folding, and the sign of a zero."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad
from numgrad.autograd.regions import box

torch = pytest.importorskip("torch")

_OPS = ("select", "slice", "narrow", "split", "chunk", "unbind", "inplace", "dense")
_STEP = st.tuples(st.sampled_from(_OPS), st.integers(0, 7), st.integers(0, 7),
                  st.integers(0, 7), st.booleans())


def _chain(lib, x, plan):
    """The loss of ``plan`` (steps drawn by hypothesis) applied to ``x`` in ``lib``: a pool of
    tensors derived from ``x * 1.0``, each step taking one (``k``) and adding its region views
    (or modifying it in place), then every used tensor of the pool weighted and summed."""
    pool = [(x * 1.0, True)]  # (tensor, used in the loss)
    several = False  # PyTorch refuses in-place ops on the base of split/unbind views too
    for op, k, a, b, use in plan:
        t, _ = pool[k % len(pool)]
        nd = t.dim()
        if op == "dense":
            pool.append((t * 0.5 + 1.0, use))
            continue
        if nd == 0:
            continue
        d = a % nd
        n = t.shape[d]
        if op == "select" and n:
            pool.append((t.select(d, b % n), use))
        elif op == "slice":
            lo = a % (n + 1)
            pool.append((t[(slice(None),) * d + (slice(lo, lo + b % 3),)], use))
        elif op == "narrow":
            lo = b % (n + 1)
            pool.append((t.narrow(d, lo, min(n - lo, 1 + a % 2)), use))
        elif op in ("split", "chunk") and n:
            pieces = t.split(1 + b % n, d) if op == "split" else t.chunk(1 + b % 3, d)
            pool += [(p, use or i % 2 == 0) for i, p in enumerate(pieces)]
            several = True
        elif op == "unbind":
            pool += [(p, use or i == b % max(n, 1)) for i, p in enumerate(t.unbind(d))]
            several = True
        elif op == "inplace" and not several:
            if t.requires_grad and t.grad_fn is not None:
                t.mul_(-1.5) if use else t.add_(0.25)
    loss = 0.0
    for i, (t, use) in enumerate(pool):
        if use:
            w = lib.tensor(np.linspace(-1.0, 1.0, t.numel()).reshape(tuple(t.shape)) + i)
            loss = loss + (t * w).sum()
    return loss


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       plan=st.lists(_STEP, min_size=1, max_size=7))
def test_random_region_chains_match_torch(shape, plan):
    x0 = np.random.default_rng(len(plan)).standard_normal(shape)
    grads = []
    for lib in (numgrad, torch):
        x = lib.tensor(x0, requires_grad=True)
        loss = _chain(lib, x, plan)
        if not isinstance(loss, float):
            loss.backward()
        grads.append(None if x.grad is None else x.grad.numpy())
    ours, theirs = grads
    if theirs is None:
        assert ours is None or not ours.any()
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_region_box_folds_whole_dims():
    # rows [1:3] of a (4, 3) array are items 3..9 of it; a whole dim after a region folds
    # into it, a whole dim before one does not; steps other than 1 do not fold
    assert box((4, 3), (slice(1, 3),)) == ((1, 1, 12), (0, 1, 0, 1, 3, 9))
    assert box((2, 3, 4), (slice(None), 1)) == ((1, 2, 12), (0, 1, 0, 2, 4, 8))
    assert box((2, 3, 4, 5), (1, slice(None), 2)) == ((1, 6, 20), (0, 1, 3, 6, 10, 15))
    assert box((1, 5), (slice(None), slice(-2, None))) == ((1, 1, 5), (0, 1, 0, 1, 3, 5))
    assert box((3, 4), (slice(2, 1),)) == ((1, 1, 12), (0, 1, 0, 1, 8, 8))
    assert box((2, 2, 2, 2), (0, slice(None), 1)) == ((1, 4, 4), (0, 1, 0, 2, 2, 4))
    assert box((2, 3, 2, 3), (0, slice(0, 1), 1, 2)) is None
    assert box((6,), (slice(0, 6, 2),)) is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_split_pieces_add_into_one_sum_bit_for_bit(dtype):
    # three pieces of a split and a dense gradient meet at y; -0.0 in the pieces' gradients
    # (v * 0.0 with v < 0) must come out as PyTorch's zeros-then-add gives it
    y0 = np.arange(24, dtype=dtype).reshape(2, 3, 4) - 11.0
    out = []
    for lib in (numgrad, torch):
        x = lib.tensor(y0, requires_grad=True)
        y = x * 1.0
        q, k, v = y.split([1, 2, 1], dim=2)
        loss = (y * 0.0).sum() + (q * -0.0).sum() + (k * k).sum() + (v * 3.0).sum()
        loss = loss + y.narrow(1, 1, 2).sum() + y[1, :, 1:3].sum() * -2.0
        loss.backward()
        out.append(x.grad.numpy())
    assert out[0].tobytes() == out[1].tobytes(), out
