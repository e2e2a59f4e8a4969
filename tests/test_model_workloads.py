"""The model workloads of the benchmarks (``benchmarks/workloads.py`` rows 8-12, the models in
``benchmarks/models.py``) at their reduced sizes: from the same initial weights, numgrad's eager
training steps give PyTorch's losses, and generation draws PyTorch's tokens; the compile
report prints a row, with the reason, for a compiled variant that runs eagerly."""

import os
import sys

import numpy as np
import pytest
from conftest import requires_torch

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCH)

import models  # noqa: E402
import workloads  # noqa: E402

STEPS = 3  # the first loss checks the initial weights, the next two the optimizer's updates


def _losses(name, lib, **kw):
    run = workloads.WORKLOADS[name](lib, small=True, **kw)
    return np.array([float(run().numpy()) for _ in range(STEPS)])


@requires_torch
@pytest.mark.parametrize("name", ["8_gpt_step_sdpa", "9_gpt_step_manual", "11_lstm_step"])
def test_training_step_losses_are_pytorchs(name):
    np.testing.assert_allclose(_losses(name, "numgrad"), _losses(name, "torch"), rtol=1e-5)


@requires_torch
def test_encoder_step_without_dropout_losses_are_pytorchs():
    np.testing.assert_allclose(_losses("12_encoder_step", "numgrad", dropout=0.0),
                               _losses("12_encoder_step", "torch", dropout=0.0), rtol=1e-5)


@requires_torch
def test_encoder_step_losses_are_pytorchs():
    """With dropout: MultiheadAttention with batch_first returns a transposed tensor, whose
    dropout mask PyTorch draws in memory order (``empty_like``), as numgrad does."""
    np.testing.assert_allclose(_losses("12_encoder_step", "numgrad"),
                               _losses("12_encoder_step", "torch"), rtol=1e-5)


@pytest.mark.parametrize("name", ["8_gpt_step_sdpa", "9_gpt_step_manual"])
def test_compiled_forward_form_replays_and_equals_eager(name):
    """The GPT compiled in its forward form (the model compiled; loss, backward, clipping and
    AdamW eager) replays and gives eager's losses bit for bit. Its verification replays the
    plans on shadow copies, which must read every buffer from those copies (a replay
    generated for plain calls keeps the plan's own buffers: run on the copies, it failed
    this check and the model ran eagerly)."""
    import warnings

    import numgrad
    eager = workloads.WORKLOADS[name]("numgrad", small=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = workloads.WORKLOADS[name]("numgrad", forward=numgrad.compile, small=True)
        got = [compiled().numpy().tobytes() for _ in range(6)]
    assert got == [eager().numpy().tobytes() for _ in range(6)]
    assert not [w for w in caught if "runs eagerly" in str(w.message)], \
        [str(w.message) for w in caught]


@requires_torch
def test_generation_draws_pytorchs_tokens():
    name = "10_gpt_generate_100"
    ours = workloads.WORKLOADS[name]("numgrad", small=True)
    theirs = workloads.WORKLOADS[name]("torch", small=True)
    a, b = ours().numpy(), theirs().numpy()
    block = workloads.GPT_SMALL["block_size"]
    assert a.shape == (1, 21) and a.shape[1] > block + 1  # the context was cropped
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours().numpy(), a)  # the generator is seeded at each call


@requires_torch
@pytest.mark.parametrize("make", [
    lambda m: models.gpt(m, **workloads.GPT_SMALL),
    lambda m: models.gpt(m, attention="manual", **workloads.GPT_SMALL),
    lambda m: models.char_lstm(m, embed=16, hidden=32),
    lambda m: models.encoder_classifier(m, d_model=32, nhead=2, dim_feedforward=64),
], ids=["gpt_sdpa", "gpt_manual", "lstm", "encoder"])
def test_initial_weights(make):
    """Built under the same seed, numgrad's weights are PyTorch's to float32 rounding (bit for
    bit on x86 PyTorch builds, whose float32 Box-Muller numgrad replays; other builds' may
    differ by a few ulp), and the workloads' PyTorch model starts from numgrad's exactly."""
    import torch

    import numgrad
    weights = {}
    for m in (numgrad, torch):
        m.manual_seed(0)
        weights[m] = {k: np.array(v.detach().numpy()) for k, v in make(m).state_dict().items()}
    assert list(weights[numgrad]) == list(weights[torch])
    for k, ours in weights[numgrad].items():
        np.testing.assert_allclose(ours, weights[torch][k], rtol=1e-5, atol=1e-6, err_msg=k)
    copied = workloads._model(torch, make).state_dict()
    for k, ours in weights[numgrad].items():
        np.testing.assert_array_equal(copied[k].detach().numpy(), ours, err_msg=k)


