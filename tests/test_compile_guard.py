"""The generated guard (``_compile/guard.py``) against the full walk it stands in for, and
the generated replay (``plan._generate``) against eager: a hit of the guard is a call whose
signature is the plan's, and a replay through generated code returns eager's values."""

import warnings

import numpy as np
import pytest

import numgrad
import numgrad.nn as nn
from numgrad._compile import dynamic, plan
from numgrad._compile import guard as G
from numgrad._compile.state import reachable, shape_free, signature


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, idx):
        return self.norm(self.lin(self.emb(idx)))


def _mutations():
    """Changes of a module's tensors the signature sees (and one it does not)."""
    def strided(m):  # same shape and values, other strides
        m.lin.weight.data = m.lin.weight.data.t().contiguous().t()

    def dtype(m):
        m.norm.bias.data = m.norm.bias.data.double()

    def flag(m):
        m.norm.weight.requires_grad_(False)

    def grad(m):
        m.lin.bias.grad = numgrad.zeros(4)

    def shared(m):  # two parameters viewing one buffer
        m.norm.bias.data = m.norm.weight.data

    def view(m):  # a view of a larger buffer: another root
        m.lin.bias.data = numgrad.zeros(8)[2:6]

    def values(m):  # new values in place: the same signature
        with numgrad.no_grad():
            m.lin.weight.mul_(2.0)

    return [strided, dtype, flag, grad, shared, view, values]


@pytest.mark.parametrize("sizeless", [False, True])
def test_generated_guard_is_the_walk(sizeless):
    numgrad.manual_seed(0)
    for mutate in _mutations():
        net = Net()
        idx = numgrad.tensor([[1, 2, 3]])
        args = (idx,)
        reach0 = reachable(net, args, {})
        sig = signature(reach0)
        program = shape_free(sig, reach0)
        g = G.build(args, {}, net, sig, sizeless=sizeless)
        assert g(args, {}, net) is not None
        mutate(net)
        for call in (args, (numgrad.tensor([[4, 5, 6, 7]]),)):
            reach = reachable(net, call, {})
            now = signature(reach)
            hit = g(call, {}, net)
            if not sizeless:
                assert (hit is not None) == (now == sig), mutate.__name__
                continue
            if hit is not None:
                assert shape_free(now, reach) == program, mutate.__name__
                assert hit[1] == dynamic.sizes_of(now, reach), mutate.__name__
                assert [id(t) for t in hit[0]] == [id(t) for t in reach.tensors]
            if mutate.__name__ == "values":
                assert hit is not None


def test_stack_indices_twin_is_the_host_step():
    from numgrad.ops.indexing import _stack_indices
    rng = np.random.default_rng(0)
    for bshape, shapes in [((), [()]), ((5,), [(5,), (1,)]), ((3, 4), [(3, 4), (4,), (3, 1)]),
                           ((2, 0), [(2, 0)])]:
        for dt in (np.int64, np.int32, np.uint8, np.bool_):
            arrays = [rng.integers(0, 9, s).astype(dt) for s in shapes]
            want = _stack_indices(arrays, bshape)
            got = plan._stack_indices(arrays, bshape)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()


def test_generated_replay_of_a_growing_sequence_is_eager():
    """Generation's pattern: one family of plans across lengths, index values changing at
    every call; the generated replay (and the loop it replaces) return eager's values."""
    numgrad.manual_seed(0)
    net = Net().eval()
    compiled = numgrad.compile(net)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings(), numgrad.no_grad():
        warnings.simplefilter("ignore")
        for rnd in range(2):
            for generated in (True, False):
                plan.GENERATED = generated
                try:
                    for n in range(1, 9):
                        idx = numgrad.tensor(rng.integers(0, 10, (1, n)))
                        want = net(idx).numpy()
                        got = compiled(idx).numpy()
                        assert got.tobytes() == want.tobytes(), (rnd, generated, n)
                finally:
                    plan.GENERATED = True
    assert compiled._compiled.stats()["instantiated"] > 0
