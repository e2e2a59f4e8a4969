"""A whole training step compiled (forward, cross-entropy, backward, gradient clipping and an
Adam/AdamW update) on small models with LayerNorm, Linear and GELU, and on a 2-layer LSTM: the
step replays, a replayed call leaves the losses, parameters, gradients and optimizer state of
an eager twin bit for bit, and the eager run follows PyTorch's from the same weights."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad

CALLS = 8
D_IN, D, N_CLASSES = 12, 16, 5


def _mlp(m):
    nn = m.nn
    return nn.Sequential(nn.Linear(D_IN, D), nn.LayerNorm(D), nn.GELU(), nn.Linear(D, D),
                         nn.GELU(), nn.LayerNorm(D), nn.Linear(D, N_CLASSES))


def _block(m):
    """A transformer-style residual MLP block over (batch, time, features) input, whose
    logits come out as (batch * time, classes), as a language model's are."""
    nn = m.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(D_IN, D)
            self.ln1 = nn.LayerNorm(D)
            self.fc = nn.Linear(D, 4 * D)
            self.act = nn.GELU(approximate="tanh")
            self.out = nn.Linear(4 * D, D)
            self.ln2 = nn.LayerNorm(D)
            self.head = nn.Linear(D, N_CLASSES)

        def forward(self, x):
            h = self.proj(x)
            h = h + self.out(self.act(self.fc(self.ln1(h))))
            return self.head(self.ln2(h)).reshape(-1, N_CLASSES)

    return Block()


def _lstm(m):
    """A 2-layer LSTM (batch first) and a linear head on every step's output."""
    nn = m.nn

    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(D_IN, D, num_layers=2, batch_first=True)
            self.head = nn.Linear(D, N_CLASSES)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out).reshape(-1, N_CLASSES)

    return Recurrent()


MODELS = {"mlp": (_mlp, (16, D_IN)), "block": (_block, (4, 6, D_IN)),
          "lstm": (_lstm, (4, 6, D_IN))}
OPTIMIZERS = {
    "adam": lambda m, ps: m.optim.Adam(ps, lr=1e-2),
    "adamw": lambda m, ps: m.optim.AdamW(ps, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1),
    "adam_amsgrad_l2": lambda m, ps: m.optim.Adam(ps, lr=1e-2, weight_decay=0.01,
                                                  amsgrad=True),
    "rmsprop_centered": lambda m, ps: m.optim.RMSprop(ps, lr=1e-3, momentum=0.9, centered=True),
    "adagrad": lambda m, ps: m.optim.Adagrad(ps, lr=1e-2, lr_decay=0.01),
}


def _weights(model_fn, seed=0):
    """Random weights for every parameter (LayerNorm's too), by name."""
    rng = np.random.default_rng(seed)
    shapes = {k: tuple(v.shape) for k, v in model_fn(numgrad).state_dict().items()}
    return {k: (rng.standard_normal(s) * 0.5).astype(np.float32) for k, s in shapes.items()}


def _build(m, model_fn, weights, opt_name):
    model = model_fn(m)
    model.load_state_dict({k: m.tensor(v.copy()) for k, v in weights.items()})
    return model, OPTIMIZERS[opt_name](m, model.parameters())


