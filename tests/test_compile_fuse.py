"""numgrad.compile's fused replay: runs of kernels through one interpreter call, and runs of
elementwise kernels over large arrays as one loop, give eager's bits."""

import json
import operator
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numgrad
from numgrad._compile import fuse
from numgrad._compile.fuse import LOOP_MIN, Region
from tests.conftest import torch

UNARY = [
    lambda t: t.tanh(),
    lambda t: t.sigmoid(),
    lambda t: t.exp() * 0.1,
    lambda t: t * 1.01 + 0.01,
    lambda t: t.relu(),
    lambda t: -t,
    lambda t: (t.abs() + 1).sqrt(),
    lambda t: t ** 2,
]
BINARY = [operator.add, operator.mul, operator.sub, lambda a, b: a / (b.abs() + 1)]


def _program(ops):
    """A whole step: forward through ``ops`` (each mixing in ``w`` or not), backward."""
    def step(x, w):
        h = x
        for kind, i in ops:
            h = UNARY[i](h) if kind == "u" else BINARY[i](h, w)
        loss = h.sum()
        loss.backward()
        return loss.detach(), x.grad, w.grad
    return step


def _call(step, xs, ws):
    x = numgrad.tensor(xs, requires_grad=True)
    w = numgrad.tensor(ws, requires_grad=True)
    return [None if t is None else t.numpy() for t in step(x, w)]


def _same_bits(a, b):
    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _regions(compiled):
    out = []
    for entry in compiled._cache.values():
        if entry.verified and entry.plan.fused is not None:
            out += [r for r in entry.plan.fused.items if isinstance(r, Region)]
    return out


def _torch_call(ops, xs, ws):
    x = torch.tensor(xs, requires_grad=True)
    w = torch.tensor(ws, requires_grad=True)
    outs = _program(ops)(x, w)
    return [None if t is None else t.numpy() for t in outs]


def _check_program(ops, n, calls=4, options=None):
    """Each call of the compiled step equals eager bit for bit, and PyTorch (when installed)
    within float32 rounding."""
    step = _program(ops)
    compiled = numgrad.compile(step, options=options)
    rng = np.random.default_rng(n)
    for _ in range(calls):
        xs = rng.standard_normal(n).astype(np.float32)
        ws = rng.standard_normal(n).astype(np.float32)
        want = _call(step, xs, ws)
        got = _call(compiled, xs, ws)
        for a, b in zip(want, got):
            assert _same_bits(a, b)
        if torch is not None:
            for a, b in zip(got, _torch_call(ops, xs, ws)):
                assert (a is None) == (b is None)
                if a is not None:
                    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    return compiled


OPS = st.lists(st.one_of(st.tuples(st.just("u"), st.integers(0, len(UNARY) - 1)),
                         st.tuples(st.just("b"), st.integers(0, len(BINARY) - 1))),
               min_size=1, max_size=10)


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(ops=OPS, n=st.sampled_from([1, 7, LOOP_MIN + 3]))
def test_random_programs_compiled_equal_eager(ops, n):
    """Random elementwise programs, small (the interpreter) and large (one loop): every call
    of the compiled step gives eager's loss and gradients bit for bit."""
    compiled = _check_program(ops, n)
    assert _regions(compiled), "the replay was not fused"


@pytest.mark.parametrize("n", [5, LOOP_MIN + 3])
def test_fused_gradients_match_finite_differences(n):
    """float64, through the interpreter (5 elements) and a generated loop (4,099): replayed
    gradients against central differences of the eager loss."""
    ops = [("u", 3), ("u", 0), ("b", 1), ("u", 1), ("b", 3), ("u", 6)]
    step = _program(ops)
    compiled = numgrad.compile(step)
    rng = np.random.default_rng(7)
    xs, ws = rng.standard_normal(n), rng.standard_normal(n)
    for _ in range(3):
        _, gx, gw = _call(compiled, xs, ws)
    assert _regions(compiled)

    def loss(x, w):
        with numgrad.no_grad():
            h = numgrad.tensor(x)
            for kind, i in ops:
                h = UNARY[i](h) if kind == "u" else BINARY[i](h, numgrad.tensor(w))
            return float(h.sum())

    eps = 1e-6
    for i in rng.choice(n, size=min(n, 12), replace=False):
        # the program is elementwise: element i of the loss depends on x[i] and w[i] only,
        # so the differences are taken on that element (no cancellation in a long sum)
        x, w = xs[i:i + 1], ws[i:i + 1]
        assert gx[i] == pytest.approx((loss(x + eps, w) - loss(x - eps, w)) / (2 * eps),
                                      rel=1e-6, abs=1e-9)
        assert gw[i] == pytest.approx((loss(x, w + eps) - loss(x, w - eps)) / (2 * eps),
                                      rel=1e-6, abs=1e-9)


def test_long_chain_is_one_interpreter_call():
    compiled = _check_program([("u", 3), ("u", 0)] * 40, 16)
    regions = _regions(compiled)
    # the 40-step forward and its backward are two runs (the sum between them is one step)
    assert sum(r.count for r in regions) >= 160
    assert all("def interpret(prog, numbers, addr)" in r.source for r in regions)


def test_large_chain_is_one_loop_with_intermediates_in_registers():
    compiled = _check_program([("u", 3), ("u", 0), ("b", 1), ("u", 1)], LOOP_MIN * 2)
    loops = [r for r in _regions(compiled) if "def body(" in r.source]
    assert loops
    forward = loops[0]
    stores = forward.source.count("[i] = ")
    # the result of ``* 1.01`` is used once, inside the loop: it is never written to memory
    assert stores < forward.count


