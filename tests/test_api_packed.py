"""nn.utils.rnn (PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
pack_sequence, unpack/unpad) and RNN/LSTM/GRU on packed input against PyTorch: values,
batch sizes and orders, printing, errors, outputs, final states and gradients."""

import numpy as np
import pytest
from conftest import assert_close, raised

import numgrad as ng

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((5, 3, 2))


@pytest.mark.parametrize("lengths,enforce", [([5, 3, 2], True), ([3, 5, 2], False),
                                             ([2, 5, 2], False), ([1, 1, 1], True)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_round_trip_matches_torch(lengths, enforce, batch_first):
    x = X.transpose(1, 0, 2) if batch_first else X
    got = []
    for L in (ng, torch):
        xt = L.tensor(x, requires_grad=True)
        p = L.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first,
                                                enforce_sorted=enforce)
        pad, ln = L.nn.utils.rnn.pad_packed_sequence(p, batch_first=batch_first,
                                                     padding_value=-1.0, total_length=6)
        (pad * L.arange(pad.numel(), dtype=L.float64).reshape(pad.shape)).sum().backward()
        got.append((p, pad, ln, xt.grad))
    (np_, npad, nln, ng_), (tp, tpad, tln, tg) = got
    assert p_fields(np_) == p_fields(tp)
    assert_close(np_.data, tp.data.detach())
    assert_close(npad, tpad.detach())
    assert nln.tolist() == tln.tolist() and str(nln.dtype) == str(tln.dtype)
    assert_close(ng_, tg)


def p_fields(p):
    return (type(p).__name__, p._fields, p.batch_sizes.tolist(),
            None if p.sorted_indices is None else p.sorted_indices.tolist(),
            None if p.unsorted_indices is None else p.unsorted_indices.tolist())


def test_pad_sequence_pack_sequence_and_printing_match_torch():
    seqs = [np.arange(6.0).reshape(3, 2), np.ones((1, 2)), np.full((2, 2), 2.0)]
    for kw in ({}, {"batch_first": True, "padding_value": 9.0}, {"padding_side": "left"}):
        a = ng.nn.utils.rnn.pad_sequence([ng.tensor(s) for s in seqs], **kw)
        b = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], **kw)
        assert_close(a, b)
    a = ng.nn.utils.rnn.pack_sequence([ng.tensor(s) for s in seqs], enforce_sorted=False)
    b = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    assert repr(a) == repr(b)
    assert p_fields(a) == p_fields(b)
    for u, v in zip(ng.nn.utils.rnn.unpack_sequence(a), torch.nn.utils.rnn.unpack_sequence(b)):
        assert_close(u, v)
    p = ng.nn.utils.rnn.PackedSequence(ng.ones(3), ng.tensor([2, 1]))
    q = torch.nn.utils.rnn.PackedSequence(torch.ones(3), torch.tensor([2, 1]))
    assert repr(p) == repr(q)
    data, sizes, *_ = p
    assert data is p.data and sizes is p.batch_sizes


ERRORS = [
    lambda L, R, x: R.pack_padded_sequence(x, [4, 5, 3]),
    lambda L, R, x: R.pack_padded_sequence(x, [4, 2, 0], enforce_sorted=False),
    lambda L, R, x: R.pack_padded_sequence(x, [4, 2]),
    lambda L, R, x: R.pack_padded_sequence(x, L.tensor([[4, 2, 1]])),
    lambda L, R, x: R.pad_packed_sequence(R.pack_padded_sequence(x, [5, 2, 1]), total_length=3),
    lambda L, R, x: R.pack_sequence([L.ones(2), L.ones(3)]),
    lambda L, R, x: R.pad_sequence([]),
    lambda L, R, x: R.pad_sequence([L.ones(2), L.ones(3)], padding_side="middle"),
    lambda L, R, x: R.pack_padded_sequence(L.ones(0, 3, 2), [1, 1, 1]),
    lambda L, R, x: R.pad_sequence([L.ones(2, 3), L.ones(3, 2)]),
    lambda L, R, x: L.nn.GRU(3, 3)(R.pack_padded_sequence(x, [4, 2, 1])),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_packing_errors_match_torch(k):
    n = raised(ERRORS[k], ng, ng.nn.utils.rnn, ng.tensor(X))
    t = raised(ERRORS[k], torch, torch.nn.utils.rnn, torch.tensor(X))
    assert t is not None and n == t


def test_length_past_the_padding_is_refused():
    # PyTorch reads past the input's memory here; numgrad raises instead
    with pytest.raises(RuntimeError, match="larger than the padded sequence length"):
        ng.nn.utils.rnn.pack_padded_sequence(ng.tensor(X), [6, 2, 1])


@pytest.mark.parametrize("cls,kw", [
    ("LSTM", {}), ("GRU", {"batch_first": True}), ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}), ("GRU", {"bidirectional": True}),
    ("LSTM", {"proj_size": 2, "batch_first": True}),
])
@pytest.mark.parametrize("with_hx", [False, True])
def test_recurrent_layers_on_packed_input_match_torch(cls, kw, with_hx):
    lengths = [3, 5, 2]
    bf = kw.get("batch_first", False)
    x = X.transpose(1, 0, 2) if bf else X
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(2, 4, **kw).double()
    nm = getattr(ng.nn, cls)(2, 4, **kw).double()
    nm.load_state_dict({k: ng.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    rng = np.random.default_rng(1)
    h = rng.standard_normal((layers, 3, kw.get("proj_size") or 4))
    c = rng.standard_normal((layers, 3, 4))
    res = []
    for L, m in ((ng, nm), (torch, tm)):
        xt = L.tensor(x, requires_grad=True)
        hx = None
        if with_hx:
            hx = (L.tensor(h), L.tensor(c)) if cls == "LSTM" else L.tensor(h)
        p = L.nn.utils.rnn.pack_padded_sequence(xt, L.tensor(lengths), batch_first=bf,
                                                enforce_sorted=False)
        out, state = m(p, hx)
        assert type(out).__name__ == "PackedSequence"
        hn = state[0] if cls == "LSTM" else state
        loss = (out.data * out.data).sum() + (hn * 3).sum()
        if cls == "LSTM":
            loss = loss + state[1].sum()
        loss.backward()
        res.append((out.data.detach(), hn.detach(), xt.grad,
                    [q.grad for q in m.parameters()], p_fields(out)))
    (od, oh, og, ow, of), (td, th, tg, tw, tf) = res
    assert of == tf
    assert_close(od, td)
    assert_close(oh, th)
    assert_close(og, tg)
    for a, b in zip(ow, tw):
        assert_close(a, b)
