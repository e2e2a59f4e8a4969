"""Recurrent layers (``nn.RNN``, ``LSTM``, ``GRU`` and their cells) against torch.nn with the
same state dict: outputs, final states, input, state and parameter gradients, node names,
initialization for one seed, ``repr``, errors; float64 finite differences and double
backward on tiny cases; a small LSTM language model trained with SGD next to PyTorch's."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, torch

import numgrad as ng
from numgrad.autograd import gradgradcheck

nn = ng.nn

F32 = {"rtol": 1e-4, "atol": 2e-5}
F64 = {"rtol": 1e-9, "atol": 1e-11}


def _load_into_torch(ours, theirs):
    sd = {k: torch.from_numpy(np.array(v.numpy())) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(sd)


def _states(h):
    return list(h) if isinstance(h, tuple) else [h]


# (name, constructor, input shape, hidden-state shapes or None)
LAYERS = [
    ("rnn_tanh", lambda m: m.RNN(4, 5), (6, 3, 4), None),
    ("rnn_relu_2layers", lambda m: m.RNN(4, 5, 2, "relu"), (6, 3, 4), [(2, 3, 5)]),
    ("rnn_bidir_batch_first", lambda m: m.RNN(4, 5, bidirectional=True, batch_first=True),
     (3, 6, 4), [(2, 3, 5)]),
    ("rnn_unbatched", lambda m: m.RNN(4, 5, num_layers=2), (6, 4), [(2, 5)]),
    ("rnn_nobias", lambda m: m.RNN(4, 5, bias=False, nonlinearity="relu"), (6, 3, 4), None),
    ("lstm", lambda m: m.LSTM(4, 5), (6, 3, 4), None),
    ("lstm_hx", lambda m: m.LSTM(4, 5), (6, 3, 4), [(1, 3, 5), (1, 3, 5)]),
    ("lstm_2layers", lambda m: m.LSTM(4, 5, num_layers=2), (7, 2, 4), [(2, 2, 5), (2, 2, 5)]),
    ("lstm_bidir", lambda m: m.LSTM(4, 5, bidirectional=True), (6, 3, 4), None),
    ("lstm_2layers_bidir_batch_first",
     lambda m: m.LSTM(4, 5, 2, batch_first=True, bidirectional=True), (3, 6, 4),
     [(4, 3, 5), (4, 3, 5)]),
    ("lstm_unbatched", lambda m: m.LSTM(4, 5), (6, 4), [(1, 5), (1, 5)]),
    ("lstm_unbatched_batch_first_bidir",
     lambda m: m.LSTM(4, 5, batch_first=True, bidirectional=True), (6, 4), None),
    ("lstm_nobias", lambda m: m.LSTM(4, 5, bias=False), (6, 3, 4), None),
    ("lstm_proj", lambda m: m.LSTM(4, 5, proj_size=3), (6, 3, 4), [(1, 3, 3), (1, 3, 5)]),
    ("lstm_proj_2layers_bidir", lambda m: m.LSTM(4, 5, 2, bidirectional=True, proj_size=2),
     (5, 2, 4), None),
    ("lstm_dropout_eval", lambda m: m.LSTM(4, 5, 2, dropout=0.5).eval(), (6, 3, 4), None),
    ("lstm_odd_sizes_2layers_bidir_batch_first",
     lambda m: m.LSTM(13, 33, 2, batch_first=True, bidirectional=True), (7, 9, 13),
     [(4, 7, 33), (4, 7, 33)]),
    ("lstm_one_step", lambda m: m.LSTM(4, 5), (1, 3, 4), [(1, 3, 5), (1, 3, 5)]),
    ("gru", lambda m: m.GRU(4, 5), (6, 3, 4), None),
    ("gru_hx_2layers", lambda m: m.GRU(4, 5, 2), (6, 3, 4), [(2, 3, 5)]),
    ("gru_bidir_batch_first", lambda m: m.GRU(4, 5, 2, batch_first=True, bidirectional=True),
     (3, 6, 4), [(4, 3, 5)]),
    ("gru_unbatched", lambda m: m.GRU(4, 5), (6, 4), [(1, 5)]),
    ("gru_nobias", lambda m: m.GRU(4, 5, bias=False), (6, 3, 4), [(1, 3, 5)]),
    ("gru_single_step", lambda m: m.GRU(4, 5), (1, 3, 4), None),
]


def _run(make, shape, hshapes, dtype, seed=0):
    """Both modules with numgrad's weights run on the same input and states; the outputs,
    states and their gradients under a random weighting."""
    ng.manual_seed(seed)
    ours = make(nn).to(getattr(ng, dtype))
    theirs = make(torch.nn).to(getattr(torch, dtype))
    _load_into_torch(ours, theirs)
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype)]
    arrays += [rng.standard_normal(s).astype(dtype) for s in hshapes or ()]
    results = []
    for m, mod in ((ng, ours), (torch, theirs)):
        ins = [m.tensor(a, requires_grad=True) for a in arrays]
        hx = None
        if hshapes:
            hx = tuple(ins[1:]) if len(hshapes) == 2 else ins[1]
        out, h = mod(ins[0], hx)
        outs = [out, *_states(h)]
        wrng = np.random.default_rng(seed + 1)
        loss = sum((o * m.tensor(wrng.standard_normal(tuple(o.shape)).astype(dtype))).sum()
                   for o in outs)
        loss.backward()
        results.append((mod, ins, outs))
    return results


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,make,shape,hshapes", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_pytorch(name, make, shape, hshapes, dtype):
    tol = F32 if dtype == "float32" else F64
    (ours, ins, outs), (theirs, tins, touts) = _run(make, shape, hshapes, dtype)
    assert len(outs) == len(touts)
    for k, (o, t) in enumerate(zip(outs, touts)):
        assert_close(o, t, **tol, msg=f"output {k}")
        assert o.dtype == getattr(ng, dtype)
    for k, (a, t) in enumerate(zip(ins, tins)):
        assert_close(a.grad, t.grad, **tol, msg=f"grad of input {k}")
    tparams = dict(theirs.named_parameters())
    assert [k for k, _ in ours.named_parameters()] == list(tparams)
    for k, p in ours.named_parameters():
        assert_close(p.grad, tparams[k].grad, **tol, msg=f"grad {k}")
    # the final states are stacks, the unbatched outputs squeezes, as in PyTorch
    for o, t in zip(outs[1:], touts[1:]):
        assert type(o.grad_fn).__name__ == type(t.grad_fn).__name__
    if len(shape) == 2 or name.startswith(("gru", "rnn")) and "batch_first" not in name:
        assert type(outs[0].grad_fn).__name__ == type(touts[0].grad_fn).__name__


CELLS = [
    ("rnncell", lambda m: m.RNNCell(4, 5), (3, 4), None),
    ("rnncell_hx", lambda m: m.RNNCell(4, 5), (3, 4), [(3, 5)]),
    ("rnncell_relu", lambda m: m.RNNCell(4, 5, nonlinearity="relu"), (3, 4), [(3, 5)]),
    ("rnncell_unbatched", lambda m: m.RNNCell(4, 5, bias=False), (4,), [(5,)]),
    ("lstmcell", lambda m: m.LSTMCell(4, 5), (3, 4), None),
    ("lstmcell_hx", lambda m: m.LSTMCell(4, 5), (3, 4), [(3, 5), (3, 5)]),
    ("lstmcell_unbatched", lambda m: m.LSTMCell(4, 5), (4,), [(5,), (5,)]),
    ("lstmcell_nobias", lambda m: m.LSTMCell(4, 5, bias=False), (3, 4), [(3, 5), (3, 5)]),
    ("grucell", lambda m: m.GRUCell(4, 5), (3, 4), None),
    ("grucell_hx", lambda m: m.GRUCell(4, 5), (3, 4), [(3, 5)]),
    ("grucell_unbatched_nobias", lambda m: m.GRUCell(4, 5, bias=False), (4,), [(5,)]),
]


def _run_cell(make, shape, hshapes, dtype, seed=0):
    ng.manual_seed(seed)
    ours = make(nn).to(getattr(ng, dtype))
    theirs = make(torch.nn).to(getattr(torch, dtype))
    _load_into_torch(ours, theirs)
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype)]
    arrays += [rng.standard_normal(s).astype(dtype) for s in hshapes or ()]
    results = []
    for m, mod in ((ng, ours), (torch, theirs)):
        ins = [m.tensor(a, requires_grad=True) for a in arrays]
        hx = None
        if hshapes:
            hx = tuple(ins[1:]) if len(hshapes) == 2 else ins[1]
        outs = _states(mod(ins[0], hx))
        wrng = np.random.default_rng(seed + 1)
        sum((o * m.tensor(wrng.standard_normal(tuple(o.shape)).astype(dtype))).sum()
            for o in outs).backward()
        results.append((mod, ins, outs))
    return results


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,make,shape,hshapes", CELLS, ids=[c[0] for c in CELLS])
def test_cell_matches_pytorch(name, make, shape, hshapes, dtype):
    tol = F32 if dtype == "float32" else F64
    (ours, ins, outs), (theirs, tins, touts) = _run_cell(make, shape, hshapes, dtype)
    assert len(outs) == len(touts)
    for k, (o, t) in enumerate(zip(outs, touts)):
        assert_close(o, t, **tol, msg=f"output {k}")
        assert type(o.grad_fn).__name__ == type(t.grad_fn).__name__
    for k, (a, t) in enumerate(zip(ins, tins)):
        assert_close(a.grad, t.grad, **tol, msg=f"grad of input {k}")
    tparams = dict(theirs.named_parameters())
    assert [k for k, _ in ours.named_parameters()] == list(tparams)
    for k, p in ours.named_parameters():
        assert_close(p.grad, tparams[k].grad, **tol, msg=f"grad {k}")


MODULES = {
    "rnn": lambda m: m.RNN(3, 4),
    "rnn_relu_full": lambda m: m.RNN(3, 4, 2, "relu", False, True, 0.25, True),
    "lstm": lambda m: m.LSTM(3, 4),
    "lstm_full": lambda m: m.LSTM(3, 4, 3, False, True, 0.5, True, 2),
    "lstm_bidir_proj": lambda m: m.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2),
    "gru": lambda m: m.GRU(3, 4, num_layers=2),
    "gru_full": lambda m: m.GRU(3, 4, 2, False, True, 0.1, True),
    "rnncell": lambda m: m.RNNCell(3, 4),
    "rnncell_full": lambda m: m.RNNCell(3, 4, False, "relu"),
    "lstmcell": lambda m: m.LSTMCell(3, 4),
    "lstmcell_nobias": lambda m: m.LSTMCell(3, 4, bias=False),
    "grucell": lambda m: m.GRUCell(3, 4),
    "grucell_nobias": lambda m: m.GRUCell(3, 4, False),
    "in_sequential": lambda m: m.Sequential(m.Linear(2, 3), m.LSTM(3, 5, 2), m.GRUCell(5, 2)),
}


@requires_torch
@pytest.mark.parametrize("name", list(MODULES))
def test_init_names_and_repr_match_pytorch(name):
    """Same seed, same initial weights (bit for bit), same state-dict keys, same repr."""
    for m in (ng, torch):
        m.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout with one layer
        ours, theirs = MODULES[name](nn), MODULES[name](torch.nn)
    assert repr(ours) == repr(theirs)
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert list(ours_sd) == list(theirs_sd)
    for k, v in ours_sd.items():
        assert tuple(v.shape) == tuple(theirs_sd[k].shape), k
        assert np.array_equal(v.numpy(), theirs_sd[k].numpy()), k
    assert all(p.requires_grad for p in ours.parameters())
    # a module drawn after it draws the same numbers too: the stream stayed in step
    assert np.array_equal(ng.rand(3).numpy(), torch.rand(3).numpy())


@requires_torch
def test_attributes_and_pytorch_state_dict_load():
    theirs = torch.nn.LSTM(3, 4, 2, bidirectional=True)
    ours = nn.LSTM(3, 4, 2, bidirectional=True)
    ours.load_state_dict({k: ng.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    for k, v in ours.state_dict().items():
        assert np.array_equal(v.numpy(), theirs.state_dict()[k].numpy())
    assert ours._flat_weights_names == theirs._flat_weights_names
    assert ours._all_weights == theirs._all_weights
    assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in theirs.all_weights]
    assert ours.all_weights[1][0] is ours.weight_ih_l0_reverse
    assert ours.flatten_parameters() is None
    for attr in ("mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                 "dropout", "bidirectional", "proj_size"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert nn.RNN(3, 4, nonlinearity="relu").nonlinearity == "relu"
    assert nn.RNN(3, 4, nonlinearity="relu").mode == "RNN_RELU"
    assert nn.RNNCell(3, 4, nonlinearity="relu").nonlinearity == "relu"
    assert isinstance(ours, nn.RNNBase) and isinstance(nn.GRUCell(2, 3), nn.RNNCellBase)
    # a parameter assigned later is the one the forward uses
    ours.weight_hh_l1 = nn.Parameter(ng.zeros(16, 4))
    assert ours._flat_weights[ours._flat_weights_names.index("weight_hh_l1")] is \
        ours.weight_hh_l1


@requires_torch
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_dropout_between_layers_matches_pytorch(kind):
    """p=1 zeroes the first layer's output whatever the mask, so both libraries agree; and
    the last layer's output is not dropped."""
    ng.manual_seed(0)
    ours = getattr(nn, kind)(4, 5, 2, dropout=1.0)
    theirs = getattr(torch.nn, kind)(4, 5, 2, dropout=1.0)
    _load_into_torch(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 2, 4)).astype(np.float32)
    out, h = ours(ng.tensor(x))
    tout, th = theirs(torch.tensor(x))
    assert_close(out, tout, **F32)
    for a, b in zip(_states(h), _states(th)):
        assert_close(a, b, **F32)
    assert (out.detach().numpy() != 0).all()
    ours.eval()
    theirs.eval()
    assert_close(ours(ng.tensor(x))[0], theirs(torch.tensor(x))[0], **F32)


