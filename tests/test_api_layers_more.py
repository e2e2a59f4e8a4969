"""1-d and adaptive max pooling, RMS norm, local response norm, pixel (un)shuffle and the
Unfold/Fold modules against PyTorch: forward values, gradients, node names, indices, errors and
module ``repr``/initial weights; float64 finite differences without PyTorch."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, to_numpy, torch

import numgrad as ng

# (id, call over inputs ``a`` with ``F`` = m.nn.functional, input shapes): composites that
# are not declared ops (max_pool1d and avg_pool1d, the declared 2-D pools on a unit height,
# are rows of the op table, ``op_cases.py``)
CALLS = [
    ("adaptive_avg_pool1d", "F.adaptive_avg_pool1d(a[0], 3)", [(2, 3, 7)]),
    ("adaptive_max_pool1d", "F.adaptive_max_pool1d(a[0], 3)", [(2, 3, 7)]),
    ("adaptive_max_pool2d", "F.adaptive_max_pool2d(a[0], (2, 3))", [(2, 3, 5, 7)]),
    ("adaptive_max_pool2d_even", "F.adaptive_max_pool2d(a[0], 2)", [(2, 3, 4, 6)]),
    ("adaptive_max_pool2d_none", "F.adaptive_max_pool2d(a[0], (None, 3))", [(3, 4, 5)]),
    ("rms_norm", "F.rms_norm(a[0], (4, 5), a[1])", [(2, 3, 4, 5), (4, 5)]),
    ("rms_norm_eps", "F.rms_norm(a[0], [5], eps=1e-3)", [(3, 5)]),
    ("local_response_norm", "F.local_response_norm(a[0], 3, 0.1, 0.6, 2.0)", [(2, 5, 4)]),
    ("local_response_norm_4d", "F.local_response_norm(a[0], 2)", [(2, 4, 3, 3)]),
    ("pixel_shuffle", "F.pixel_shuffle(a[0], 2)", [(2, 8, 3, 2)]),
    ("pixel_unshuffle", "F.pixel_unshuffle(a[0], 2)", [(2, 4, 6)]),
    ("channel_shuffle", "F.channel_shuffle(a[0], 3)", [(2, 6, 2, 3)]),
    ("bilinear", "F.bilinear(a[0], a[1], a[2], a[3])", [(2, 3, 4), (2, 3, 5), (6, 4, 5), (6,)]),
    ("bilinear_nobias", "F.bilinear(a[0], a[1], a[2])", [(4,), (3,), (2, 4, 3)]),
    ("layer_norm_empty", "F.layer_norm(a[0], (4,), a[1], a[2])", [(0, 4), (4,), (4,)]),
]
IDS = [c[0] for c in CALLS]
# composed from reshapes/stacks where PyTorch has one fused node
NAME_DIFFERS = {"channel_shuffle"}


def _arrays(shapes, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=s) for s in shapes]


def _run(m, call, arrays, dtype):
    a = [m.tensor(x.astype(dtype), requires_grad=True) for x in arrays]
    return a, eval(call, {"F": m.nn.functional, "a": a})


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CALLS, ids=IDS)
def test_functional_matches_pytorch(case, dtype):
    name, call, shapes = case
    arrays = _arrays(shapes)
    ours_in, ours = _run(ng, call, arrays, dtype)
    theirs_in, theirs = _run(torch, call, arrays, dtype)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert_close(ours, theirs, **tol, msg="forward")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype)
    if name not in NAME_DIFFERS:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    weight = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(theirs.shape))
    (ours * ng.tensor(weight.astype(dtype))).sum().backward()
    (theirs * torch.tensor(weight.astype(dtype))).sum().backward()
    for i, (t, tt) in enumerate(zip(ours_in, theirs_in)):
        assert_close(t.grad, tt.grad, **tol, msg=f"grad {i}")


FD_CASES = [c for c in CALLS if c[0] in {
    "adaptive_avg_pool1d", "adaptive_max_pool2d", "rms_norm",
    "local_response_norm", "local_response_norm_4d", "pixel_shuffle", "bilinear"}]


@pytest.mark.parametrize("case", FD_CASES, ids=[c[0] for c in FD_CASES])
def test_backward_matches_finite_differences(case):
    _, call, shapes = case
    arrays = _arrays(shapes, seed=5)
    inputs, out = _run(ng, call, arrays, "float64")
    weight = np.random.default_rng(1).uniform(0.5, 1.5, size=tuple(out.shape))
    (out * ng.tensor(weight)).sum().backward()

    def forward(*arrs):
        with ng.no_grad():
            return to_numpy(_run(ng, call, list(arrs), "float64")[1])

    for i, t in enumerate(inputs):
        expected = finite_difference(forward, arrays, i, weight)
        assert_close(t.grad, expected, rtol=1e-6, atol=1e-7, msg=f"input {i}")


@requires_torch
@pytest.mark.parametrize("call, shape", [
    ("F.max_pool1d(x, 3, 2, 1, return_indices=True)", (2, 3, 9)),
    ("F.adaptive_max_pool1d(x, 4, True)", (2, 3, 9)),
    ("F.adaptive_max_pool2d(x, (3, 2), True)", (2, 3, 7, 5)),
    ("F.adaptive_max_pool2d(x, 2, return_indices=True)", (3, 4, 6)),
    ("m.nn.AdaptiveMaxPool2d((2, 3), return_indices=True)(x)", (1, 2, 5, 5)),
    ("m.nn.MaxPool1d(2, return_indices=True)(x)", (1, 2, 5)),
])
def test_indices_match_pytorch(call, shape):
    arr = np.random.default_rng(2).standard_normal(shape).astype("float32")
    res = []
    for m in (ng, torch):
        out, idx = eval(call, {"F": m.nn.functional, "m": m, "x": m.tensor(arr)})
        res.append((to_numpy(out), to_numpy(idx), str(idx.dtype)))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6)
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert res[0][2] == res[1][2]


ERRORS = [
    "F.max_pool1d(m.ones(3), 2)",
    "F.max_pool1d(m.ones(2, 3, 8), 0)",
    "F.max_pool1d(m.ones(2, 3, 8), 20)",
    "F.max_pool1d(m.ones(2, 3, 8), 2, padding=2)",
    "F.max_pool1d(m.ones(2, 3, 8), (2, 2))",
    "F.max_pool1d(m.ones(2, 3, 8), 2, 0)",
    "F.max_pool1d(m.ones(2, 3, 8), 2, dilation=0)",
    "F.avg_pool1d(m.ones(3), 2)",
    "F.avg_pool1d(m.ones(2, 3, 8), 20)",
    "F.avg_pool1d(m.ones(2, 3, 8), (2, 2))",
    "F.avg_pool1d(m.ones(2, 3, 8), 2, (1, 1))",
    "F.adaptive_avg_pool1d(m.ones(3), 2)",
    "F.adaptive_avg_pool1d(m.ones(2, 3, 4), (2, 2))",
    "F.adaptive_max_pool1d(m.ones(2, 3, 4), (2, 2))",
    "F.adaptive_max_pool2d(m.ones(3), 2)",
    "F.adaptive_max_pool2d(m.ones(2, 0, 4), 2)",
    "F.adaptive_max_pool2d(m.ones(2, 3), (2, 2))",
    "F.adaptive_max_pool2d(m.ones(2, 3, 4, dtype=m.long), 2)",
    "F.rms_norm(m.ones(2, 3, 8), (7,))",
    "F.rms_norm(m.ones(2, 3, 8), (8,), m.ones(7))",
    "F.local_response_norm(m.ones(3, 3), 2)",
    "F.pixel_shuffle(m.ones(2, 5, 2, 2), 2)",
    "F.pixel_shuffle(m.ones(4, 2), 2)",
    "F.pixel_shuffle(m.ones(1, 4, 2, 2), 0)",
    "F.pixel_unshuffle(m.ones(1, 1, 3, 4), 2)",
    "F.pixel_unshuffle(m.ones(1, 1, 4, 3), 2)",
    "F.channel_shuffle(m.ones(2, 5, 2), 2)",
    "F.channel_shuffle(m.ones(2, 4, 2), 0)",
    "F.channel_shuffle(m.ones(2, 4), 2)",
    "F.dropout1d(m.ones(2, 3, 4, 5))",
    "F.dropout2d(m.ones(2, 3, 4, 5), 1.5)",
    "F.dropout3d(m.ones(2, 3, 4, 5), -0.5)",
    "F.huber_loss(m.ones(2), m.ones(2), delta=0.0)",
    "m.nn.Parameter(m.tensor([1, 2]))",
    "F.adaptive_avg_pool2d(m.ones(1, 1, 4, 4), 'a')",
    "F.softmax(m.ones(2, 3), True)", "F.log_softmax(m.ones(2, 3), dim='a')",
    "F.softmin(m.ones(2, 3), 1.0)", "F.glu(m.ones(2, 4), dim='a')",
    "F.adaptive_max_pool2d(m.ones(1, 1, 4, 4), 2.5)",
    "F.adaptive_max_pool3d(m.ones(1, 1, 4, 4, 4), 'ab')",
    "F.huber_loss(m.ones(2), m.ones(2), delta=-1.0, weight=m.ones(2))",
    "m.nn.Dropout1d(-0.1)",
    "F.bilinear(m.ones(2, 3), m.ones(2, 2, 4), m.ones(5, 3, 4))",
    "F.bilinear(m.ones(2, 3), m.ones(3, 4), m.ones(5, 3, 4))",
    "F.bilinear(m.ones(2, 2), m.ones(2, 4), m.ones(5, 3, 4))",
    "F.bilinear(m.ones(2, 3), m.ones(2, 2), m.ones(5, 3, 4))",
    "F.bilinear(m.ones(2, 3), m.ones(2, 4), m.ones(5, 3, 4), m.ones(4))",
]


@requires_torch
@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_pytorch(call):
    caught = []
    for m in (torch, ng):
        with pytest.raises(Exception) as info:
            eval(call, {"F": m.nn.functional, "m": m})
        caught.append((type(info.value), str(info.value)))
    assert caught[1] == caught[0]


MODULES = [
    ("MaxPool1d(3, 2, 1, ceil_mode=True)", (2, 3, 9)),
    ("AvgPool1d(3, padding=1)", (2, 3, 8)),
    ("AdaptiveAvgPool1d(4)", (2, 3, 9)),
    ("AdaptiveMaxPool1d(2)", (2, 3, 9)),
    ("AdaptiveMaxPool2d((2, 3))", (2, 3, 5, 7)),
    ("RMSNorm(6)", (2, 3, 6)),
    ("RMSNorm([3, 6], eps=1e-4, elementwise_affine=False)", (2, 3, 6)),
    ("LocalResponseNorm(3, k=2.0)", (2, 5, 3)),
    ("PixelShuffle(3)", (1, 9, 2, 2)),
    ("PixelUnshuffle(2)", (1, 2, 4, 4)),
    ("Unfold(2, padding=1)", (2, 3, 4, 4)),
    ("Fold(4, 2, stride=2)", (2, 12, 4)),
    ("ChannelShuffle(2)", (2, 4, 3)),
    ("Dropout1d(0.3)", (2, 4, 3)),
    ("Dropout2d(0.6, inplace=False)", (3, 4, 2, 2)),
    ("AlphaDropout(0.4)", (3, 4)),
]


@requires_torch
@pytest.mark.parametrize("ctor, shape", MODULES, ids=[c[0] for c in MODULES])
def test_modules_match_pytorch(ctor, shape):
    arr = np.random.default_rng(4).standard_normal(shape).astype("float32")
    ng.manual_seed(5)
    ours = eval("ng.nn." + ctor)
    torch.manual_seed(5)
    theirs = eval("torch.nn." + ctor)
    assert repr(ours) == repr(theirs)
    ps, tps = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert ps.keys() == tps.keys()
    for k in ps:
        assert_close(ps[k], tps[k].detach())
    ng.manual_seed(6)
    out = ours(ng.tensor(arr))
    torch.manual_seed(6)
    assert_close(out, theirs(torch.tensor(arr)), rtol=1e-5, atol=1e-5)


@requires_torch
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_module_matches_pytorch(bias):
    rng = np.random.default_rng(8)
    x1, x2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    res = []
    for m in (ng, torch):
        m.manual_seed(11)
        layer = m.nn.Bilinear(3, 5, 2, bias=bias, dtype=m.float64)
        res.append((repr(layer), [p.detach() for p in layer.parameters()],
                    layer(m.tensor(x1), m.tensor(x2)).detach()))
    assert res[0][0] == res[1][0]
    assert len(res[0][1]) == len(res[1][1])
    for p, tp in zip(res[0][1], res[1][1]):
        assert_close(p, tp, rtol=1e-6, atol=1e-7)
    assert_close(res[0][2], res[1][2], rtol=1e-6, atol=1e-7)


@requires_torch
@pytest.mark.parametrize("call, shape", [
    ("F.dropout1d(x, 0.4)", (3, 5, 4)),
    ("F.dropout1d(x, 0.5)", (6, 3)),
    ("F.dropout2d(x, 0.3)", (4, 5, 2, 3)),
    ("F.dropout2d(x, 1.0)", (2, 3, 2, 2)),
    ("F.dropout2d(x, 0.5, training=False)", (2, 3, 2, 2)),
    ("F.alpha_dropout(x, 0.3, training=True)", (4, 5)),
    ("F.alpha_dropout(x, 0.5, True)", (2, 3, 4)),
    ("F.alpha_dropout(x, 1.0, True)", (2, 3)),
    ("F.alpha_dropout(x, 0.5)", (2, 3)),
    ("m.nn.AlphaDropout(0.2)(x)", (3, 6)),
    ("F.dropout3d(x, 0.4)", (2, 3, 2, 2, 2)),
    ("F.dropout3d(x, 0.5)", (3, 2, 2, 2)),
    ("F.feature_alpha_dropout(x, 0.3, True)", (2, 4, 3)),
    ("F.max_pool2d_with_indices(x, 2)[0]", (1, 2, 4, 4)),
    ("F.max_pool1d_with_indices(x, 2, return_indices=False)[0]", (2, 3, 4)),
])
def test_channel_dropout_masks_match_pytorch(call, shape):
    arr = np.random.default_rng(9).uniform(0.5, 1.5, size=shape)
    res = []
    for m in (ng, torch):
        m.manual_seed(21)
        x = m.tensor(arr, requires_grad=True)
        out = eval(call, {"F": m.nn.functional, "m": m, "x": x})
        out.sum().backward()
        res.append((to_numpy(out), to_numpy(x.grad), type(out.grad_fn).__name__))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12)
    assert res[0][2] == res[1][2]


@requires_torch
@pytest.mark.parametrize("k, shape", [(1, (3, 4)), (3, (2, 3, 2, 2))])
def test_channel_dropout_in_place_on_unbatched_input(k, shape):
    # PyTorch's draws, nodes and gradients, the input itself returned
    arr = np.random.default_rng(4).uniform(0.5, 1.5, size=shape)
    res = []
    for m in (ng, torch):
        m.manual_seed(5)
        leaf = m.tensor(arr, requires_grad=True)
        x = leaf.clone()
        out = getattr(m.nn.functional, f"dropout{k}d")(x, 0.5, True, inplace=True)
        assert out is x and tuple(out.shape) == shape
        nodes = [out.grad_fn.name(), out.grad_fn.next_functions[0][0].name()]
        out.sum().backward()
        res.append((to_numpy(out), to_numpy(leaf.grad), nodes))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12)
    assert res[0][2] == res[1][2]


def test_channel_dropout_zeroes_whole_channels():
    ng.manual_seed(3)
    out = to_numpy(ng.nn.functional.dropout2d(ng.ones(8, 16, 3, 3), 0.5))
    per_channel = out.reshape(8, 16, -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert set(np.unique(out)) == {0.0, 2.0}


def test_rms_norm_default_eps_is_machine_epsilon():
    x = ng.tensor([[1e-5, -2e-5, 3e-5]], dtype=ng.float32)
    eps = float(np.finfo(np.float32).eps)
    x64 = np.array([1e-5, -2e-5, 3e-5])
    expected = x64 / np.sqrt((x64 ** 2).mean() + eps)
    assert_close(ng.nn.functional.rms_norm(x, (3,)), expected[None], rtol=1e-5, atol=1e-6)


BAGS = [
    ("F.embedding_bag(i, w, o)", [1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 2, 5]),
    ("F.embedding_bag(i, w, o, mode='sum')", [1, 2, 4, 5, 4, 3, 2, 9], [0, 3]),
    ("F.embedding_bag(i, w, o, mode='max')", [1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 3, 7]),
    ("F.embedding_bag(i, w, o, mode='sum', per_sample_weights=s)", [1, 2, 4, 5, 4], [0, 2]),
    ("F.embedding_bag(i, w, o, include_last_offset=True)", [1, 2, 4, 5, 4, 3], [0, 2, 6]),
    ("F.embedding_bag(i, w)", [[1, 2, 4], [5, 4, 3]], None),
    ("F.embedding_bag(i, w, mode='max')", [[1, 2], [5, 4], [0, 9]], None),
    ("F.embedding_bag(i, w, o, mode='sum')", [3, 3, 1], [0, 1]),
    ("F.embedding_bag(i, w, o, mode='max', include_last_offset=True)", [1, 2, 4, 5],
     [0, 1, 1, 4]),
]


@requires_torch
@pytest.mark.parametrize("call, idx, offs", BAGS, ids=[c[0] for c in BAGS])
def test_embedding_bag_matches_pytorch(call, idx, offs):
    warr = np.random.default_rng(12).standard_normal((10, 3))
    res = []
    for m in (ng, torch):
        w = m.tensor(warr, requires_grad=True)
        i = m.tensor(idx)
        o = None if offs is None else m.tensor(offs)
        s = m.tensor(np.linspace(0.5, 1.5, len(idx)), requires_grad=True)
        out = eval(call, {"F": m.nn.functional, "m": m, "w": w, "i": i, "o": o, "s": s})
        weight = m.tensor(np.random.default_rng(1).uniform(0.5, 1.5, size=tuple(out.shape)))
        (out * weight).sum().backward()
        res.append((to_numpy(out), to_numpy(w.grad), s.grad))
    assert_close(res[0][0], res[1][0], rtol=1e-12, atol=1e-12)
    assert_close(res[0][1], res[1][1], rtol=1e-12, atol=1e-12)
    if res[1][2] is not None:
        assert_close(res[0][2], res[1][2], rtol=1e-12, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("call", [
    "F.embedding_bag(m.tensor([1, 2, 7]), m.ones(5, 2), m.tensor([0, 2]))",
    "F.embedding_bag(m.tensor([1, 2, 3]), m.ones(5, 2), m.tensor([0, 5]))",
    "F.embedding_bag(m.tensor([1., 2]), m.ones(5, 2), m.tensor([0]))",
    "F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2))",
    "F.embedding_bag(m.tensor([[1, 2]]), m.ones(5, 2), m.tensor([0]))",
    "F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), mode='min')",
    "F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), mode='max', "
    "per_sample_weights=m.ones(2))",
    "F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), mode='mean', "
    "per_sample_weights=m.ones(2))",
    "F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), mode='sum', "
    "per_sample_weights=m.ones(2, dtype=m.float64))",
    "F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2, dtype=m.long), m.tensor([0]))",
])
def test_embedding_bag_errors_match_pytorch(call):
    caught = []
    for m in (torch, ng):
        with pytest.raises(Exception) as info:
            eval(call, {"F": m.nn.functional, "m": m})
        caught.append((type(info.value), str(info.value)))
    assert caught[1] == caught[0]


@requires_torch
def test_embedding_bag_module_matches_pytorch():
    res = []
    for m in (ng, torch):
        m.manual_seed(13)
        bag = m.nn.EmbeddingBag(10, 4, mode="max")
        res.append((repr(bag), to_numpy(bag.weight.detach()),
                    to_numpy(bag(m.tensor([1, 5, 2, 8]), m.tensor([0, 2])).detach())))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-5, atol=1e-6)
