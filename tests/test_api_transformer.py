"""``nn.Transformer``, ``nn.TransformerDecoder`` and ``nn.TransformerDecoderLayer`` against
PyTorch: initial weights for one seed, reprs, state-dict keys, forward and backward with every
kind of mask (``batch_first``, ``norm_first``, string and callable activations, custom
encoder/decoder), errors, and a small transformer language model trained under both
libraries from the same seed."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, raised, requires_torch, to_numpy, torch

import numgrad as ng

D, H, FF = 16, 2, 24  # tiny: d_model, heads, feed-forward width


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _build(m, seed=0, **kw):
    m.manual_seed(seed)
    args = dict(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
                dim_feedforward=FF, dropout=0.0)
    args.update(kw)
    return _quiet(m.nn.Transformer, **args)


def _copy_weights(ours, theirs):
    ours.load_state_dict({k: ng.tensor(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})


def _inputs(m, batch_first=False, s=5, t=4, n=3, seed=1):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((n, s, D) if batch_first else (s, n, D))
    tgt = rng.standard_normal((n, t, D) if batch_first else (t, n, D))
    return (m.tensor(src, dtype=m.float32, requires_grad=True),
            m.tensor(tgt, dtype=m.float32, requires_grad=True))


def _masks(m, s=5, t=4, n=3):
    """Masks of each kind, built the same way under numgrad and torch (``m``)."""
    pad_src = np.zeros((n, s), bool)
    pad_src[0, -2:] = True
    pad_tgt = np.zeros((n, t), bool)
    pad_tgt[1, -1] = True
    mem = np.zeros((t, s), np.float32)
    mem[:, 0] = -1.5
    mem[2, 3] = float("-inf")
    return {"tgt_mask": m.nn.Transformer.generate_square_subsequent_mask(t),
            "memory_mask": m.tensor(mem),
            "src_key_padding_mask": m.tensor(pad_src),
            "tgt_key_padding_mask": m.tensor(pad_tgt),
            "memory_key_padding_mask": m.tensor(pad_src)}


@requires_torch
@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "activation": "gelu"},
                                {"bias": False, "batch_first": True}],
                         ids=["default", "norm_first_gelu", "no_bias_batch_first"])
def test_initial_weights_repr_and_keys_match_pytorch(kw):
    ours, theirs = _build(ng, **kw), _build(torch, **kw)
    assert repr(ours) == repr(theirs)
    ours_p, theirs_p = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(ours_p) == list(theirs_p)
    for name, p in theirs_p.items():
        np.testing.assert_array_equal(to_numpy(ours_p[name]), to_numpy(p), err_msg=name)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # the next draw after construction is PyTorch's too
    assert_close(ng.rand(3), torch.rand(3), rtol=0, atol=0)


@requires_torch
def test_nested_tensor_warning_as_pytorch():
    def warns(m):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            _build(m)
        return [str(w.message) for w in got]
    assert warns(ng) == warns(torch)


CASES = [
    ("plain", {}, ()),
    ("all_masks", {}, ("tgt_mask", "memory_mask", "src_key_padding_mask",
                       "tgt_key_padding_mask", "memory_key_padding_mask")),
    ("causal_flag", {}, ("tgt_mask", "tgt_is_causal")),
    ("batch_first_norm_first", {"batch_first": True, "norm_first": True},
     ("tgt_mask", "src_key_padding_mask", "memory_key_padding_mask")),
    ("gelu_callable", {"activation": "callable"}, ("tgt_mask",)),
]


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward_backward_match_pytorch(case):
    _, kw, masks = case
    results = []
    for m in (torch, ng):
        args = dict(kw)
        if args.get("activation") == "callable":
            args["activation"] = m.nn.functional.gelu
        model = _build(m, seed=3, **args)
        if m is ng:
            _copy_weights(model, results[0][0])
        src, tgt = _inputs(m, kw.get("batch_first", False))
        mk = _masks(m)
        call = {k: mk[k] for k in masks if k in mk}
        if "tgt_is_causal" in masks:
            call["tgt_is_causal"] = True
        out = model(src, tgt, **call)
        w = m.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape), dtype=m.float32)
        (out * w).sum().backward()
        results.append((model, out, src.grad, tgt.grad))
    (tm, tout, tsrc, ttgt), (om, oout, osrc, otgt) = results
    assert type(oout.grad_fn).__name__ == type(tout.grad_fn).__name__
    assert_close(oout, tout, rtol=1e-4, atol=1e-5)
    assert_close(osrc, tsrc, rtol=1e-4, atol=1e-5)
    assert_close(otgt, ttgt, rtol=1e-4, atol=1e-5)
    ours_p = dict(om.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(ours_p[name].grad, p.grad, rtol=1e-4, atol=2e-5, msg=name)


@requires_torch
def test_decoder_alone_and_unbatched_match_pytorch():
    results = []
    for m in (torch, ng):
        m.manual_seed(5)
        layer = m.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation=m.nn.GELU())
        dec = m.nn.TransformerDecoder(layer, 2, norm=m.nn.LayerNorm(D))
        if m is ng:
            dec.load_state_dict({k: ng.tensor(v.numpy().copy())
                                 for k, v in results[0][0].state_dict().items()})
        mem, tgt = _inputs(m)
        mask = m.nn.Transformer.generate_square_subsequent_mask(4)
        out = dec(tgt, mem, tgt_mask=mask)
        out.pow(2).sum().backward()
        single = dec(tgt[:, 0], mem[:, 0], tgt_mask=mask)  # unbatched (T, E)
        results.append((dec, out, mem.grad, tgt.grad, single))
    assert repr(results[0][0]) == repr(results[1][0])
    for a, b in zip(results[1][1:], results[0][1:]):
        assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert_close(results[1][4], results[1][1][:, 0], rtol=1e-5, atol=1e-5)


@requires_torch
def test_custom_encoder_decoder_and_mask_helper():
    for m in (torch, ng):
        enc = m.nn.Identity()
        model = _build(m, custom_encoder=enc, num_decoder_layers=1)
        assert model.encoder is enc
        assert [n for n, _ in model.named_children()] == ["encoder", "decoder"]
    mask_ng = ng.nn.Transformer.generate_square_subsequent_mask(4, dtype=ng.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    assert mask_ng.dtype == ng.float64
    np.testing.assert_array_equal(to_numpy(mask_ng), to_numpy(mask_t))


def _error_cases(m):
    model = _build(m, num_encoder_layers=1, num_decoder_layers=1)
    src, tgt = _inputs(m)
    bsrc, btgt = _inputs(m, batch_first=True)
    return [
        lambda: model(src, tgt[:, :2]),                       # batch sizes differ
        lambda: model(src[..., :8], tgt),                     # feature size != d_model
        lambda: model(src, tgt, tgt_mask=m.zeros(3, 3)),      # mask of the wrong size
        lambda: model(src, tgt, memory_mask=m.zeros(4, 4)),
        lambda: model(src, tgt, tgt_key_padding_mask=m.zeros(3, 5, dtype=m.bool)),
        lambda: model(src, tgt, tgt_mask=m.zeros(4, 4, dtype=m.int64)),
        lambda: model(src, tgt, tgt_is_causal=True),          # the hint without its mask
        lambda: _build(m, batch_first=True)(bsrc, btgt[:2]),
        lambda: m.nn.Transformer(d_model=D, nhead=3),
        lambda: m.nn.TransformerDecoderLayer(D, H, activation="tanh"),
    ]


@requires_torch
def test_errors_match_pytorch():
    for ours, theirs in zip(_error_cases(ng), _error_cases(torch)):
        expected = raised(theirs)
        assert expected is not None
        assert raised(ours) == expected


def transformer_lm(m, vocab=11, steps=4, seed=0):
    """A small sequence-to-sequence language model with ``nn.Transformer`` (dropout on),
    trained with Adam on a copy task; returns the printed losses."""
    m.manual_seed(seed)

    class Seq2Seq(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = m.nn.Embedding(vocab, D)
            self.pos = m.nn.Parameter(m.randn(1, 8, D) * 0.1)
            self.core = m.nn.Transformer(D, H, 1, 1, FF, dropout=0.1, batch_first=True)
            self.head = m.nn.Linear(D, vocab)

        def forward(self, src, tgt):
            mask = m.nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
            x = self.emb(src) + self.pos[:, :src.size(1)]
            y = self.emb(tgt) + self.pos[:, :tgt.size(1)]
            pad = src == 0
            return self.head(self.core(x, y, tgt_mask=mask, src_key_padding_mask=pad,
                                       memory_key_padding_mask=pad))

    model = _quiet(Seq2Seq)
    opt = m.optim.Adam(model.parameters(), lr=3e-3)
    lines = []
    for step in range(steps):
        src = m.randint(1, vocab, (4, 7))
        src[:, -1] = 0
        out = model(src, src[:, :-1])
        loss = m.nn.functional.cross_entropy(out.reshape(-1, vocab), src[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        lines.append(f"step {step} loss {loss.item():.6f}")
    model.eval()
    with m.no_grad():
        logits = model(src[:1], src[:1, :-1])
    lines.append(" ".join(str(int(v)) for v in logits.argmax(-1)[0]))
    return lines


@requires_torch
def test_transformer_language_model_matches_pytorch():
    ours, theirs = transformer_lm(ng), transformer_lm(torch)
    for a, b in zip(ours[:-1], theirs[:-1]):
        assert abs(float(a.split()[-1]) - float(b.split()[-1])) < 1e-5, (a, b)
    assert ours[-1] == theirs[-1]