def test_dropout_in_training_is_random_and_off_in_eval():
    ng.manual_seed(0)
    m = nn.GRU(4, 6, 2, dropout=0.5)
    x = ng.randn(5, 3, 4)
    a, b = m(x)[0], m(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    assert np.array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())


@requires_torch
def test_dropout_warning_matches_pytorch():
    msgs = []
    for m in (nn, torch.nn):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            m.LSTM(3, 4, dropout=0.2)
        msgs.append([(w.category, str(w.message)) for w in rec])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


# ---- float64 finite differences and double backward ------------------------------------


def _functional(mod, names, x, hx, params):
    """``mod(x, hx)``'s outputs and states (a list) with its parameters replaced by
    ``params`` (tensors), so that they can be differentiated as inputs."""
    saved = dict(mod._parameters)
    try:
        for n, p in zip(names, params):
            mod._parameters[n] = p
        res = mod(x, hx)
    finally:
        mod._parameters.update(saved)
    if isinstance(mod, nn.RNNCellBase):
        return _states(res)
    return [res[0], *_states(res[1])]


@pytest.mark.parametrize("make,n_states", [
    (lambda: nn.LSTM(2, 3, bidirectional=True, proj_size=2), 2),
    (lambda: nn.LSTM(2, 3, bidirectional=True), 2),
    (lambda: nn.LSTM(2, 3, num_layers=2, batch_first=True), 2),
    (lambda: nn.LSTM(2, 3, bias=False), 2),
    (lambda: nn.GRU(2, 3, num_layers=2, batch_first=True), 1),
    (lambda: nn.RNN(2, 3, num_layers=2), 1),
    (lambda: nn.LSTMCell(2, 3), 2),
    (lambda: nn.GRUCell(2, 3), 1),
])
def test_backward_matches_finite_differences(make, n_states):
    """Gradients of input, states and every parameter against float64 central differences."""
    ng.manual_seed(1)
    mod = make().double()
    names = list(mod._parameters)
    rng = np.random.default_rng(2)
    if isinstance(mod, nn.RNNCellBase):
        x = rng.standard_normal((3, 2))
        states = [rng.standard_normal((3, 3)) for _ in range(n_states)]
    else:
        x = rng.standard_normal((3, 2, 2))
        dirs = 2 if mod.bidirectional else 1
        sizes = [mod.proj_size or mod.hidden_size, mod.hidden_size][:n_states]
        states = [rng.standard_normal((mod.num_layers * dirs, 3 if mod.batch_first else 2, s))
                  for s in sizes]
    arrays = [x, *states, *[p.detach().numpy().copy() for p in mod.parameters()]]

    def forward(*arrs, grad=False):
        ts = [ng.tensor(a, requires_grad=grad) for a in arrs]
        hx = tuple(ts[1:1 + n_states]) if n_states == 2 else ts[1]
        return ts, _functional(mod, names, ts[0], hx, ts[1 + n_states:])

    def flat_outputs(*arrs):
        with ng.no_grad():
            return np.concatenate([o.numpy().ravel() for o in forward(*arrs)[1]])

    ts, outs = forward(*arrays, grad=True)
    weights = np.random.default_rng(3).standard_normal(sum(o.numel() for o in outs))
    pieces = np.split(weights, np.cumsum([o.numel() for o in outs])[:-1])
    sum((o * ng.tensor(w.reshape(tuple(o.shape)))).sum() for o, w in zip(outs, pieces)).backward()
    assert len(ts) == 1 + n_states + len(names)
    for k, t in enumerate(ts):
        expected = finite_difference(flat_outputs, arrays, k, weights)
        assert np.abs(expected).max() > 0
        assert_close(t.grad, expected, rtol=1e-6, atol=1e-8, msg=f"input {k}")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_double_backward(kind):
    ng.manual_seed(3)
    mod = getattr(nn, kind)(2, 2, bidirectional=True).double()
    names = list(mod._parameters)
    x = ng.randn(3, 1, 2, dtype=ng.float64, requires_grad=True)
    w = ng.randn(*mod.weight_hh_l0.shape, dtype=ng.float64, requires_grad=True)

    def fn(x, w):
        params = [w if n == "weight_hh_l0" else getattr(mod, n) for n in names]
        outs = _functional(mod, names, x, None, params)
        return ng.tanh(outs[0]).sum() + outs[1].pow(2).sum()

    assert gradgradcheck(fn, (x, w))