def test_gpt_ties_its_head_to_the_token_embedding():
    import numgrad
    model = models.gpt(numgrad, **workloads.GPT_SMALL)
    assert model.lm_head.weight is model.wte.weight
    opt = models.gpt_optimizer(numgrad, model)
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"])
    assert all(p.dim() < 2 for p in no_decay["params"])
    n = len(list(model.parameters()))  # the tied weight counted once
    assert len(decay["params"]) + len(no_decay["params"]) == n


def test_compile_report_notes_variants_that_run_eagerly_or_raise(monkeypatch, capsys):
    """A numgrad.compile variant that warns it runs eagerly is timed, with its reason in the
    row's notes, also when it gives up only while timed; one that raises is left out of the
    row ("error") with the exception; the other variants still run."""
    import warnings

    import compile_report

    import numgrad

    def late_warning():
        calls = [0]

        def run():
            calls[0] += 1
            if calls[0] == 3:  # build's extra call is the first: this one is timed
                warnings.warn("numgrad.compile: step runs eagerly (its replay did not match "
                              "the eager run)", UserWarning, stacklevel=2)
        return run

    def build(name, lib, small=False):
        if lib == "numgrad.compile fwd":
            raise RuntimeError("a made-up failure")
        if lib == "numgrad.compile":
            return late_warning()
        return lambda: None

    monkeypatch.setattr(compile_report, "build", build)
    monkeypatch.setattr(compile_report, "WORKLOADS", {"99_fake": None})
    threads = numgrad.get_num_threads()
    try:
        compile_report.main(["--rounds", "2", "--no-first-calls", "--threads", str(threads)])
    finally:
        numgrad.set_num_threads(threads)
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("| 99_fake"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] != "error" and cells[3] == "error"
    assert "numgrad.compile: step runs eagerly (its replay did not match the eager run)" \
        in cells[-1]
    assert "numgrad.compile fwd: error, RuntimeError: a made-up failure" in cells[-1]


def test_compiled_generation_replays_and_draws_eagers_tokens():
    """Generation compiled in the forward form with ``fullgraph=True`` (any eager fallback
    raises): the plans of the context lengths fitted as one family (the first token's
    length-1 causal mask is all zero offsets, which a trace once took for values computed
    outside it); every run draws eager's tokens, the third replaying every length."""
    import numgrad
    name = "10_gpt_generate_100"
    eager = workloads.WORKLOADS[name]("numgrad", small=True)().numpy()
    compiled = workloads.WORKLOADS[name](
        "numgrad", forward=lambda f: numgrad.compile(f, fullgraph=True), small=True)
    for _ in range(3):
        np.testing.assert_array_equal(compiled().numpy(), eager)


@requires_torch
def test_gpt2_build_draws_pytorchs_weights():
    """The build workload (row 13) at its reduced sizes: every initial weight is PyTorch's for
    the seed (float32 normals bit for bit where PyTorch's build is x86), and the generator is
    left where PyTorch leaves it."""
    import numgrad
    torch = pytest.importorskip("torch")
    exact32 = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")  # x86 builds
    ours = workloads.WORKLOADS["13_gpt2_build_124M"]("numgrad", small=True)().state_dict()
    theirs = workloads.WORKLOADS["13_gpt2_build_124M"]("torch", small=True)().state_dict()
    assert list(ours) == list(theirs)
    for k, v in theirs.items():
        if exact32:
            np.testing.assert_array_equal(ours[k].numpy(), v.numpy(), err_msg=k)
        else:
            np.testing.assert_allclose(ours[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(numgrad.get_rng_state().numpy(),
                                  torch.get_rng_state().numpy())
