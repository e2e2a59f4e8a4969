"""nn layers, losses and optimizers on 'cuda' against the same code on the CPU."""

import copy

import numpy as np
import pytest

import numgrad as ng
import numgrad.nn.functional as F
from numgrad import nn

TOL = {"rtol": 2e-5, "atol": 2e-6}


def _close(a, b, **tol):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(),
                               **(tol or TOL))


def _both(make_module, x_shape, seed=0, loss=None):
    """The module and a copy moved to the GPU, run forward and backward on the same input."""
    ng.manual_seed(seed)
    cpu = make_module()
    gpu = copy.deepcopy(cpu).cuda()
    x = ng.randn(*x_shape)
    xs = (x.clone().requires_grad_(), x.cuda().requires_grad_())
    outs = []
    for m, xi in zip((cpu, gpu), xs):
        y = m(xi)
        (loss(y) if loss else (y * y).sum()).backward()
        outs.append(y)
    _close(outs[1], outs[0])
    _close(xs[1].grad, xs[0].grad)
    for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
        assert pg.device == ng.device("cuda", 0), name
        _close(pg.grad, pc.grad)
    return cpu, gpu


LAYERS = [
    ("linear", lambda: nn.Linear(5, 3), (4, 5)),
    ("linear_nobias", lambda: nn.Linear(5, 3, bias=False), (2, 4, 5)),
    ("mlp", lambda: nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2), nn.Tanh()),
     (3, 6)),
    ("conv", lambda: nn.Conv2d(2, 3, 3), (2, 2, 5, 5)),
    ("conv_stride_pad", lambda: nn.Conv2d(2, 4, 3, stride=2, padding=1), (1, 2, 5, 6)),
    ("conv_groups", lambda: nn.Conv2d(4, 4, 2, groups=2, bias=False), (1, 4, 4, 4)),
    ("maxpool", lambda: nn.MaxPool2d(2), (1, 2, 4, 4)),
    ("avgpool", lambda: nn.AvgPool2d(2, stride=1, padding=1), (1, 2, 3, 3)),
    ("batchnorm1d", lambda: nn.BatchNorm1d(3), (4, 3)),
    ("batchnorm2d", lambda: nn.BatchNorm2d(2), (2, 2, 3, 3)),
    ("layernorm", lambda: nn.LayerNorm(4), (3, 4)),
    ("gelu", lambda: nn.GELU(), (3, 4)),
    ("sigmoid", lambda: nn.Sigmoid(), (3, 4)),
    ("flatten", lambda: nn.Sequential(nn.Flatten(), nn.Linear(12, 2)), (2, 3, 4)),
]


@pytest.mark.parametrize("make,shape", [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layer_on_cuda_matches_cpu(make, shape):
    _both(make, shape)


def test_batchnorm_running_stats_and_eval_on_cuda():
    cpu, gpu = _both(lambda: nn.BatchNorm1d(3), (5, 3))
    _close(gpu.running_mean, cpu.running_mean)
    _close(gpu.running_var, cpu.running_var)
    assert gpu.running_mean.is_cuda
    cpu.eval()
    gpu.eval()
    x = ng.randn(2, 3)
    _close(gpu(x.cuda()), cpu(x))


def test_embedding_on_cuda_matches_cpu():
    ng.manual_seed(0)
    cpu = nn.Embedding(5, 3, padding_idx=1)
    gpu = copy.deepcopy(cpu).cuda()
    idx = ng.tensor([[0, 1, 4], [4, 4, 2]])
    for m, i in ((cpu, idx), (gpu, idx.cuda())):
        (m(i) ** 2).sum().backward()
    _close(gpu.weight.grad, cpu.weight.grad)


def test_embedding_bag_on_cuda_matches_cpu():
    w = ng.tensor(np.random.default_rng(0).standard_normal((6, 4)))
    psw = ng.tensor(np.random.default_rng(1).standard_normal(8))
    idx, off = ng.tensor([1, 2, 5, 5, 0, 5, 3, 2]), ng.tensor([0, 2, 3, 5, 5])
    for mode in ("sum", "mean", "max"):
        grads = []
        for dev in ("cpu", "cuda"):
            wt = w.detach().to(dev).requires_grad_()
            pt = psw.detach().to(dev).requires_grad_() if mode == "sum" else None
            y = F.embedding_bag(idx.to(dev), wt, off.to(dev), mode=mode, padding_idx=5,
                                per_sample_weights=pt)
            (y ** 2).sum().backward()
            grads.append((y, wt.grad, None if pt is None else pt.grad))
        for a, b in zip(grads[1], grads[0]):
            if b is not None:
                _close(a, b)


def test_bicubic_on_cuda_matches_cpu():
    x = ng.tensor(np.random.default_rng(2).standard_normal((1, 2, 4, 5)))
    outs = []
    for dev in ("cpu", "cuda"):
        xt = x.detach().to(dev).requires_grad_()
        y = F.interpolate(xt, size=(7, 3), mode="bicubic")
        (y ** 2).sum().backward()
        outs.append((y, xt.grad))
    _close(outs[1][0], outs[0][0])
    _close(outs[1][1], outs[0][1])



@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_on_cuda_matches_cpu(mode):
    a = np.random.default_rng(2).standard_normal((1, 2, 9, 7))
    a[0, 1, 3, 2] = np.inf  # the padding terms must add nothing (no nan) on both devices
    outs = []
    for dev in ("cpu", "cuda"):
        xt = ng.tensor(a).to(dev).requires_grad_()
        y = F.interpolate(xt, size=(4, 10), mode=mode, antialias=True)
        y.backward(ng.ones_like(y))  # y holds +-inf: its sum would be nan
        outs.append((y, xt.grad))
    _close(outs[1][0], outs[0][0])
    _close(outs[1][1], outs[0][1])
    assert np.isnan(outs[1][0].detach().cpu().numpy()).sum() == 0


LOSSES = [
    ("mse", lambda x, t: F.mse_loss(x, t), "float"),
    ("l1", lambda x, t: F.l1_loss(x, t, reduction="sum"), "float"),
    ("smooth_l1", lambda x, t: F.smooth_l1_loss(x, t), "float"),
    ("bce", lambda x, t: F.binary_cross_entropy(x.sigmoid(), t), "prob"),
    ("bce_logits", lambda x, t: F.binary_cross_entropy_with_logits(x, t), "prob"),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), "class"),
    ("cross_entropy_sum", lambda x, t: F.cross_entropy(x, t, reduction="sum"), "class"),
    ("nll_none", lambda x, t: F.nll_loss(x.log_softmax(1), t, reduction="none").sum(), "class"),
    ("nll_ignore", lambda x, t: F.nll_loss(x.log_softmax(1), t, ignore_index=2), "class"),
]


