"""numgrad.nn against torch.nn with the same weights and inputs: forward values, input and
parameter gradients; float64 gradcheck of the convolution and pooling kernels; module API."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng
from numgrad.autograd import gradcheck, gradgradcheck

nn = ng.nn
F = ng.nn.functional

if torch is not None:
    tnn = torch.nn


def copy_weights(ours, theirs):
    """Give the torch module numgrad's parameters and buffers."""
    sd = {k: torch.from_numpy(np.array(v.numpy())) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(sd)


def run_layer(make, shape, dtype="float32", train=True, seed=0, target_rng=None):
    """(numgrad output, torch output) with grads of input and parameters."""
    ours_m, theirs_m = make(nn), make(tnn)
    ours_m, theirs_m = ours_m.to(getattr(ng, dtype)), theirs_m.to(getattr(torch, dtype))
    copy_weights(ours_m, theirs_m)
    ours_m.train(train)
    theirs_m.train(train)
    rng = np.random.default_rng(seed)
    xa = rng.standard_normal(shape).astype(dtype)
    x = ng.tensor(xa, requires_grad=True)
    tx = torch.tensor(xa, requires_grad=True)
    out, tout = ours_m(x), theirs_m(tx)
    w = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    (out * ng.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    return ours_m, theirs_m, x, tx, out, tout


LAYERS = {
    "linear": (lambda m: m.Linear(5, 3), (4, 5)),
    "linear_3d": (lambda m: m.Linear(5, 3), (2, 4, 5)),
    "linear_nobias": (lambda m: m.Linear(5, 3, bias=False), (4, 5)),
    "conv": (lambda m: m.Conv2d(3, 4, 3), (2, 3, 7, 6)),
    "conv_stride_pad": (lambda m: m.Conv2d(2, 4, (3, 2), stride=2, padding=1), (2, 2, 8, 7)),
    "conv_dilation": (lambda m: m.Conv2d(2, 3, 3, dilation=2, padding=2), (1, 2, 9, 9)),
    "conv_groups": (lambda m: m.Conv2d(4, 6, 3, groups=2, padding=1, bias=False), (2, 4, 5, 5)),
    "conv_same": (lambda m: m.Conv2d(2, 3, 3, padding="same"), (2, 2, 6, 6)),
    "conv_unbatched": (lambda m: m.Conv2d(2, 3, 3), (2, 5, 5)),
    "maxpool": (lambda m: m.MaxPool2d(2), (2, 3, 6, 6)),
    "maxpool_stride_pad": (lambda m: m.MaxPool2d(3, stride=2, padding=1), (2, 2, 7, 8)),
    "maxpool_dil_ceil": (lambda m: m.MaxPool2d(2, stride=2, dilation=2, ceil_mode=True),
                         (1, 2, 9, 9)),
    "avgpool": (lambda m: m.AvgPool2d(2), (2, 3, 6, 6)),
    "avgpool_pad": (lambda m: m.AvgPool2d(3, stride=2, padding=1), (2, 2, 7, 7)),
    "avgpool_nopadcount": (lambda m: m.AvgPool2d(3, 2, 1, count_include_pad=False), (1, 2, 7, 7)),
    "avgpool_ceil_div": (lambda m: m.AvgPool2d(2, ceil_mode=True, divisor_override=3),
                         (1, 2, 5, 5)),
    "flatten": (lambda m: m.Flatten(), (2, 3, 4)),
    "bn1d": (lambda m: m.BatchNorm1d(4), (8, 4)),
    "bn1d_3d": (lambda m: m.BatchNorm1d(3), (4, 3, 5)),
    "bn2d": (lambda m: m.BatchNorm2d(3), (4, 3, 5, 5)),
    "bn2d_noaffine": (lambda m: m.BatchNorm2d(3, affine=False), (4, 3, 2, 2)),
    "layernorm": (lambda m: m.LayerNorm(6), (4, 6)),
    "layernorm_2d": (lambda m: m.LayerNorm((3, 4)), (2, 3, 4)),
    "relu": (lambda m: m.ReLU(), (4, 5)),
    "tanh": (lambda m: m.Tanh(), (4, 5)),
    "sigmoid": (lambda m: m.Sigmoid(), (4, 5)),
    "gelu": (lambda m: m.GELU(), (4, 5)),
    "gelu_tanh": (lambda m: m.GELU(approximate="tanh"), (4, 5)),
    "softmax": (lambda m: m.Softmax(dim=1), (4, 5)),
    "logsoftmax": (lambda m: m.LogSoftmax(dim=-1), (4, 5)),
    "dropout_eval": (lambda m: m.Dropout(0.5), (4, 5)),
    "mlp": (lambda m: m.Sequential(m.Linear(6, 8), m.ReLU(), m.Linear(8, 3)), (5, 6)),
    "cnn": (lambda m: m.Sequential(m.Conv2d(1, 4, 3, padding=1), m.ReLU(), m.MaxPool2d(2),
                                   m.Conv2d(4, 8, 3), m.ReLU(), m.Flatten(), m.Linear(8, 3)),
            (3, 1, 6, 6)),
}


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_pytorch(name, dtype):
    make, shape = LAYERS[name]
    train = name != "dropout_eval"
    ours, theirs, x, tx, out, tout = run_layer(make, shape, dtype, train=train)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-11}
    assert_close(out, tout, **tol, msg="forward")
    assert_close(x.grad, tx.grad, **tol, msg="input grad")
    tparams = dict(theirs.named_parameters())
    for k, p in ours.named_parameters():
        assert_close(p.grad, tparams[k].grad, **tol, msg=f"grad {k}")
    for k, b in ours.named_buffers():
        assert_close(b, dict(theirs.named_buffers())[k], **tol, msg=f"buffer {k}")
    if out.grad_fn is not None and tout.grad_fn is not None:
        assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__


@requires_torch
@pytest.mark.parametrize("geo", [
    dict(kernel_size=2),  # windows inside the plane (the branch-free path)
    dict(kernel_size=(2, 3), stride=(1, 2)),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2, dilation=2, ceil_mode=True),
])
def test_max_pool2d_nan_and_ties_match_pytorch(geo):
    x = np.round(np.random.default_rng(3).standard_normal((2, 3, 7, 8)) * 1.5).astype(np.float32)
    x[0, 0, 0, 1] = x[0, 1, 4, 4] = x[0, 1, 4, 5] = x[1, 2, 6, 7] = np.nan
    ours, theirs = ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(ours, return_indices=True, **geo)
    tout, tidx = torch.nn.functional.max_pool2d(theirs, return_indices=True, **geo)
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    g = np.arange(out.numel(), dtype=np.float32).reshape(out.shape)
    out.backward(ng.tensor(g))
    tout.backward(torch.tensor(g))
    assert_close(ours.grad, theirs.grad)


