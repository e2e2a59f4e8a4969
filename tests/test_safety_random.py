"""The random number generator against PyTorch: a state is checked in full before any kernel
reads it (the cases that used to corrupt memory run in a child process, also with
``NUMBA_BOUNDSCHECK=1``), states round-trip every draw (the cached second normal of a pair
included) and pass between numgrad and PyTorch both ways, ``Generator()`` starts from
PyTorch's seed, and bad arguments get PyTorch's exception class and message."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from _random_state_cases import _PAST_THE_WORDS, _STATE_CASES, outcome, state_bytes
from conftest import requires_torch, torch

import numgrad as ng

pytestmark = requires_torch
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def assert_same(code, **env):
    ours, theirs = outcome(ng, code, **env), outcome(torch, code, **env)
    assert ours == theirs, code


_CHILD = """
import json, sys
import numpy as np
import numgrad as m
sys.path.insert(0, {tests!r})
from _random_state_cases import _PAST_THE_WORDS, _STATE_CASES, outcome, state_bytes
res = {{}}
for name, code in {{**_STATE_CASES, **_PAST_THE_WORDS}}.items():
    m.manual_seed(1234)
    got = outcome(m, code, state=state_bytes, path={path!r} + name)
    res[name] = [got, m.rand(4, dtype=m.float64).tolist()]
