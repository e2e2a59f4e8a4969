"""``numgrad.amp`` (autocast, GradScaler) and ``numgrad.backends`` against PyTorch."""

import warnings

import numpy as np
import pytest
from conftest import requires_torch, to_numpy, torch

import numgrad


def scaled_training(m, device, steps=6, poison=(2,), **scaler_args):
    """SGD with a GradScaler; at the steps in ``poison`` one gradient is made infinite."""
    m.manual_seed(0)
    model = m.nn.Linear(3, 2)
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = m.amp.GradScaler(device, **scaler_args)
    x = m.randn(4, 3)
    scales, losses = [], []
    for step in range(steps):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        if step in poison:
            with m.no_grad():
                model.weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        losses.append(loss.item())
    return scales, losses, [to_numpy(p) for p in model.parameters()], scaler.state_dict()


@requires_torch
@pytest.mark.parametrize("args", [{}, {"init_scale": 8.0, "growth_interval": 2},
                                  {"enabled": False}])
def test_grad_scaler_training_matches_pytorch(args):
    ours = scaled_training(numgrad, "cpu", **args)
    theirs = scaled_training(torch, "cpu", **args)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert ours[3] == {k: (int(v) if k == "_growth_tracker" else v)
                       for k, v in theirs[3].items()}


def test_grad_scaler_skips_a_step_with_an_infinite_gradient_and_backs_off():
    scales, _, params, _ = scaled_training(numgrad, "cpu", steps=3, poison=(0, 1, 2),
                                           init_scale=16.0)
    assert scales == [8.0, 4.0, 2.0]
    numgrad.manual_seed(0)
    untouched = numgrad.nn.Linear(3, 2)
    for a, b in zip(params, untouched.parameters()):
        np.testing.assert_array_equal(a, to_numpy(b))


def _errors(m):
    out = []
    w = m.nn.Parameter(m.tensor([1.0, 2.0]))
    opt = m.optim.SGD([w], lr=0.1)
    s = m.amp.GradScaler("cpu")
    for call in (lambda: s.update(), lambda: s.unscale_(opt), lambda: s.step(opt)):
        try:
            call()
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    s.scale((w * w).sum()).backward()
    s.unscale_(opt)
    for call in (lambda: s.unscale_(opt), lambda: s.scale(3.0)):
        try:
            call()
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    s.step(opt)
    try:
        s.step(opt)
    except Exception as e:  # noqa: BLE001
        out.append((type(e).__name__, str(e)))
    return out


@requires_torch
def test_grad_scaler_errors_match_pytorch():
    ours, theirs = _errors(numgrad), _errors(torch)
    assert len(ours) == 6
    assert ours == theirs


def _warned(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category.__name__, str(w.message)) for w in caught]


@requires_torch
def test_cuda_amp_spellings_warn_and_disable_as_pytorch_without_a_gpu():
    if torch.cuda.is_available() or numgrad.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    for make in (lambda m: m.cuda.amp.GradScaler(), lambda m: m.amp.GradScaler()):
        (ours, ow) = _warned(lambda make=make: make(numgrad))
        (theirs, tw) = _warned(lambda make=make: make(torch))
        assert ow == tw
        assert ours.is_enabled() is theirs.is_enabled() is False
        assert ours.get_scale() == theirs.get_scale() == 1.0
        assert ours.state_dict() == theirs.state_dict() == {}


@requires_torch
@pytest.mark.parametrize("args", [("cuda",), ("cpu", "float32")])
def test_autocast_disables_itself_with_pytorchs_warning(args):
    if torch.cuda.is_available() or numgrad.cuda.is_available():
        pytest.skip("needs a machine without CUDA")

    def run(m):
        dtype = getattr(m, args[1]) if len(args) > 1 else None
        with m.autocast(args[0], dtype=dtype):
            return (m.ones(2, 3) @ m.ones(3, 2)).dtype, m.is_autocast_enabled(args[0])

    (ours, ow), (theirs, tw) = _warned(lambda: run(numgrad)), _warned(lambda: run(torch))
    assert ow == tw
    assert str(ours[0]) == str(theirs[0]) and ours[1] is theirs[1] is False


def test_autocast_rejects_unknown_devices_and_restores_its_state():
    with pytest.raises(RuntimeError, match="device type at start of device string: xyz"):
        numgrad.autocast("xyz")
    assert not numgrad.amp.is_autocast_enabled("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with numgrad.amp.autocast("cpu", enabled=False):
            assert not numgrad.amp.is_autocast_enabled("cpu")
    assert not numgrad.amp.is_autocast_enabled("cpu")


def test_backend_switches_keep_what_scripts_set():
    b = numgrad.backends
    b.cuda.matmul.allow_tf32 = True
    b.cudnn.allow_tf32 = True
    b.cudnn.benchmark = True
    assert b.cuda.matmul.allow_tf32 and b.cudnn.benchmark
    b.cuda.matmul.allow_tf32 = False
    b.cudnn.benchmark = False
    assert b.cudnn.is_available() is False and b.mps.is_available() is False
    assert b.openmp.is_available() is True
    assert b.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