@requires_torch
def test_embedding_matches_pytorch():
    for pad in (None, 1):
        ours, theirs = nn.Embedding(6, 3, padding_idx=pad), tnn.Embedding(6, 3, padding_idx=pad)
        copy_weights(ours, theirs)
        idx = [[0, 1, 5], [1, 1, 2]]
        out, tout = ours(ng.tensor(idx)), theirs(torch.tensor(idx))
        assert_close(out, tout)
        w = np.arange(18.0).reshape(2, 3, 3)
        (out * ng.tensor(w, dtype=ng.float32)).sum().backward()
        (tout * torch.tensor(w, dtype=torch.float32)).sum().backward()
        assert_close(ours.weight.grad, theirs.weight.grad)
        assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__


@requires_torch
def test_linear_weight_gradient_layout_matches_pytorch():
    # the gradient for t(weight) comes out column-major, so the weight's own is contiguous
    ours, theirs = nn.Linear(4, 3), tnn.Linear(4, 3)
    copy_weights(ours, theirs)
    x = np.arange(20.0, dtype=np.float32).reshape(5, 4) / 7
    out, tout = ours(ng.tensor(x)), theirs(torch.tensor(x))
    g = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    grads, tgrads = out.grad_fn(ng.tensor(g)), tout.grad_fn(torch.tensor(g))
    assert grads[1] is None and tgrads[1] is None
    assert_close(grads[2], tgrads[2])
    assert grads[2].stride() == tgrads[2].stride() == (1, 4)
    out.backward(ng.tensor(g))
    assert ours.weight.grad.stride() == (4, 1)
    for column_major in (False, True):  # mm's mat2 gradient takes mat2's layout too
        b = x[1:, 1:].copy()
        ob = ng.tensor(b.T.copy()).t() if column_major else ng.tensor(b)
        tb = torch.tensor(b.T.copy()).t() if column_major else torch.tensor(b)
        ob.requires_grad_()
        tb.requires_grad_()
        o, to = ng.mm(ng.tensor(x), ob), torch.mm(torch.tensor(x), tb)
        ga, tga = o.grad_fn(ng.tensor(g)), to.grad_fn(torch.tensor(g))
        assert_close(ga[1], tga[1])
        assert ga[1].stride() == tga[1].stride()