@pytest.mark.parametrize("fn,kind", [c[1:] for c in LOSSES], ids=[c[0] for c in LOSSES])
def test_loss_on_cuda_matches_cpu(fn, kind):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    if kind == "class":
        t = ng.tensor(rng.integers(0, 3, 4))
    elif kind == "prob":
        t = ng.tensor(rng.uniform(0, 1, (4, 3)).astype(np.float32))
    else:
        t = ng.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    results = []
    for dev in ("cpu", "cuda"):
        xi = ng.tensor(x, device=dev, requires_grad=True)
        loss = fn(xi, t.to(dev))
        loss.backward()
        assert loss.device.type == dev
        results.append((loss, xi.grad))
    _close(results[1][0], results[0][0])
    _close(results[1][1], results[0][1])


OPTIMIZERS = [
    ("sgd", lambda ps: ng.optim.SGD(ps, lr=0.1)),
    ("sgd_momentum", lambda ps: ng.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                             weight_decay=0.01)),
    ("adam", lambda ps: ng.optim.Adam(ps, lr=0.01)),
    ("adam_amsgrad", lambda ps: ng.optim.Adam(ps, lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("adamw", lambda ps: ng.optim.AdamW(ps, lr=0.01)),
    ("rmsprop", lambda ps: ng.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True)),
]


@pytest.mark.parametrize("make_opt", [c[1] for c in OPTIMIZERS], ids=[c[0] for c in OPTIMIZERS])
def test_optimizer_steps_on_cuda_match_cpu(make_opt):
    ng.manual_seed(1)
    cpu = nn.Linear(4, 2)
    gpu = copy.deepcopy(cpu)
    opt_g = make_opt(gpu.parameters())
    gpu.cuda()  # after the optimizer: parameters keep their identity, as in PyTorch
    opt_c = make_opt(cpu.parameters())
    x = ng.randn(3, 4)
    for _ in range(3):
        for m, opt, xi in ((cpu, opt_c, x), (gpu, opt_g, x.cuda())):
            opt.zero_grad()
            (m(xi) ** 2).mean().backward()
            opt.step()
    for pc, pg in zip(cpu.parameters(), gpu.parameters()):
        assert pg.is_cuda
        _close(pg, pc, rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_on_cuda_matches_cpu():
    ng.manual_seed(2)
    cpu = nn.Linear(4, 3)
    gpu = copy.deepcopy(cpu).cuda()
    x = ng.randn(5, 4)
    norms = []
    for m, xi in ((cpu, x), (gpu, x.cuda())):
        (m(xi) ** 2).sum().backward()
        norms.append(nn.utils.clip_grad_norm_(m.parameters(), 0.5))
    _close(norms[1], norms[0])
    for pc, pg in zip(cpu.parameters(), gpu.parameters()):
        _close(pg.grad, pc.grad)


def test_dropout_masks_match_cpu_for_one_seed():
    x = ng.ones(4, 5)
    ng.manual_seed(3)
    a = F.dropout(x, 0.5)
    ng.manual_seed(3)
    b = F.dropout(x.cuda(), 0.5)
    assert b.is_cuda
    _close(b, a)


def test_training_loop_on_cuda_tracks_cpu():
    """A few steps of a small classifier: losses on the GPU follow the CPU's."""
    ng.manual_seed(4)
    cpu = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    gpu = copy.deepcopy(cpu).to("cuda")
    x = ng.randn(6, 4)
    y = ng.tensor([0, 1, 2, 0, 1, 2])
    losses = {"cpu": [], "cuda": []}
    for m, dev in ((cpu, "cpu"), (gpu, "cuda")):
        opt = ng.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
        for _ in range(4):
            opt.zero_grad()
            loss = F.cross_entropy(m(x.to(dev)), y.to(dev))
            loss.backward()
            opt.step()
            losses[dev].append(loss.item())
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-5)
    assert losses["cpu"][-1] < losses["cpu"][0]