def _batches(shape, seed=1):
    """Fresh inputs for every call; the scale varies so that some steps are clipped and some
    are not."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape[:-1]))
    return [((rng.standard_normal(shape) * (0.2 + k % 4)).astype(np.float32),
             rng.integers(0, N_CLASSES, n)) for k in range(CALLS)]


def _step_fn(m, model, opt):
    F = m.nn.functional

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


def _snapshot(model, opt):
    """Parameters, gradients and optimizer state as NumPy arrays, by name."""
    out = {}
    for name, p in model.named_parameters():
        out[name] = np.array(p.detach().numpy())
        out[name + ".grad"] = np.array(p.grad.numpy())
    state = opt.state_dict()["state"]
    for i in sorted(state):
        for k, v in sorted(state[i].items()):
            out[f"state.{i}.{k}"] = np.array(v.numpy())
    return out


def _run(m, model_fn, shape, opt_name, compiled):
    """Losses and snapshots after every call of the training step."""
    model, opt = _build(m, model_fn, _weights(model_fn), opt_name)
    step = _step_fn(m, model, opt)
    run = numgrad.compile(step) if compiled else step
    losses, snaps = [], []
    for x, y in _batches(shape):
        loss = run(m.tensor(x), m.tensor(y))
        losses.append(np.array(loss.detach().numpy()))
        snaps.append(_snapshot(model, opt))
    return losses, snaps, run


def _assert_bitwise(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert a.tobytes() == b.tobytes(), f"{what}: {np.count_nonzero(a != b)} elements differ"


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_compiled_training_step_replays_and_equals_eager(model_name, opt_name):
    model_fn, shape = MODELS[model_name]
    eager_losses, eager_snaps, _ = _run(numgrad, model_fn, shape, opt_name, compiled=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses, snaps, step = _run(numgrad, model_fn, shape, opt_name, compiled=True)
    entries = list(step._cache.values())
    assert any(e.verified for e in entries), (
        [getattr(e, "why", None) for e in entries], [str(w.message) for w in caught])
    for k in range(CALLS):
        _assert_bitwise(losses[k], eager_losses[k], f"loss of call {k}")
        assert sorted(snaps[k]) == sorted(eager_snaps[k])
        for name in snaps[k]:
            _assert_bitwise(snaps[k][name], eager_snaps[k][name], f"{name} after call {k}")
    steps = [v for name, v in snaps[-1].items() if name.endswith(".step")]
    assert steps and all(s == CALLS for s in steps)  # every replay counted its step


def test_clipping_is_exercised():
    """Some calls of the steps above clip the gradients and some do not."""
    model_fn, shape = MODELS["mlp"]
    model, opt = _build(numgrad, model_fn, _weights(model_fn), "adam")
    F = numgrad.nn.functional
    totals = []
    for x, y in _batches(shape):
        opt.zero_grad()
        F.cross_entropy(model(numgrad.tensor(x)), numgrad.tensor(y)).backward()
        totals.append(numgrad.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        opt.step()
    assert min(totals) < 1.0 < max(totals), totals


@requires_torch
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_eager_training_step_follows_pytorch(model_name, opt_name):
    model_fn, shape = MODELS[model_name]
    losses, snaps, _ = _run(numgrad, model_fn, shape, opt_name, compiled=False)
    t_losses, t_snaps, _ = _run(torch, model_fn, shape, opt_name, compiled=False)
    for k in range(CALLS):
        assert_close(losses[k], t_losses[k], rtol=1e-5, atol=1e-6, msg=f"loss of call {k}")
        assert sorted(snaps[k]) == sorted(t_snaps[k])
        for name in snaps[k]:
            assert snaps[k][name].dtype == t_snaps[k][name].dtype, name
            # RMSprop's buffer sums g / sqrt(E[g^2] - E[g]^2), about +-10 for any size of g:
            # a gradient entry near 0 whose last bits differ (PyTorch sums in another order)
            # moves it by up to ~1e-3 (the parameters by lr times that)
            atol = 1e-2 if name.endswith("momentum_buffer") else 1e-5
            assert_close(snaps[k][name], t_snaps[k][name], rtol=1e-4, atol=atol,
                         msg=f"{name} after call {k}")


# ----------------------------------------------------------------------------------------
# clip_grad_norm_ on its own
# ----------------------------------------------------------------------------------------

SHAPES = [(16, 12), (16,), (5, 16), (1000,), (7, 3, 3)]


@requires_torch
@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
@pytest.mark.parametrize("scale", [0.01, 1.0, 10.0])
def test_clip_grad_norm_scales_as_pytorch_bit_for_bit(norm_type, scale):
    """Given the total norm, the scaled gradients are PyTorch's (clipped or not); the total
    is PyTorch's up to the summation order of the norms."""
    rng = np.random.default_rng(0)
    grads = [(rng.standard_normal(s) * scale).astype(np.float32) for s in SHAPES]
    ours = [numgrad.zeros(s, requires_grad=True) for s in SHAPES]
    theirs = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = numgrad.tensor(g.copy()), torch.tensor(g.copy())
    total = numgrad.nn.utils.clip_grad_norm_(ours, 1.0, norm_type)
    want = torch.nn.utils.get_total_norm([q.grad for q in theirs], norm_type)
    assert_close(total, want, rtol=1e-6, atol=0)
    torch.nn.utils.clip_grads_with_norm_(theirs, 1.0, torch.tensor(total.numpy()))
    for k, (p, q) in enumerate(zip(ours, theirs)):
        _assert_bitwise(p.grad.numpy(), q.grad.numpy(), f"grad {k}")


def _clipping_step(error_if_nonfinite):
    numgrad.manual_seed(0)
    model = numgrad.nn.Linear(4, 3)

    def step(x):
        model.zero_grad()
        model(x).square().sum().backward()
        return numgrad.nn.utils.clip_grad_norm_(model.parameters(), 0.5,
                                                error_if_nonfinite=error_if_nonfinite)

    return model, step


def test_compiled_clipping_replays_and_checking_finiteness_runs_eagerly():
    rng = np.random.default_rng(0)
    xs = [numgrad.tensor(rng.standard_normal((5, 4)).astype(np.float32)) for _ in range(5)]
    for check in (False, True):
        model, step = _clipping_step(check)
        twin, eager = _clipping_step(check)
        compiled = numgrad.compile(step)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for x in xs:
                _assert_bitwise(compiled(x).numpy(), eager(x).numpy(), "total")
                for p, q in zip(model.parameters(), twin.parameters()):
                    _assert_bitwise(p.grad.numpy(), q.grad.numpy(), "grad")
        entries = list(compiled._cache.values())
        if not check:
            assert any(e.verified for e in entries)
        else:  # reading the total on the host: PyTorch's check runs eagerly, every call
            assert not any(e.verified for e in entries)
            assert any("clip_grad_norm_(error_if_nonfinite=True)" in str(e.why) for e in entries)
    model, step = _clipping_step(True)
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        step(numgrad.full((5, 4), float("inf")))