def test_dropout_train_statistics():
    ng.manual_seed(0)
    x = ng.ones(200, 100, requires_grad=True)
    y = F.dropout(x, 0.3)
    kept = (y.detach().numpy() != 0).mean()
    assert abs(kept - 0.7) < 0.02
    assert_close(y.detach().numpy()[y.detach().numpy() != 0], np.full(int(kept * 20000),
                                                                       1 / 0.7, np.float32))
    y.sum().backward()
    assert_close(x.grad, y.detach().numpy())
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert F.dropout(x, 0.3, training=False) is x


# --------------------------------------------------------------------------- losses


def _loss_cases(m):
    f = m.nn.functional
    return {
        "mse": lambda x, t, c: f.mse_loss(x, t),
        "mse_sum": lambda x, t, c: f.mse_loss(x, t, reduction="sum"),
        "mse_none": lambda x, t, c: f.mse_loss(x, t, reduction="none"),
        "l1": lambda x, t, c: f.l1_loss(x, t),
        "ce": lambda x, t, c: f.cross_entropy(x, c),
        "ce_weight": lambda x, t, c: f.cross_entropy(x, c, weight=m.tensor(
            [0.2, 1.0, 2.0, 0.5], dtype=x.dtype)),
        "ce_ignore": lambda x, t, c: f.cross_entropy(x, m.where(c == 2, -100, c)),
        "ce_smooth": lambda x, t, c: f.cross_entropy(x, c, label_smoothing=0.1),
        "ce_smooth_weight_ignore": lambda x, t, c: f.cross_entropy(
            x, m.where(c == 1, 7, c), weight=m.tensor([0.2, 1.0, 2.0, 0.5], dtype=x.dtype),
            ignore_index=7, label_smoothing=0.2),
        "ce_sum": lambda x, t, c: f.cross_entropy(x, c, reduction="sum"),
        "ce_none": lambda x, t, c: f.cross_entropy(x, c, reduction="none"),
        "ce_probs": lambda x, t, c: f.cross_entropy(x, t.softmax(1)),
        "ce_4d": lambda x, t, c: f.cross_entropy(x.reshape(2, 4, 3, 1),
                                                 c.reshape(2, 3, 1) % 4),
        "nll": lambda x, t, c: f.nll_loss(x.log_softmax(1), c),
        "bce": lambda x, t, c: f.binary_cross_entropy(x.sigmoid(), t.sigmoid()),
        "bce_weight": lambda x, t, c: f.binary_cross_entropy(
            x.sigmoid(), t.sigmoid(), weight=m.linspace(0.5, 2, 4, dtype=x.dtype)),
        "bce_logits": lambda x, t, c: f.binary_cross_entropy_with_logits(x * 30, t.sigmoid()),
        "bce_logits_pw": lambda x, t, c: f.binary_cross_entropy_with_logits(
            x, t.sigmoid(), pos_weight=m.tensor([1.0, 2.0, 0.5, 3.0], dtype=x.dtype),
            reduction="sum"),
        "module_ce": lambda x, t, c: m.nn.CrossEntropyLoss(label_smoothing=0.05)(x, c),
        "module_mse": lambda x, t, c: m.nn.MSELoss(reduction="sum")(x, t),
        "module_bcel": lambda x, t, c: m.nn.BCEWithLogitsLoss()(x, t.sigmoid()),
    }