# ---- a small language model trained next to PyTorch --------------------------------------


def _language_model(m, vocab=11, emb=6, hidden=8):
    class LM(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = m.nn.Embedding(vocab, emb)
            self.lstm = m.nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
            self.head = m.nn.Linear(hidden, vocab)

        def forward(self, tokens, state=None):
            out, state = self.lstm(self.embed(tokens), state)
            return self.head(out), state

    return LM()


@requires_torch
def test_lstm_language_model_trains_like_pytorch():
    for m in (ng, torch):
        m.manual_seed(0)
    ours, theirs = _language_model(ng), _language_model(torch)
    for k, v in ours.state_dict().items():  # the same seed gave the same initial weights
        if not k.startswith("embed"):  # (normal draws may differ in the last bit)
            assert np.array_equal(v.numpy(), theirs.state_dict()[k].numpy()), k
    _load_into_torch(ours, theirs)
    tokens = np.random.default_rng(0).integers(0, 11, (4, 9))
    losses = []
    for m, model in ((ng, ours), (torch, theirs)):
        opt = m.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        inp, target = m.tensor(tokens[:, :-1]), m.tensor(tokens[:, 1:])
        run = []
        state = None
        for _ in range(6):
            opt.zero_grad()
            logits, state = model(inp, state)
            state = tuple(s.detach() for s in state)  # truncated backpropagation through time
            loss = m.nn.functional.cross_entropy(logits.reshape(-1, 11), target.reshape(-1))
            loss.backward()
            m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=2e-5)
    assert losses[0][-1] < losses[0][0]
    for k, v in ours.state_dict().items():
        assert_close(v, theirs.state_dict()[k], rtol=1e-4, atol=1e-5, msg=k)


