"""Plans that replay across sizes (``numgrad/_compile/dynamic.py``): a compiled function called
at a new length gets a plan fitted from traces at three other lengths, verified against eager
once, then checked by one light eager run per new length; at every length it returns eager's
result or eager's error, and token-by-token generation traces a constant number of plans."""

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numgrad

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCH)

import models  # noqa: E402
import workloads  # noqa: E402

VOCAB = workloads.VOCAB
BLOCK = workloads.GPT_SMALL["block_size"]


def _stats(compiled):
    return getattr(compiled, "_compiled", compiled).stats()


def _gpt(attention="sdpa"):
    m = workloads._model(numgrad, lambda m: models.gpt(m, vocab=VOCAB, attention=attention,
                                                       **workloads.GPT_SMALL))
    m.eval()
    return m


@pytest.fixture(scope="module")
def gpt():
    return _gpt()


def _outcome(f, x):
    """f(x) under no_grad: ("ok", bytes, shape) or ("error", class, message)."""
    try:
        with numgrad.no_grad():
            y = f(x)
    except Exception as exc:
        return ("error", type(exc), str(exc))
    return ("ok", y.numpy().tobytes(), tuple(y.shape))


def test_generation_compiles_a_constant_number_of_plans():
    """20 tokens from a 1-token context (lengths 1 to 16, then 16 cropped): four traces (the
    first length is a program of its own: its size-1 dims), one fit verified at the fifth
    length, every later length instantiated from it; three runs draw eager's tokens."""
    name = "10_gpt_generate_100"
    eager = workloads.WORKLOADS[name]("numgrad", small=True)().numpy()
    made = []
    run = workloads.WORKLOADS[name](
        "numgrad", small=True,
        forward=lambda f: made.append(numgrad.compile(f, fullgraph=True)) or made[-1])
    np.testing.assert_array_equal(run().numpy(), eager)
    first = _stats(made[0])
    assert first["traces"] <= 5 and first["fits"] == 1
    assert first["instantiated"] >= BLOCK - 5
    for _ in range(2):
        np.testing.assert_array_equal(run().numpy(), eager)
    assert _stats(made[0]) == first  # nothing traced again: every length replays
    # the plans made from the fit replay through interpreter regions (one interpreter for
    # every length), not step by step
    fitted = [e.plan for e in getattr(made[0], "_compiled", made[0])._cache.values()
              if e.verified and hasattr(e.plan, "dyn_ints")]
    assert fitted and all(p.fused is not None for p in fitted)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(1, BLOCK), min_size=5, max_size=12),
       bad=st.lists(st.booleans(), min_size=12, max_size=12), seed=st.integers(0, 2 ** 16))
def test_any_length_sequence_gives_eagers_results_and_errors(gpt, lengths, bad, seed):
    """Lengths in any order, repeated or not; a token out of the vocabulary now and then:
    every compiled call is eager's values, bit for bit, or eager's error."""
    compiled = numgrad.compile(gpt)
    rng = np.random.default_rng(seed)
    for n, (L, b) in enumerate(zip(lengths, bad)):
        tokens = rng.integers(0, VOCAB, (1, L))
        if b and n % 3 == 2:
            tokens[0, rng.integers(0, L)] = VOCAB  # out of range: eager's IndexError
        x = numgrad.tensor(tokens)
        assert _outcome(compiled, x) == _outcome(gpt, x)


def test_manual_attention_generation_replays_across_lengths():
    """The causal mask as a registered buffer sliced to ``[:T, :T]``: a view whose offsets and
    sizes are fitted; every length is eager's."""
    model = _gpt("manual")
    compiled = numgrad.compile(model)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCAB, (1, BLOCK))
    for _ in range(2):
        for L in range(1, BLOCK + 1):
            x = numgrad.tensor(tokens[:, :L])
            assert _outcome(compiled, x) == _outcome(model, x)
    s = _stats(compiled)
    assert s["fits"] == 1 and s["traces"] <= 5 and s["instantiated"] >= BLOCK - 5


def _lengths_then_shuffled(n):
    order = list(range(1, n + 1))
    return order + list(np.random.default_rng(1).permutation(order) + 1) + order


def test_a_branch_on_the_length_is_never_replayed_past_it():
    """``min(T, 5)`` fits ``T`` on the first lengths; from length 6 the light check of the
    eager run sees another slice and that length is traced instead: eager's result at every
    call."""
    def f(x):
        return x[:, :min(x.shape[1], 5)] * 2

    compiled = numgrad.compile(f)
    x = numgrad.arange(40.0).reshape(1, 40)
    for L in _lengths_then_shuffled(12):
        assert _outcome(compiled, x[:, :L].clone()) == _outcome(f, x[:, :L].clone())
    assert _stats(compiled)["fits"] >= 1


def test_constants_that_fit_no_recipe_stay_per_length():
    """A constant whose content is no recipe of its shape (squares), and a number that is no
    polynomial of the length: no fit, eager's results."""
    def f(x):
        n = x.shape[1]
        return x * numgrad.tensor([float(i * i) for i in range(n)]) + float(2 ** n)

    compiled = numgrad.compile(f)
    x = numgrad.arange(40.0).reshape(1, 40)
    for L in _lengths_then_shuffled(6):
        assert _outcome(compiled, x[:, :L].clone()) == _outcome(f, x[:, :L].clone())
    assert _stats(compiled)["instantiated"] == 0


def test_dynamic_false_specialises_every_size():
    def f(x):
        return (x * 3).sum(1)

    compiled = numgrad.compile(f, dynamic=False)
    for L in list(range(1, 8)) * 2:
        x = numgrad.ones(2, L)
        assert _outcome(compiled, x) == _outcome(f, x)
    assert _stats(compiled)["fits"] == 0 and _stats(compiled)["traces"] == 7


@settings(max_examples=10, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 3), st.integers(2, 9)), min_size=4,
                       max_size=9))
def test_two_sizes_varying_apart_give_eagers_results(shapes):
    """Batch and length both changing: a fit in one size whose other size does not follow
    it is no variant of the family (its sizes are checked), so that call is planned on its
    own; values at every call are eager's."""
    def f(x):
        return x[:, 1:] * x[:, :-1] + 1

    compiled = numgrad.compile(f)
    for b, n in shapes:
        x = numgrad.arange(float(b * n)).reshape(b, n) / 5
        assert _outcome(compiled, x) == _outcome(f, x)