LOSSES = list(_loss_cases(ng))


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", LOSSES)
def test_loss_matches_pytorch(name, dtype):
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((6, 4)).astype(dtype)
    ta = rng.standard_normal((6, 4)).astype(dtype)
    ca = rng.integers(0, 4, 6)
    results = []
    for m in (ng, torch):
        x = m.tensor(xa, requires_grad=True)
        out = _loss_cases(m)[name](x, m.tensor(ta), m.tensor(ca))
        out.sum().backward()
        results.append((out, x.grad))
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert_close(results[0][0], results[1][0], **tol)
    assert_close(results[0][1], results[1][1], **tol)


@requires_torch
def test_loss_node_names_match_pytorch():
    for name in ("mse", "ce", "nll", "bce", "bce_logits", "l1"):
        names = []
        for m in (ng, torch):
            x = m.rand(6, 4, requires_grad=True)
            out = _loss_cases(m)[name](x, m.rand(6, 4), m.randint(0, 4, (6,)))
            names.append(type(out.grad_fn).__name__)
        assert names[0] == names[1], name


@requires_torch
@pytest.mark.parametrize("case", [
    lambda m: m.nn.functional.cross_entropy(m.rand(4, 3), m.tensor([0, 5, 1, 2])),
    lambda m: m.nn.functional.cross_entropy(m.rand(4, 3), m.tensor([0, 1, 1])),
    lambda m: m.nn.functional.binary_cross_entropy(m.rand(4, 3) * 2 + 1, m.rand(4, 3)),
    lambda m: m.nn.functional.conv2d(m.rand(1, 2, 5, 5), m.rand(4, 3, 3, 3)),
    lambda m: m.nn.functional.conv2d(m.rand(1, 3, 2, 2), m.rand(4, 3, 3, 3)),
    lambda m: m.nn.functional.linear(m.rand(2, 3), m.rand(4, 5)),
    lambda m: m.nn.functional.max_pool2d(m.rand(1, 1, 4, 4), 2, padding=2),
    lambda m: m.nn.functional.embedding(m.tensor([5]), m.rand(3, 2)),
    lambda m: m.nn.functional.batch_norm(m.rand(2, 3), m.zeros(4), m.ones(4)),
    lambda m: m.nn.functional.batch_norm(m.rand(1, 3), m.zeros(3), m.ones(3), training=True),
])
def test_errors_match_pytorch(case):
    def err(m):
        try:
            case(m)
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
    assert err(ng) == err(torch)


# --------------------------------------------------------------------------- gradcheck


def _f64(*shape, seed=0):
    return ng.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