def test_in_place_updates_in_a_loop():
    """Outputs that are their inputs (``add_``, ``mul_``) read and write the same memory."""
    def step(x, v):
        with numgrad.no_grad():
            v.mul_(0.9).add_(x * 0.1)
            x.sub_(v * 0.01)
        return (x * 2).sum()

    rng = np.random.default_rng(3)
    xs = rng.standard_normal(LOOP_MIN * 3).astype(np.float32)
    a = [numgrad.tensor(xs.copy()), numgrad.zeros(xs.size)]
    b = [numgrad.tensor(xs.copy()), numgrad.zeros(xs.size)]
    compiled = numgrad.compile(step)
    for _ in range(5):
        want, got = step(*a), compiled(*b)
        assert _same_bits(want.numpy(), got.numpy())
        for s, t in zip(a, b):
            assert _same_bits(s.numpy(), t.numpy())
    assert _regions(compiled)


def test_fuse_option_off_replays_each_call():
    compiled = _check_program([("u", 0), ("u", 1)], 9, options={"fuse": False})
    entries = [e for e in compiled._cache.values() if e.verified]
    assert entries and all(e.plan.fused is None for e in entries)


def test_a_fused_plan_that_does_not_verify_is_replaced_by_an_unfused_one(monkeypatch):
    """A generated loop that loses a store fails verification against eager: the next trace
    is not fused, and every call still returns eager's values."""
    real = fuse._loop_source

    def forgetful(segment, index, keep, parallel):
        return real(segment, index, lambda out, k: False, parallel)

    monkeypatch.setattr(fuse, "_loop_source", forgetful)
    step = _program([("u", 0), ("u", 3)])
    compiled = numgrad.compile(step)
    rng = np.random.default_rng(5)
    for _ in range(6):
        xs, ws = (rng.standard_normal(LOOP_MIN + 1).astype(np.float32) for _ in range(2))
        for a, b in zip(_call(step, xs, ws), _call(compiled, xs, ws)):
            assert _same_bits(a, b)
    (entry,) = compiled._cache.values()
    assert entry.verified and not entry.fuse


_LOOP_N = LOOP_MIN + 1
_CHILD = f"""
import json, numpy as np, numgrad
from numgrad._compile import fuse
def step(x):
    y = (x * 1.5 + 0.5).tanh()
    y.sum().backward()
c = numgrad.compile(step)
for n in (5, {_LOOP_N}):
    x = numgrad.tensor(np.linspace(-1, 1, n, dtype=np.float32), requires_grad=True)
    for _ in range(3):
        c(x)
stats = [f.stats for f in fuse._LOADED.values()]
print(json.dumps([sum(sum(s.cache_hits.values()) for s in stats),
                  sum(sum(s.cache_misses.values()) for s in stats), len(stats)]))
"""


def test_generated_code_is_cached_for_the_next_process(tmp_path):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(tmp_path / "cache"))

    def child():
        out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                             text=True, timeout=600, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    hits, misses, loaded = child()
    assert loaded >= 2 and misses >= 2  # the interpreter and the loop compiled once
    hits, misses, loaded = child()
    assert loaded >= 2 and misses == 0 and hits >= 2
    generated = [p for p in (tmp_path / "cache").rglob("generated_*.py")]
    assert generated and all(p.stat().st_mode & 0o077 == 0 for p in generated)


def test_kernels_returning_arrays_are_checked_for_shape():
    """A replay never uses a view of a kernel result whose shape changed since the trace."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        def step(x, m):
            return x[m] * 2

        compiled = numgrad.compile(step)
        x = numgrad.arange(10.0)
        for k in (3, 3, 3, 6, 2):
            m = numgrad.arange(10) < k
            want = step(x, m)
            got = compiled(x, m)
            assert want.shape == got.shape and np.array_equal(want.numpy(), got.numpy())


def test_forward_and_backward_loops_join_across_the_loss():
    """The loss (a reduction) and its gradient's fill lie between the forward's loop and the
    backward's: they commute with one of them, move, and both become one loop, in which what
    the forward saves for the backward stays in registers."""
    compiled = _check_program([("u", 3), ("u", 0), ("b", 1), ("u", 1)], LOOP_MIN * 2)
    loops = [r for r in _regions(compiled) if "def body(" in r.source]
    assert len(loops) == 1
    src = loops[0].source
    assert "tanh_bwd" in src and "sigmoid_bwd" in src
    # stored: the loss's input (the sum reads it) and the two gradients; not tanh's or
    # sigmoid's outputs, which the backward formulas read from registers
    assert src.count("[i] = ") == 3


def test_a_step_is_not_moved_past_a_loop_that_writes_what_it_reads():
    """``a.sum()`` reads ``a``, which the next loop (``mul_``) overwrites: it must stay
    between the two loops (and ``b.sum()``, reading what neither loop writes, may move)."""
    def step(x):
        with numgrad.no_grad():
            a = x.exp()
            s = a.sum()
            a.mul_(2.0)
            return s, a.sum(), a
    rng = np.random.default_rng(5)
    compiled = numgrad.compile(step)
    for _ in range(4):
        xs = rng.standard_normal(LOOP_MIN * 2).astype(np.float32)
        x = numgrad.tensor(xs)
        got = compiled(x)
        for want, g in zip(step(x), got):
            assert _same_bits(want.numpy(), g.numpy())
        e = np.exp(xs.astype(np.float64))  # the sums before and after the in-place doubling
        np.testing.assert_allclose(got[0].item(), e.sum(), rtol=1e-5)
        np.testing.assert_allclose(got[1].item(), 2 * e.sum(), rtol=1e-5)
    assert _regions(compiled)