# ---- errors --------------------------------------------------------------------------------

ERRORS = [
    "m.nn.LSTM(10, 20)(m.randn(5, 3, 7))",
    "m.nn.GRU(10, 20)(m.randn(5, 7))",
    "m.nn.RNN(10, 20, batch_first=True)(m.randn(5, 3, 7))",
    "m.nn.LSTM(10, 20, 2)(m.randn(5, 3, 10), (m.zeros(2, 4, 20), m.zeros(2, 3, 20)))",
    "m.nn.LSTM(10, 20, 2)(m.randn(5, 3, 10), (m.zeros(2, 3, 20), m.zeros(2, 3, 21)))",
    "m.nn.LSTM(10, 20, 2)(m.randn(5, 3, 10), (m.zeros(2, 3, 20), m.zeros(3, 20)))",
    "m.nn.LSTM(10, 20, 2)(m.randn(5, 10), (m.zeros(2, 3, 20), m.zeros(3, 20)))",
    "m.nn.LSTM(10, 20, 2)(m.randn(5, 10), (m.zeros(2, 21), m.zeros(2, 20)))",
    "m.nn.LSTM(10, 20, 2)(m.randn(5, 3, 10), m.zeros(2, 3, 20))",
    "m.nn.LSTM(10, 20, proj_size=4)(m.randn(5, 3, 10), (m.zeros(1, 3, 20), m.zeros(1, 3, 20)))",
    "m.nn.LSTM(10, 20)(m.randn(2, 5, 3, 10))",
    "m.nn.LSTM(10, 20)(m.randn(5, 3, 10, dtype=m.float64))",
    "m.nn.RNN(10, 20)(m.randn(5, 3, 10), m.zeros(1, 3, 20, dtype=m.float64))",
    "m.nn.GRU(10, 20)(m.randn(5, 3, 10), m.zeros(1, 3, 20, dtype=m.float64))",
    "m.nn.GRU(10, 20)(m.randint(0, 3, (5, 3, 10)))",
    "m.nn.GRU(10, 20)(m.randn(5, 3, 10), m.zeros(1, 4, 20))",
    "m.nn.GRU(10, 20, bidirectional=True)(m.randn(5, 3, 10), m.zeros(1, 3, 20))",
    "m.nn.GRU(10, 20)(m.randn(5, 3, 10), m.zeros(4, 20))",
    "m.nn.GRU(10, 20)(m.randn(5, 10), m.zeros(1, 1, 20))",
    "m.nn.GRU(10, 20)(m.randn(5))",
    "m.nn.RNN(10, 20)(m.randn(5))",
    "m.nn.RNN(10, 20)(m.randn(0, 3, 10))",
    "m.nn.RNNCell(10, 20)(m.randn(3, 7))",
    "m.nn.RNNCell(10, 20)(m.randn(3, 10), m.zeros(4, 20))",
    "m.nn.RNNCell(10, 20)(m.randn(3, 10), m.zeros(3, 21))",
    "m.nn.RNNCell(10, 20)(m.randn(10), m.zeros(3, 20))",
    "m.nn.RNNCell(10, 20)(m.randn(10), m.zeros(1, 20))",
    "m.nn.RNNCell(10, 20)(m.randn(3, 10), m.zeros(20))",
    "m.nn.RNNCell(10, 20)(m.randn(20, 10), m.zeros(20))",
    "m.nn.RNNCell(10, 20)(m.randn(2, 3, 10))",
    "m.nn.RNNCell(10, 20)(m.randn(3, 10), m.zeros(1, 3, 20))",
    "m.nn.RNNCell(10, 20)(m.randn(3, 10), m.zeros(3, 20, dtype=m.float64))",
    "m.nn.RNNCell(10, 20, nonlinearity='gelu')(m.randn(3, 10))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 7))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 10), (m.zeros(4, 20), m.zeros(3, 20)))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 10), (m.zeros(3, 20), m.zeros(3, 21)))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 10), (m.zeros(3, 20), m.zeros(4, 20)))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 10), (m.zeros(3, 20),))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 10), m.zeros(2, 3, 20))",
    "m.nn.LSTMCell(10, 20)(m.randn(3, 10), (m.zeros(3, 20), m.zeros(1, 3, 20)))",
    "m.nn.LSTMCell(10, 20)(m.randn(2, 3, 10))",
    "m.nn.GRUCell(10, 20)(m.randn(3, 7))",
    "m.nn.GRUCell(10, 20)(m.randn(3, 10), m.zeros(4, 20))",
    "m.nn.GRUCell(10, 20)(m.randn(3, 10), m.zeros(3, 21))",
    "m.nn.GRUCell(10, 20)(m.randn(3, 10, dtype=m.float64))",
    "m.nn.RNN(10, 20, nonlinearity='gelu')",
    "m.nn.RNN(10, 20, proj_size=2)",
    "m.nn.GRU(10, 20, proj_size=0)",
    "m.nn.LSTM(10, 20, proj_size=20)",
    "m.nn.LSTM(10, 20, proj_size=-1)",
    "m.nn.LSTM(10, 20, dropout=1.5)",
    "m.nn.LSTM(10, 20, dropout=True)",
    "m.nn.LSTM(10, 20, dropout='0.1')",
    "m.nn.LSTM(10, 0)",
    "m.nn.LSTM(0, 10)",
    "m.nn.LSTM(10.0, 2)",
    "m.nn.LSTM(10, 2.0)",
    "m.nn.LSTM(10, 2, num_layers=0)",
    "m.nn.LSTM(10, 2, bias=1)",
    "m.nn.GRU(10, 2, batch_first=None)",
]