GRADCHECKS = {
    "conv": lambda: (lambda x, w, b: F.conv2d(x, w, b), (_f64(2, 2, 5, 4), _f64(3, 2, 3, 2, seed=1),
                                                         _f64(3, seed=2))),
    "conv_stride_pad_dil": lambda: (lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2),
                                                          dilation=(1, 2)),
                                    (_f64(1, 2, 6, 5), _f64(2, 2, 2, 3, seed=1))),
    "conv_groups": lambda: (lambda x, w: F.conv2d(x, w, groups=2, padding=1),
                            (_f64(1, 4, 4, 4), _f64(4, 2, 3, 3, seed=1))),
    "maxpool": lambda: (lambda x: F.max_pool2d(x, 2, stride=1, padding=1), (_f64(1, 2, 4, 5),)),
    "avgpool": lambda: (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                        (_f64(1, 2, 5, 5),)),
    "batchnorm": lambda: (lambda x, g, b: F.batch_norm(x, None, None, g, b, training=True),
                          (_f64(4, 3, 2), _f64(3, seed=1), _f64(3, seed=2))),
    "layernorm": lambda: (lambda x, g, b: F.layer_norm(x, (4,), g, b),
                          (_f64(3, 4), _f64(4, seed=1), _f64(4, seed=2))),
    "gelu": lambda: (F.gelu, (_f64(3, 4),)),
    "linear": lambda: (F.linear, (_f64(3, 4), _f64(2, 4, seed=1), _f64(2, seed=2))),
    "ce_smooth": lambda: (lambda x: F.cross_entropy(x, ng.tensor([0, 2, 1]), label_smoothing=0.1),
                          (_f64(3, 4),)),
    "bce_logits": lambda: (lambda x: F.binary_cross_entropy_with_logits(
        x, ng.tensor([[0.2, 0.7], [1.0, 0.0]], dtype=ng.float64)), (_f64(2, 2),)),
    "mse": lambda: (lambda x, t: F.mse_loss(x, t), (_f64(3, 2), _f64(3, 2, seed=1))),
    "embedding": lambda: (lambda w: F.embedding(ng.tensor([[0, 2], [2, 2]]), w, padding_idx=1),
                          (_f64(3, 2),)),
    "gelu_tanh": lambda: (lambda x: F.gelu(x, approximate="tanh"), (_f64(3, 4),)),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_gradcheck(name):
    fn, inputs = GRADCHECKS[name]()
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["conv", "conv_groups", "maxpool", "avgpool", "batchnorm",
                                  "layernorm", "gelu", "gelu_tanh", "linear", "bce_logits",
                                  "mse", "embedding", "ce_smooth"])
def test_gradgradcheck(name):
    fn, inputs = GRADCHECKS[name]()
    assert gradgradcheck(fn, inputs)


# --------------------------------------------------------------------------- module API


def _model(m):
    return m.Sequential(m.Conv2d(1, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(), m.MaxPool2d(2),
                        m.Flatten(), m.Linear(4 * 4 * 4, 10), m.Dropout(0.2))


@requires_torch
def test_module_api_matches_pytorch():
    ours, theirs = _model(nn), _model(tnn)
    assert repr(ours) == repr(theirs)
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in
                                                          theirs.modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    ours.eval()
    assert not any(m.training for m in ours.modules())
    p = nn.Parameter(ng.ones(2))
    assert repr(p) == repr(tnn.Parameter(torch.ones(2)))


@requires_torch
def test_same_seed_same_initial_weights():
    for m in (ng, torch):
        m.manual_seed(0)
    ours, theirs = _model(nn), _model(tnn)
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert_close(a, b, rtol=0, atol=0, msg=k)


@requires_torch
def test_load_state_dict_errors_match_pytorch():
    def err(m):
        model = m.nn.Linear(3, 2)
        sd = {"weight": m.zeros(2, 4), "extra": m.zeros(1)}
        try:
            model.load_state_dict(sd)
        except RuntimeError as e:
            return str(e)
    assert err(ng) == err(torch)


def test_state_dict_roundtrip_and_zero_grad():
    a, b = _model(nn), _model(nn)
    b.load_state_dict(a.state_dict())
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert_close(x, y, rtol=0, atol=0, msg=k)
    out = a(ng.rand(2, 1, 8, 8)).sum()
    out.backward()
    assert all(p.grad is not None for p in a.parameters())
    a.zero_grad()
    assert all(p.grad is None for p in a.parameters())


def test_module_to_double_and_hooks():
    m = nn.Linear(3, 2).double()
    assert m.weight.dtype is ng.float64 and isinstance(m.weight, nn.Parameter)
    seen = []
    h = m.register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    m(ng.rand(4, 3, dtype=ng.float64))
    h.remove()
    m(ng.rand(4, 3, dtype=ng.float64))
    assert seen == [(4, 2)]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    md = nn.ModuleDict({"a": nn.Linear(2, 2)})
    assert len(list(ml.parameters())) == 6 and len(list(md.parameters())) == 2
    assert isinstance(ml[1], nn.Linear) and "a" in md