print(json.dumps(res))
"""


def _child_results(tmp_path, boundscheck):
    env = dict(os.environ)
    if boundscheck:
        env["NUMBA_BOUNDSCHECK"] = "1"
    code = _CHILD.format(tests=os.path.join(ROOT, "tests"), path=str(tmp_path / "ck_"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=900, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]  # a crash (a signal) fails here, not pytest
    return json.loads(r.stdout.strip().splitlines()[-1])


def _torch_results(tmp_path):
    res = {}
    for name, code in _STATE_CASES.items():
        torch.manual_seed(1234)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = outcome(torch, code, state=state_bytes, path=str(tmp_path / f"t_{name}"))
        res[name] = [list(got), torch.rand(4, dtype=torch.float64).tolist()]
    return res


@pytest.mark.parametrize("boundscheck", [False, True], ids=["plain", "boundscheck"])
def test_bad_states_raise_pytorchs_errors_in_a_child_process(tmp_path, boundscheck):
    ours = _child_results(tmp_path, boundscheck)
    theirs = _torch_results(tmp_path)
    for name in _STATE_CASES:
        assert ours[name] == theirs[name], name
    state_bytes(torch)  # what making the state leaves in the generator
    untouched = torch.rand(4, dtype=torch.float64).tolist()
    for name in _PAST_THE_WORDS:
        assert ours[name] == [["RuntimeError", "Invalid mt19937 state"], untouched], name


def test_a_refused_state_leaves_the_generator_as_it_was():
    g = ng.Generator().manual_seed(7)
    ng.randn(3, generator=g)  # a cached second normal
    before = g.get_state().numpy().copy()
    for bad in (g.get_state()[:100], g.get_state().float(), ng.zeros(5056, dtype=ng.uint8)):
        with pytest.raises((RuntimeError, TypeError)):
            g.set_state(bad)
        np.testing.assert_array_equal(g.get_state().numpy(), before)


def test_a_state_tensor_changed_after_set_state_does_not_reach_the_generator():
    s = ng.get_rng_state()
    ng.set_rng_state(s)
    a = ng.rand(5)
    ng.set_rng_state(s)
    s.zero_()
    np.testing.assert_array_equal(ng.rand(5).numpy(), a.numpy())


def test_checkpoint_round_trip(tmp_path):
    ng.manual_seed(3)
    ng.randn(3, dtype=ng.float64)
    ng.save({"rng_state": ng.get_rng_state(), "step": 1}, tmp_path / "ck.pt")
    a = ng.randn(7, dtype=ng.float64)
    ng.set_rng_state(ng.load(tmp_path / "ck.pt")["rng_state"])
    np.testing.assert_array_equal(ng.randn(7, dtype=ng.float64).numpy(), a.numpy())


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_trip_keeps_the_cached_normal(dtype):
    for m in (ng, torch):
        d = getattr(m, dtype)
        m.manual_seed(0)
        m.randn(3, dtype=d)  # leaves the second normal of a pair in the generator
        s = m.get_rng_state()
        a = m.randn(5, dtype=d)
        m.set_rng_state(s)
        b = m.randn(5, dtype=d)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        if m is ng:
            ours = a.numpy()
    np.testing.assert_array_equal(ours, a.numpy())


def test_generator_round_trip_and_seeding_mid_stream():
    res = []
    for m in (ng, torch):
        g = m.Generator().manual_seed(11)
        m.randn(1, generator=g, dtype=m.float64)
        s = g.get_state()
        a = m.randn(4, generator=g, dtype=m.float64)
        g.set_state(s)
        b = m.randn(4, generator=g, dtype=m.float64)
        m.randn(3, generator=g)
        g.manual_seed(12)  # drops the cached normal
        c = m.randn(3, generator=g, dtype=m.float64)
        d = m.Generator().manual_seed(12)
        res.append([a.numpy(), b.numpy(), c.numpy(), m.randn(3, generator=d,
                                                             dtype=m.float64).numpy(),
                    g.initial_seed()])
    np.testing.assert_array_equal(res[0][0], res[0][1])
    np.testing.assert_array_equal(res[0][2], res[0][3])
    for x, y in zip(res[0], res[1]):
        np.testing.assert_array_equal(x, y)


def test_states_pass_between_numgrad_and_pytorch():
    """The 5056-byte layout is PyTorch's: the same draws give the same bytes, and a state
    from either library draws the same numbers in the other."""
    for m in (ng, torch):
        m.manual_seed(21)
        m.rand(5)
        m.randn(1, dtype=m.float64)  # a cached normal in the state
    ours, theirs = ng.get_rng_state(), torch.get_rng_state()
    assert ours.shape == theirs.shape == (5056,) and ours.dtype == ng.uint8
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    torch.manual_seed(99)
    torch.set_rng_state(torch.from_numpy(ours.numpy().copy()))
    ng.manual_seed(98)
    ng.set_rng_state(ng.tensor(theirs.numpy()))
    for _ in range(2):
        np.testing.assert_array_equal(ng.randn(3, dtype=ng.float64).numpy(),
                                      torch.randn(3, dtype=torch.float64).numpy())
        np.testing.assert_array_equal(ng.rand(700).numpy(), torch.rand(700).numpy())
    assert ng.initial_seed() == torch.initial_seed() == 21
    g, tg = ng.Generator(), torch.Generator()
    g.set_state(ng.tensor(tg.get_state().numpy()))
    tg.set_state(torch.from_numpy(ng.Generator().manual_seed(4).get_state().numpy()))
    np.testing.assert_array_equal(ng.rand(3, generator=g).numpy(),
                                  torch.rand(3, generator=torch.Generator()).numpy())
    np.testing.assert_array_equal(torch.rand(3, generator=tg).numpy(),
                                  torch.rand(3, generator=torch.Generator().manual_seed(4))
                                  .numpy())


def test_unseeded_generator_draws_pytorchs_numbers():
    assert ng.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    np.testing.assert_array_equal(ng.rand(5, generator=ng.Generator()).numpy(),
                                  torch.rand(5, generator=torch.Generator()).numpy())
    np.testing.assert_array_equal(ng.Generator().get_state().numpy(),
                                  torch.Generator().get_state().numpy())


# ------------------------------------------------------------------------------ arguments


@pytest.mark.parametrize("code", [
    "m.manual_seed(2**64)", "m.manual_seed(-2**63 - 1)", "r = m.manual_seed(-1).initial_seed()",
    "r = m.manual_seed(-2**63).initial_seed()", "r = m.manual_seed(2**64 - 1).initial_seed()",
    "r = m.manual_seed(1.5).initial_seed()", "r = m.manual_seed(True).initial_seed()",
    "m.manual_seed('abc')", "m.manual_seed(None)", "r = m.manual_seed('7').initial_seed()",
    "m.Generator().manual_seed(2**64)", "m.Generator().manual_seed(-2**63 - 1)",
    "r = m.Generator().manual_seed(-5).initial_seed()", "m.Generator().manual_seed(1.5)",
    "m.Generator().manual_seed(True)", "m.Generator().manual_seed('3')",
    "m.Generator().manual_seed(None)", "m.Generator().manual_seed(m.tensor(3))",
    "r = m.Generator().manual_seed(2**64 - 1).initial_seed()",
])
def test_seed_arguments(code):
    assert_same(code)


@pytest.mark.parametrize("code", [
    "m.randperm(300, dtype=m.int8)", "m.randperm(129, dtype=m.int8)",
    "r = m.randperm(128, dtype=m.int8)", "m.randperm(257, dtype=m.uint8)",
    "r = m.randperm(256, dtype=m.uint8)", "m.randperm(2**15 + 1, dtype=m.int16)",
    "m.randperm(2050, dtype=m.float16)", "m.randperm(2**24 + 2, dtype=m.float32)",
    "m.randperm(3, dtype=m.bool)", "m.randperm(0, dtype=m.bool)", "m.randperm(-1)",
    "r = m.randperm(7, dtype=m.int32)", "r = m.randperm(9, dtype=m.float64)",
    "r = m.randperm(5, dtype=m.bfloat16).float()", "r = m.randperm(0, dtype=m.int8)",
])
def test_randperm_dtypes(code):
    assert_same(code)


_FILLS = ["normal_()", "normal_(1, 2)", "uniform_()", "uniform_(-1, 1)", "bernoulli_(0.5)",
          "exponential_()", "random_()", "random_(5)", "random_(-3, 4)", "random_(0, None)",
          "random_(300)", "random_(-300, 2)", "random_(2**40)", "random_(-2**63, None)",
          "random_(5, 5)", "random_(1.5)", "random_(1, 2, 3)", "random_(to=4)",
          "random_(2**63)", "random_(3, None)", "random_(2**31 - 5, None)"]


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                   "float32", "float64"])
@pytest.mark.parametrize("fill", _FILLS)
def test_in_place_fills_by_dtype(dtype, fill):
    """Values (PyTorch's, from one seed) or PyTorch's error, for every dtype."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float random_ beyond 2**24: PyTorch warns
        assert_same(f"m.manual_seed(4); r = m.zeros(6, dtype=m.{dtype}).{fill}; "
                    f"r = [r.double().numpy().tolist(), m.rand(2, dtype=m.float64).tolist()]")


@pytest.mark.parametrize("code", [
    "m.empty(4, 5).t().uniform_(-2, 3)", "m.empty(6, 5).t().normal_()",
    "m.empty(6, 5, dtype=m.float64).t().normal_(1, 3)", "m.empty(6, 6)[:, ::2].normal_()",
    "m.empty(6, 6, dtype=m.float64)[::2].normal_()", "m.empty(4, 6).t().random_(10)",
    "m.empty(3, 4, dtype=m.int64).t().random_()", "m.empty(2, 3, 4).permute(2, 0, 1).uniform_()",
    "m.empty(40, dtype=m.float64).uniform_(-2, 3)", "m.empty(5, 7, dtype=m.float64).normal_(2, 3)",
    "m.randint(0, 2**30, (6,))", "m.randint(0, 2**30, (6,), dtype=m.int32)",
    "m.randint(-5, 2**28, (6,))", "m.randint(0, 2**28 - 1, (6,))",
])
def test_fills_follow_pytorchs_memory_order_and_draws(code):
    """A tensor that is not contiguous is filled in its memory order (and ``normal_`` then
    draws Box-Muller pairs one at a time); a range of 2**28 or more draws 64 bits."""
    assert_same(f"m.manual_seed(6); r = {code}; "
                f"r = [r.double().numpy().tolist(), m.rand(2, dtype=m.float64).tolist()]")


def test_generator_devices():
    assert ng.Generator().device == ng.Generator("cpu:0").device == ng.device("cpu")
    assert ng.Generator(device=None).device == ng.device("cpu")
    assert_same("m.Generator(device='meta')")
    ours, theirs = outcome(ng, "m.Generator(device='xyz')"), outcome(torch,
                                                                   "m.Generator(device='xyz')")
    assert ours[0] == theirs[0] == "RuntimeError"
    assert ours[1].startswith("Expected one of cpu, cuda") and ours[1].endswith(
        "device type at start of device string: xyz")
    if not ng.cuda.is_available() and not torch.cuda.is_available():
        assert_same("m.Generator(device='cuda')")
        assert_same("m.Generator(device='cuda:0')")
        assert_same("m.Generator(device=0)")


# --------------------------------------------------------------------------- dropout masks


def test_dropout_masks_of_transposed_and_sliced_inputs_are_pytorchs():
    x = np.arange(1, 121, dtype=np.float32).reshape(10, 12)
    res = []
    for m in (ng, torch):
        m.manual_seed(5)
        t = m.tensor(x)
        res.append([m.nn.functional.dropout(v, 0.5).numpy() for v in
                    (t.t(), t[:, ::3], t[2:7], t[1:9:2, 3:].t(), t.t()[::2])])
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------ property: streams

_DRAWS = st.tuples(
    st.sampled_from(["rand", "rand64", "randn", "randn64", "randint", "randperm", "normal_",
                     "bernoulli", "multinomial", "uniform_", "random_", "exponential_"]),
    st.integers(0, 40), st.integers(0, 1 << 31))
_OPS = st.lists(st.one_of(_DRAWS, st.sampled_from(["snapshot", "restore"])), min_size=1,
                max_size=10)


def _draw(m, op):
    """One draw call, as an array (``exact``: False where PyTorch's vectorized float32
    normals may differ in the last bit)."""
    name, n, k = op
    if name == "rand":
        return m.rand(n), True
    if name == "rand64":
        return m.rand(n, 2, dtype=m.float64), True
    if name == "randn":
        return m.randn(n), n < 16
    if name == "randn64":
        return m.randn(n, dtype=m.float64), True
    if name == "randint":
        return m.randint(-k, k + 1 + (k % 3) * (1 << 29), (n,)), True
    if name == "randperm":
        return m.randperm(n), True
    if name == "normal_":
        return m.empty(n + 1, 3, dtype=m.float64).t().normal_(k % 7, 1 + k % 3), True
    if name == "bernoulli":
        return m.empty(n).bernoulli_((k % 101) / 100), True
    if name == "multinomial":
        p = m.tensor(np.linspace(0.1, 1.0, 5 + k % 4))
        return m.multinomial(p, 1 + n % 4, replacement=bool(k % 2)), True
    if name == "uniform_":
        return m.empty(n, dtype=m.float64).uniform_(-k % 5, 1 + k % 9), True
    if name == "random_":
        return m.empty(n, dtype=m.int64).random_(), True
    return m.empty(n).exponential_(1 + k % 3), True


def _run(m, seed, ops):
    """The draws of ``ops`` from ``seed``, and per snapshot its state and the draws that
    followed it up to the next restore."""
    m.manual_seed(seed)
    out, snaps = [], []
    for op in ops:
        if op == "snapshot":
            snaps.append((m.get_rng_state(), []))
        elif op == "restore":
            if snaps:
                m.set_rng_state(snaps[-1][0])
            for _, follow in snaps:  # later draws follow no earlier snapshot
                follow.append(None)
        else:
            r = _draw(m, op)
            out.append(r)
            for _, follow in snaps:
                follow.append((op, r))
    return out, snaps


def _close(a, b, exact):
    a, b = a.double().numpy(), b.double().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, (1 << 64) - 1), ops=_OPS)
def test_draw_sequences_and_snapshots_match_pytorch(seed, ops):
    ours, our_snaps = _run(ng, seed, ops)
    theirs, their_snaps = _run(torch, seed, ops)
    for (a, exact), (b, _) in zip(ours, theirs):
        _close(a, b, exact)
    for (s, _), (t, _) in zip(our_snaps, their_snaps):
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    # restoring a snapshot draws again what followed it
    for state, follow in our_snaps:
        ng.set_rng_state(state)
        for step in follow:
            if step is None:  # a restore: what came next followed another state
                break
            op, (a, _) = step
            _close(_draw(ng, op)[0], a, True)


def test_docs_name_the_checks():
    with open(os.path.join(ROOT, "docs", "safety.md")) as f:
        assert "Invalid mt19937 state" in f.read()
