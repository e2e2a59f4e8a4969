"""Whole programs under ``import numgrad as torch`` and under PyTorch, compared.

* The character-level GPT of ``numgrad/examples/gpt.py`` (embeddings, causal self-attention
  through ``scaled_dot_product_attention`` and through ``tril`` + ``masked_fill`` +
  ``softmax``, LayerNorm, GELU, AdamW with parameter groups, gradient clipping, top-k
  sampling with ``multinomial``): the example's own source runs twice, once as written and
  once with its import changed to ``import torch``.
* A small LSTM language model written here, built for either library by ``lstm_lm(m)``.

Losses, gradients, parameters and the sampled tokens must agree for the same seed.
"""

import numpy as np
import pytest
from conftest import requires_torch, to_numpy, torch

import numgrad
from numgrad.examples import gpt as gpt_example

IMPORT_LINE = "import numgrad as torch\n"


def example_under(library):
    """The namespace of the GPT example's source run with ``library`` as ``torch``."""
    path = gpt_example.__file__
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    assert source.count(IMPORT_LINE) == 1
    if library == "torch":
        source = source.replace(IMPORT_LINE, "import torch\n")
    ns = {"__name__": f"gpt_under_{library}", "__file__": path}
    exec(compile(source, path, "exec"), ns)  # noqa: S102  (our own example's source)
    return ns


def run_gpt(library, attention, steps=4, sample_chars=40, seed=7):
    ns = example_under(library)
    m = ns["torch"]
    m.manual_seed(seed)
    with open(ns["TEXT"], encoding="utf-8") as fh:
        text = fh.read()
    codec = ns["CharCodec"](text)
    data = m.tensor(codec.encode(text), dtype=m.long)
    cfg = ns["Config"](len(codec.chars), block_size=16, n_embd=32, n_head=4, n_layer=2,
                       attention=attention)
    model = ns["GPT"](cfg)
    losses = ns["train"](model, data, steps, batch_size=8, lr=3e-3)
    grads = {n: to_numpy(p.grad) for n, p in model.named_parameters()}
    params = {n: to_numpy(p) for n, p in model.named_parameters()}
    m.manual_seed(seed + 1)
    text_out = ns["sample"](model, codec, "The ", sample_chars, top_k=5)
    return losses, grads, params, text_out


@requires_torch
@pytest.mark.parametrize("attention", ["sdpa", "manual"])
def test_char_gpt_matches_pytorch(attention):
    ours = run_gpt("numgrad", attention)
    theirs = run_gpt("torch", attention)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5)
    assert ours[1].keys() == theirs[1].keys()
    for name in ours[1]:
        np.testing.assert_allclose(ours[1][name], theirs[1][name], rtol=1e-3, atol=2e-6,
                                   err_msg=name)
        # Adam turns rounding noise into lr-sized steps where a gradient is ~0 in exact
        # arithmetic (the key bias: softmax ignores it), hence the absolute tolerance
        np.testing.assert_allclose(ours[2][name], theirs[2][name], rtol=1e-4, atol=2e-5,
                                   err_msg=name)
    assert ours[3] == theirs[3]


def test_char_gpt_learns_and_both_attentions_agree():
    """Without PyTorch: training lowers the loss, and the SDPA and the masked-softmax
    attention give the same model (same seed, same batches)."""
    sdpa = run_gpt("numgrad", "sdpa", steps=30, sample_chars=10)
    manual = run_gpt("numgrad", "manual", steps=30, sample_chars=10)
    assert sdpa[0][-1] < sdpa[0][0] - 0.5
    np.testing.assert_allclose(sdpa[0], manual[0], rtol=1e-4)
    assert len(sdpa[3]) == len("The ") + 10


def test_gpt_example_main_runs(capsys):
    losses = gpt_example.main(["--steps", "3", "--chars", "20", "--quiet"])
    assert len(losses) == 3
    out = capsys.readouterr().out
    assert "--- sample ---" in out and "parameters" in out


# --- an LSTM language model --------------------------------------------------------------


def lstm_lm(m, vocab, embd=16, hidden=32, layers=2):
    nn = m.nn

    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, embd)
            self.rnn = nn.LSTM(embd, hidden, num_layers=layers, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, idx, state=None):
            h, state = self.rnn(self.emb(idx), state)
            return self.out(h), state

    return LSTMLM()


def run_lstm(m, steps=5, seed=3):
    text = "the river road ran down to the harbour and the lanterns sang"
    chars = sorted(set(text))
    ids = [chars.index(c) for c in text]
    m.manual_seed(seed)
    model = lstm_lm(m, len(chars))
    opt = m.optim.Adam(model.parameters(), lr=1e-2)
    data = m.tensor(ids, dtype=m.long)
    losses = []
    for _ in range(steps):
        starts = m.randint(0, len(ids) - 9, (4,))
        x = m.stack([data[s:s + 8] for s in starts])
        y = m.stack([data[s + 1:s + 9] for s in starts])
        logits, _ = model(x)
        loss = m.nn.functional.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        m.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        losses.append(loss.item())
    grads = {n: to_numpy(p.grad) for n, p in model.named_parameters()}
    # sampling, one character at a time, carrying the LSTM state
    m.manual_seed(seed + 1)
    out, state, token = [], None, m.tensor([[ids[0]]])
    with m.no_grad():
        for _ in range(30):
            logits, state = model(token, state)
            probs = m.softmax(logits[:, -1, :], dim=-1)
            token = m.multinomial(probs, num_samples=1)
            out.append(int(token.item()))
    return losses, grads, out


@requires_torch
def test_lstm_language_model_matches_pytorch():
    ours = run_lstm(numgrad)
    theirs = run_lstm(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5)
    for name in theirs[1]:
        np.testing.assert_allclose(ours[1][name], theirs[1][name], rtol=1e-3, atol=1e-6,
                                   err_msg=name)
    assert ours[2] == theirs[2]