def _outcome(code, m):
    try:
        eval(code, {"m": m})
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)
    return None


@requires_torch
@pytest.mark.parametrize("code", ERRORS)
def test_errors_match_pytorch(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _outcome(code, torch)
        ours = _outcome(code, ng)
    assert theirs is not None, "PyTorch accepts this: not an error case"
    assert ours == theirs


def test_packed_sequence_is_refused_clearly():
    with pytest.raises(TypeError, match="PackedSequence"):
        nn.LSTM(2, 3)((ng.randn(4, 2), ng.tensor([2, 2])))


# ---- the LSTM layer node (kernels in numgrad.kernels.cpu.rnn) -------------------------------


def _lstm_grads(mod, x, hx, weights):
    """Outputs, states and the gradients of the input, states and parameters."""
    mod.zero_grad()
    ins = [t.detach().requires_grad_() for t in (x, *hx)]
    out, (h, c) = mod(ins[0], tuple(ins[1:]))
    loss = sum((o * w).sum() for o, w in zip((out, h, c), weights))
    loss.backward()
    return [t.detach().numpy().copy() for t in (out, h, c)] + \
        [t.grad.numpy().copy() for t in ins] + [p.grad.numpy().copy() for p in mod.parameters()]


@pytest.mark.parametrize("batch_first,bidirectional,bias", [
    (True, False, True), (False, True, True), (True, True, False)])
def test_lstm_without_blas_calls_in_kernels_matches(monkeypatch, batch_first, bidirectional,
                                                    bias):
    """Where BLAS cannot be called from compiled code, the layer runs as a Python loop over
    the steps (NumPy's products, one kernel per step): the same numbers (float64)."""
    from numgrad.kernels.cpu import _blas
    ng.manual_seed(0)
    mod = nn.LSTM(5, 6, 2, bias=bias, batch_first=batch_first,
                  bidirectional=bidirectional).double()
    rng = np.random.default_rng(0)
    shape = (3, 4, 5) if batch_first else (4, 3, 5)
    dirs = 2 if bidirectional else 1
    x = ng.tensor(rng.standard_normal(shape))
    hx = [ng.tensor(rng.standard_normal((2 * dirs, 3, 6))) for _ in range(2)]
    weights = [ng.tensor(rng.standard_normal(s)) for s in
               (shape[:2] + (6 * dirs,), (2 * dirs, 3, 6), (2 * dirs, 3, 6))]
    fused = _lstm_grads(mod, x, hx, weights)
    monkeypatch.setattr(_blas, "AVAILABLE", False)
    looped = _lstm_grads(mod, x, hx, weights)
    assert len(fused) == len(looped) == 6 + len(list(mod.parameters()))
    for k, (a, b) in enumerate(zip(fused, looped)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13, err_msg=str(k))


def test_lstm_backward_twice_with_retain_graph():
    """The saved activations survive a backward that retains the graph."""
    ng.manual_seed(0)
    mod = nn.LSTM(3, 4, 2, batch_first=True)
    x = ng.randn(2, 5, 3, requires_grad=True)
    out, (h, c) = mod(x)
    loss = (out * out).sum() + h.sum() + (c * 2).sum()
    loss.backward(retain_graph=True)
    first = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in mod.parameters()]
    loss.backward()
    second = [x.grad.numpy()] + [p.grad.numpy() for p in mod.parameters()]
    for a, b in zip(first, second):
        np.testing.assert_allclose(b, 2 * a, rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        loss.backward()


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_strided_input_and_states_frozen_weight_match_pytorch(dtype):
    """Transposed input and states (copied for the kernels), a frozen weight (no gradient
    asked), and the output under no_grad equal to the recorded one."""
    tol = F32 if dtype == "float32" else F64
    ng.manual_seed(0)
    ours = nn.LSTM(5, 7, 2, bidirectional=True).to(getattr(ng, dtype))
    theirs = torch.nn.LSTM(5, 7, 2, bidirectional=True).to(getattr(torch, dtype))
    _load_into_torch(ours, theirs)
    for mod in (ours, theirs):
        mod.weight_ih_l0.requires_grad_(False)
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((3, 4, 5)).astype(dtype)
    ha, ca = (rng.standard_normal((7, 3, 4)).astype(dtype) for _ in range(2))
    results = []
    for m, mod in ((ng, ours), (torch, theirs)):
        x, h, c = (m.tensor(a, requires_grad=True) for a in (xa, ha, ca))
        xv, hv, cv = x.transpose(0, 1), h.permute(2, 1, 0), c.permute(2, 1, 0)
        out, (hn, cn) = mod(xv, (hv, cv))
        (out.sin().sum() + hn.pow(2).sum() + cn[1].sum()).backward()
        results.append([out, hn, cn, x.grad, h.grad, c.grad] +
                       [p.grad for p in mod.parameters() if p.requires_grad])
        if m is ng:
            assert ours.weight_ih_l0.grad is None
            with ng.no_grad():
                again, _ = mod(xv, (hv, cv))
            assert np.array_equal(again.numpy(), out.detach().numpy())
    assert len(results[0]) == len(results[1]) == 6 + 15
    for k, (a, t) in enumerate(zip(*results)):
        assert_close(a, t, **tol, msg=str(k))


@requires_torch
@pytest.mark.parametrize("frozen", ["weight_hh_l0", "weight_ih_l0"])
def test_lstm_batch_first_one_weight_frozen_matches_pytorch(frozen):
    """Batch-first, one weight of the layer frozen: the other weight's gradient (computed
    alone, not with its sibling in one product) and the rest equal PyTorch's."""
    ng.manual_seed(0)
    ours = nn.LSTM(5, 7, batch_first=True)
    theirs = torch.nn.LSTM(5, 7, batch_first=True)
    _load_into_torch(ours, theirs)
    for mod in (ours, theirs):
        getattr(mod, frozen).requires_grad_(False)
    xa = np.random.default_rng(1).standard_normal((3, 6, 5)).astype(np.float32)
    results = []
    for m, mod in ((ng, ours), (torch, theirs)):
        x = m.tensor(xa, requires_grad=True)
        out, (hn, cn) = mod(x)
        (out.sin().sum() + hn.pow(2).sum() + cn.sum()).backward()
        results.append([out, x.grad] + [p.grad for p in mod.parameters() if p.requires_grad])
    assert len(results[0]) == 5
    for k, (a, t) in enumerate(zip(*results)):
        assert_close(a, t, **F32, msg=str(k))


def test_lstm_layer_node_name():
    """One node per layer and direction, named as PyTorch's CPU LSTM layer's."""
    out, (h, c) = nn.LSTM(3, 4, 2)(ng.randn(5, 2, 3))
    assert type(out.grad_fn).__name__ == "MkldnnRnnLayerBackward0"
    assert repr(out.grad_fn).startswith("<MkldnnRnnLayerBackward0 object at 0x")
    assert type(h.grad_fn).__name__ == "StackBackward0"
    layers = {fn for fn, _ in h.grad_fn.next_functions}
    assert len(layers) == 2 and all(type(fn).__name__ == "MkldnnRnnLayerBackward0"
                                    for fn in layers)


def test_long_sequence_backward_reaches_every_step():
    """The projected steps come back as one gradient (no per-step copy of the sequence)."""
    ng.manual_seed(0)
    m = nn.GRU(3, 4)
    x = ng.randn(300, 2, 3, requires_grad=True)
    out, h = m(x)
    out[0].sum().backward(retain_graph=True)
    g = x.grad.numpy()
    assert np.abs(g[0]).sum() > 0 and np.abs(g[1:]).sum() == 0
    x.grad = None
    h.sum().backward()
    assert np.abs(x.grad.numpy()[0]).sum() > 0 and np.abs(x.grad.numpy()[-1]).sum() > 0
