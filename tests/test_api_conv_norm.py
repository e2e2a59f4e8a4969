"""Convolution variants, group/instance norm, paddings, interpolate and lazy layers against
PyTorch: forward values, gradients, node names, errors, module ``repr`` and initial weights;
float64 finite differences and double backward without PyTorch."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, to_numpy, torch

import numgrad as ng
from numgrad.autograd import gradcheck, gradgradcheck

# Circular padding against PyTorch (id, call over module ``m`` and inputs ``a``, input
# shapes; ``F`` is m.nn.functional): a composite of slices, not a declared op. The declared
# ops' variants (conv1d, conv_transpose, group/instance norm, reflect/replicate pads,
# interpolate) are rows of the op table (``op_cases.py``): forward, finite differences,
# PyTorch, node names, gradcheck and gradgradcheck, on both devices.
CALLS = [
    ("circular_2d", "F.pad(a[0], (2, 1, 1, 3), mode='circular')", [(2, 2, 4, 5)]),
    ("circular_1d", "F.pad(a[0], (3, -1), mode='circular')", [(2, 3, 5)]),
]
IDS = [c[0] for c in CALLS]


def _arrays(shapes, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=s) for s in shapes]


def _run(m, call, arrays, dtype):
    a = [m.tensor(x.astype(dtype), requires_grad=True) for x in arrays]
    return a, eval(call, {"F": m.nn.functional, "a": a, "m": m})


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CALLS, ids=IDS)
def test_functional_matches_pytorch(case, dtype):
    _, call, shapes = case
    arrays = _arrays(shapes)
    ours_in, ours = _run(ng, call, arrays, dtype)
    theirs_in, theirs = _run(torch, call, arrays, dtype)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert_close(ours, theirs, **tol, msg="forward")
    assert str(ours.dtype) == str(theirs.dtype)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    # PyTorch records a slice of the output where numgrad regenerates a stale view
    # (docs/compatibility.md, the in-place ops row): the next nodes' names differ
    weight = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(theirs.shape))
    (ours * ng.tensor(weight.astype(dtype))).sum().backward()
    (theirs * torch.tensor(weight.astype(dtype))).sum().backward()
    for i, (t, tt) in enumerate(zip(ours_in, theirs_in)):
        assert_close(t.grad, tt.grad, **tol, msg=f"grad {i}")


FD_CASES = [c for c in CALLS if c[0] == "circular_1d"]


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


GG_CASES = [c for c in CALLS if c[0] == "circular_2d"]


@pytest.mark.parametrize("case", GG_CASES, ids=[c[0] for c in GG_CASES])
def test_gradcheck_and_gradgradcheck(case):
    _, call, shapes = case
    arrays = _arrays(shapes, seed=11)
    inputs = [ng.tensor(a, requires_grad=True) for a in arrays]

    def fn(*a):
        return eval(call, {"F": ng.nn.functional, "a": a, "m": ng})

    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


X3, X4 = "m.ones(2, 4, 6)", "m.ones(2, 4, 5, 5)"
ERRORS = [
    f"F.conv1d({X3}, m.ones(6, 2, 3))", "F.conv1d(m.ones(5), m.ones(6, 2, 3))",
    f"F.conv1d({X3}, m.ones(6, 2))", f"F.conv1d({X3}, m.ones(6, 2, 30), groups=2)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, padding='same', stride=2)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, padding='foo')",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, stride=0)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, padding=-1)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, dilation=0)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=4)", f"F.conv1d({X3}, m.ones(6, 2, 3), groups=0)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, stride=(1, 2))",
    f"F.conv1d({X3}, m.ones(6, 2, 3), m.ones(5), groups=2)",
    f"F.conv1d({X3}, m.ones(6, 2, 3, dtype=m.float64), groups=2)",
    f"F.conv1d({X3}, m.ones(6, 2, 3), groups=2, stride=1.5)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), stride=2, output_padding=2)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), output_padding=1)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), groups=3)",
    f"F.conv_transpose2d({X4}, m.ones(3, 3, 3, 3))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), m.ones(4))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), padding=-1)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), stride=0)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), output_padding=-1)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), groups=0)",
    "F.conv_transpose2d(m.ones(5, 5), m.ones(4, 3, 3, 3))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3, dtype=m.float64))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), m.ones(3, dtype=m.float64))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), stride=(1, 2, 3))",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), None, 1, 0, 0, 1, 1.5)",
    f"F.conv_transpose2d({X4}, m.ones(4, 3, 3, 3), padding='same')",
    "F.conv_transpose1d(m.ones(2, 4, 5), m.ones(4, 3, 3), output_padding=(1, 1))",
    "F.conv_transpose1d(m.ones(2, 5), m.ones(4, 3, 3))",
    "F.conv1d(m.ones(2, 4, 5).long(), m.ones(3, 4, 3))",
    "F.conv1d(m.ones(1, 4, 5), m.ones(3, 4, 3, dtype=m.float64))",
    "F.conv1d(m.ones(2, 4, 5).long(), m.ones(3, 4, 3).long(), m.ones(3))",
    "F.conv1d(m.ones(2, 4, 5), m.ones(3, 4, 0))",
    "F.conv2d(m.ones(2, 4, 5, 5), m.ones(3, 4, 3, 3).long())",
    "F.conv2d(m.ones(2, 4, 5, 5).bool(), m.ones(3, 4, 3, 3).bool())",
    "F.conv3d(m.ones(2, 4, 5, 5, 5), m.ones(3, 4, 3, 3, 3), m.ones(3, dtype=m.float64))",
    "F.conv3d(m.ones(2, 4, 5, 5, 5).bool(), m.ones(3, 4, 3, 3, 3).bool())",
    "F.conv3d(m.ones(1, 4, 5, 5, 5), m.ones(3, 4, 0, 3, 3))",
    "F.conv_transpose1d(m.ones(2, 4, 5), m.ones(4, 3, 3), stride=2, output_padding=2)",
    "F.conv_transpose1d(m.ones(2, 4, 5).long(), m.ones(4, 3, 3))",
    "F.conv_transpose1d(m.ones(2, 4, 1), m.ones(4, 3, 3), padding=3)",
    "F.conv_transpose2d(m.ones(1, 4, 5, 5), m.ones(4, 3, 3, 3, dtype=m.float64))",
    "F.conv_transpose2d(m.ones(2, 4, 5, 5), m.ones(4, 3, 0, 3))",
    "F.conv_transpose2d(m.ones(2, 4, 5, 5).int(), m.ones(4, 3, 3, 3).int())",
    "F.conv_transpose2d(m.ones(2, 4, 5, 5).bool(), m.ones(4, 3, 3, 3).bool())",
    "F.conv_transpose2d(m.ones(2, 4, 5, 5).long(), m.ones(4, 3, 3, 3).long(), m.ones(3))",
    "F.conv_transpose2d(m.ones(2, 4, 5, 5).int(), m.ones(4, 3, 3, 3).int(), m.ones(3).long())",
    "F.conv_transpose3d(m.ones(2, 4, 3, 3, 3), m.ones(4, 3, 3, 3, 3, dtype=m.float64))",
    "F.conv_transpose3d(m.ones(1, 4, 3, 3, 3), m.ones(4, 3, 3, 3, 3, dtype=m.float64))",
    "F.conv_transpose3d(m.ones(2, 4, 3, 3, 3), m.ones(4, 3, 3, 3, 3), m.ones(3).double())",
    "F.conv_transpose3d(m.ones(1, 4, 3, 3, 3), m.ones(4, 3, 0, 3, 3))",
    "F.conv_transpose3d(m.ones(2, 4, 1, 1, 1), m.ones(4, 3, 3, 3, 3), padding=3)",
    f"F.group_norm({X4}, 3)", "F.group_norm(m.ones(4, 5, 5), 2)",
    f"F.group_norm({X4}, 2, m.ones(3))", f"F.group_norm({X4}, 2, m.ones(4), m.ones(5))",
    f"F.group_norm({X4}, 2, None, m.ones(5))",
    "F.group_norm(m.ones(5), 1)", f"F.group_norm({X4}.long(), 2)",
    "F.instance_norm(m.ones(1, 3, 1))", f"F.instance_norm({X4}, use_input_stats=False)",
    f"F.instance_norm({X4}, weight=m.ones(3))",
    f"F.pad({X4}, (1, 2), mode='reflect')", f"F.pad({X4}, (5, 2, 2, 1), mode='reflect')",
    f"F.pad({X4}, (6, 2, 2, 1), mode='circular')", "F.pad(m.ones(5, 5), (1, 2, 2, 1), 'reflect')",
    f"F.pad({X4}, (1, 2, 2, 1), mode='reflect', value=2.0)",
    f"F.pad({X4}, (1, 2, 2, 1, 1, 1, 1, 1), mode='reflect')",
    f"F.pad({X4}, (1, 2, 1), mode='reflect')", f"F.pad({X4}, (1, 2, 2, 1), mode='foo')",
    f"F.pad({X4}, (-3, -3, 0, 0), mode='replicate')", f"F.pad({X4}, (0, 0, -3, -3), 'circular')",
    "F.pad(m.ones(2, 0, 3), (1, 1), 'reflect')",
    f"F.pad({X4}, 1, mode='reflect')", f"F.pad({X4}, (1.5, 1), mode='replicate')",
    f"F.interpolate({X3}, size=7, mode='bilinear')",
    f"F.interpolate({X4}, size=7, mode='linear')",
    f"F.interpolate({X4}, size=7, mode='nearest', align_corners=True)",
    f"F.interpolate({X4}, size=7, scale_factor=2)", f"F.interpolate({X4})",
    f"F.interpolate({X4}, size=(1, 2, 3))", f"F.interpolate({X4}, scale_factor=(1, 2, 3))",
    f"F.interpolate({X4}, size=0)", f"F.interpolate({X4}, scale_factor=0.1)",
    f"F.interpolate({X3}, scale_factor=0.1)", f"F.interpolate({X4}, mode='foo', size=3)",
    "F.interpolate(m.ones(5, 5), size=3)",
    f"F.interpolate({X4}, size=3, recompute_scale_factor=True)",
    f"F.interpolate({X4}.long(), size=3)", f"F.interpolate({X4}.long(), size=3, mode='bilinear')",
    f"F.interpolate({X3}.long(), size=3)", f"F.interpolate({X3}.int(), size=3, mode='linear')",
    f"F.interpolate({X4}.bool(), size=3, mode='bicubic', antialias=True)",
    "F.interpolate(m.ones(2, 4, 3, 3, 3).long(), size=2, mode='trilinear')",
    "F.interpolate(m.ones(2, 4, 3, 3, 3).to(m.int8), size=2, mode='nearest-exact')",
    "F.interpolate(m.ones(2, 4, 3, 3, 3).long(), size=2, mode='area')",
    "m.nn.GroupNorm(3, 4)", "m.nn.Conv1d(4, 6, 3, stride=2, padding='same')",
    "m.nn.Conv1d(4, 6, 3, groups=3)",
    "m.nn.ConvTranspose2d(4, 6, 3, padding_mode='reflect')",
    "m.nn.InstanceNorm2d(3)(m.ones(3, 4))", "m.nn.InstanceNorm1d(3, affine=True)(m.ones(2, 4, 5))",
    "m.nn.LazyConv2d(4, 3, groups=2)(m.ones(1, 3, 5, 5))",
    "m.nn.LazyLinear(3).weight.shape",
    "m.nn.ConvTranspose2d(2, 3, 3, stride=2)(m.ones(1, 2, 4, 4), output_size=(12, 12))",
]


@requires_torch
@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_pytorch(call):
    with pytest.raises(Exception) as theirs:
        eval(call, {"F": torch.nn.functional, "m": torch})
    with pytest.raises(Exception) as ours:
        eval(call, {"F": ng.nn.functional, "m": ng})
    assert ours.type is theirs.type, (ours.value, theirs.value)
    first = [str(e.value).split("\n")[0] for e in (ours, theirs)]
    if "invalid combination of arguments" in first[1]:  # how PyTorch spells the call differs
        first = [f.split(" - got")[0] for f in first]
    assert first[0] == first[1]


MODULES = [
    "nn.Conv1d(4, 6, 3)", "nn.Conv1d(4, 6, 3, padding='same', bias=False)",
    "nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, padding_mode='reflect')",
    "nn.Conv1d(4, 4, 4, padding='same', padding_mode='circular')",
    "nn.Conv2d(4, 6, 3, padding=1, padding_mode='circular')",
    "nn.Conv2d(4, 4, (2, 3), padding='same', dilation=(2, 1), padding_mode='reflect')",
    "nn.Conv2d(4, 6, 3, stride=2, padding=(1, 2), groups=2, padding_mode='replicate')",
    "nn.Conv1d(4, 2, 3, padding=2, padding_mode='replicate')",
    "nn.ConvTranspose2d(4, 6, 3)",
    "nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2, dilation=2, padding=1, "
    "bias=False)",
    "nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1)",
    "nn.GroupNorm(2, 4)", "nn.GroupNorm(2, 4, affine=False)", "nn.GroupNorm(1, 4, bias=False)",
    "nn.InstanceNorm2d(4)", "nn.InstanceNorm1d(4, affine=True, track_running_stats=True)",
    "nn.InstanceNorm2d(4, affine=True)",
    "nn.ReflectionPad2d(2)", "nn.ReflectionPad2d((1, 2, 0, 1))", "nn.ReflectionPad1d((2, 1))",
    "nn.ReplicationPad2d(1)", "nn.ReplicationPad1d(3)", "nn.ZeroPad2d((1, 0, 2, 1))",
    "nn.ZeroPad1d(2)", "nn.ConstantPad2d(1, 3.5)", "nn.ConstantPad1d((1, 2), 3)",
    "nn.CircularPad2d(1)", "nn.CircularPad1d((2, 1))",
    "nn.Upsample(scale_factor=2)", "nn.Upsample(size=(3, 7), mode='bilinear', align_corners=True)",
    "nn.Upsample(scale_factor=(2, 1.5), mode='bilinear')", "nn.UpsamplingNearest2d(size=(6, 3))",
    "nn.UpsamplingBilinear2d(scale_factor=2)",
]


def _input_for(module):
    name = type(module).__name__
    if name in ("Conv1d", "InstanceNorm1d", "ConvTranspose1d") or name.endswith("1d"):
        return (2, 4, 7)
    return (2, 4, 5, 6)


@requires_torch
@pytest.mark.parametrize("spec", MODULES)
def test_modules_match_pytorch(spec):
    """repr, parameters drawn for one seed, forward, gradients of input and parameters."""
    ng.manual_seed(4)
    torch.manual_seed(4)
    ours, theirs = eval(spec, {"nn": ng.nn}), eval(spec, {"nn": torch.nn})
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p, q, rtol=0, atol=0, msg=name)
    x = np.random.default_rng(2).uniform(-1, 1, size=_input_for(ours)).astype(np.float32)
    xs, txs = ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for _ in range(2):  # twice: running statistics move
        y, ty = ours(xs), theirs(txs)
        assert_close(y, ty, rtol=1e-5, atol=1e-5)
        assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
        (y * y).sum().backward()
        (ty * ty).sum().backward()
    assert_close(xs.grad, txs.grad, rtol=1e-4, atol=1e-5)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=name)
    for (name, b), (_, tb) in zip(ours.named_buffers(), theirs.named_buffers()):
        assert_close(b, tb, rtol=1e-5, atol=1e-6, msg=name)
    ours.eval()
    theirs.eval()
    assert_close(ours(xs), theirs(txs), rtol=1e-5, atol=1e-5)


def _graph_names(t):
    """Every node name under ``t``, depth first."""
    names, stack = [], [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is not None:
            names.append(fn.name())
            stack.extend(n for n, _ in fn.next_functions)
    return names


@requires_torch
def test_circular_padding_records_pytorch_graph():
    """F.pad(mode='circular') and a circular Conv2d record PyTorch's whole graph: the border
    copies read SliceBackward0 views of the output being built (not AsStridedBackward0)."""
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    graphs = []
    for m in (ng, torch):
        m.manual_seed(0)
        t = m.tensor(x, requires_grad=True)
        conv = m.nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular")
        graphs.append([_graph_names(m.nn.functional.pad(t, (1, 2, 0, 1), mode="circular")),
                       _graph_names(m.nn.functional.pad(t[0], (1, 2), mode="circular")),
                       _graph_names(conv(t))])
    assert graphs[0] == graphs[1]


@requires_torch
def test_conv_transpose_output_size_matches_pytorch():
    ng.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = ng.nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, 2)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    y = ours(ng.tensor(x), output_size=[10, 10])
    ty = theirs(torch.tensor(x), output_size=[10, 10])
    assert tuple(y.shape) == (1, 3, 10, 10)
    assert_close(y, ty, rtol=1e-5, atol=1e-6)


@requires_torch
@pytest.mark.parametrize("spec,shape", [
    ("nn.LazyLinear(3)", (2, 5)), ("nn.LazyLinear(4, bias=False)", (3, 2, 6)),
    ("nn.LazyConv2d(4, 3, groups=2)", (1, 2, 5, 5)),
    ("nn.LazyConv2d(4, 3, padding=1, bias=False)", (3, 5, 5)),
    ("nn.LazyInstanceNorm1d()", (2, 3, 5)), ("nn.LazyInstanceNorm2d(bias=False)", (2, 3, 4, 2)),
    ("nn.LazyInstanceNorm3d(momentum=0.3)", (2, 2, 2, 3, 2)),
])
def test_lazy_modules_match_pytorch(spec, shape):
    """Uninitialized until the first call; then PyTorch's initial weights for one seed, and
    the module becomes the plain layer."""
    ng.manual_seed(9)
    torch.manual_seed(9)
    ours, theirs = eval(spec, {"nn": ng.nn}), eval(spec, {"nn": torch.nn})
    assert repr(ours) == repr(theirs)
    assert repr(ours.weight) == repr(theirs.weight) == "<UninitializedParameter>"
    assert isinstance(ours.weight, ng.nn.Parameter)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.has_uninitialized_params()
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y, ty = ours(ng.tensor(x)), theirs(torch.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__
    assert type(ours.weight).__name__ == "Parameter"
    assert repr(ours) == repr(theirs)
    assert_close(y, ty, rtol=1e-5, atol=1e-6)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert_close(p, q, rtol=0, atol=0)
        assert p.requires_grad
    y.sum().backward()
    assert ours.weight.grad.shape == ours.weight.shape


@requires_torch
def test_integer_padding_and_instance_norm_running_stats_match_pytorch():
    a = np.arange(24).reshape(2, 3, 4)
    for mode in ("reflect", "replicate", "circular"):
        ours = ng.nn.functional.pad(ng.tensor(a), (2, 1), mode=mode)
        theirs = torch.nn.functional.pad(torch.tensor(a), (2, 1), mode=mode)
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = np.random.default_rng(0).standard_normal((3, 2, 5)).astype(np.float32)
    stats = [(ng.zeros(2), ng.ones(2)), (torch.zeros(2), torch.ones(2))]
    for m, (rm, rv) in zip((ng, torch), stats):
        m.nn.functional.instance_norm(m.tensor(x), rm, rv, momentum=0.3)
    assert_close(stats[0][0], stats[1][0], rtol=1e-5, atol=1e-6)
    assert_close(stats[0][1], stats[1][1], rtol=1e-5, atol=1e-6)
    ours = ng.nn.functional.instance_norm(ng.tensor(x), *stats[0], use_input_stats=False)
    theirs = torch.nn.functional.instance_norm(torch.tensor(x), *stats[1], use_input_stats=False)
    assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


@requires_torch
@pytest.mark.parametrize("call", [
    "F.conv1d(t(x3), t(w3), stride=2, groups=2)",
    "F.conv_transpose1d(t(x3), t(w3), t(w3[0, :, 0]), stride=2, output_padding=1)",
    "F.conv_transpose1d(t(x3), t(w3), t(w3[0, :, 0]).int(), stride=2)",
    "F.conv_transpose1d(t(x3, d), t(w3).double(), t(w3[0, :, 0], f))",
    "F.conv3d(t(x5), t(w5), padding=1)",
    "F.conv_transpose3d(t(x5), t(w5), stride=(2, 1, 1))",
    "F.conv_transpose2d(t(x3[..., :4].reshape(2, 4, 2, 2), f), m.ones(4, 3, 3, 3), padding=(2, 0))",
    "F.interpolate(t(x5, f), size=(2, 3, 2), mode='area')",
    "F.interpolate(t(x5).to(m.uint8), size=(4, 5, 2))",
    "F.interpolate(t(x3[..., :4].reshape(2, 4, 2, 2)).to(m.uint8), scale_factor=1.5, "
    "mode='nearest-exact')",
])
def test_integer_convolutions_and_empty_or_5d_outputs_match_pytorch(call):
    """Integer convolutions run (of the transposed ones int64 only, with any bias the result
    casts back to, as a double one takes a float bias), uint8 nearest resizes, an output
    size of 0
    (oneDNN's float32 transposed convolution) gives an empty output, 'area' resizes 5-D
    input: values, dtypes and the input's gradient as PyTorch's."""
    rng = np.random.default_rng(0)
    arrays = {"x3": rng.integers(-3, 4, (2, 4, 7)), "w3": rng.integers(-2, 3, (4, 2, 3)),
              "x5": rng.integers(-3, 4, (1, 2, 3, 4, 3)),
              "w5": rng.integers(-2, 3, (2, 2, 2, 2, 2))}
    res = []
    for m in (ng, torch):
        leaves = []

        def t(a, dtype=None, m=m, leaves=leaves):
            x = m.tensor(a, dtype=dtype, requires_grad=dtype is not None)
            leaves.append(x)
            return x
        out = eval(call, {"F": m.nn.functional, "m": m, "t": t, "f": m.float32,
                        "d": m.float64, **arrays})
        grad = None
        if out.requires_grad:
            (out * out).sum().backward()
            grad = to_numpy(leaves[0].grad)
        res.append((str(out.dtype), tuple(out.shape), to_numpy(out.detach()), grad))
    assert res[0][:2] == res[1][:2]
    assert_close(res[0][2], res[1][2], rtol=1e-6, atol=0)
    if res[1][3] is not None:
        assert_close(res[0][3], res[1][3], rtol=1e-6, atol=1e-6)


def test_resampling_is_linear_and_its_adjoint_matches():
    """<M x, g> = <x, M^T g> for a padding and an interpolation (no PyTorch needed)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 4))
    for fn in (lambda t: ng.nn.functional.pad(t, (2, 3, 1, 4), mode="reflect"),
               lambda t: ng.nn.functional.interpolate(t, size=(9, 3), mode="bilinear")):
        xt = ng.tensor(x, requires_grad=True)
        y = fn(xt)
        g = rng.standard_normal(tuple(y.shape))
        (gx,) = ng.autograd.grad(y, xt, ng.tensor(g))
        assert abs((y.detach().numpy() * g).sum() - (x * gx.numpy()).sum()) < 1e-9


@requires_torch
@pytest.mark.parametrize("fn,shape,w_shape,stride,output_padding,dilation", [
    ("conv_transpose1d", (2, 2, 4), (2, 3, 3), 1, 1, 2),
    ("conv_transpose2d", (1, 2, 4, 3), (2, 3, 3, 2), (2, 1), (1, 2), (1, 3)),
    ("conv_transpose3d", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2, 1, 1), (2, 1, 1), (3, 2, 2)),
])
def test_conv_transpose_output_padding_past_the_stride(fn, shape, w_shape, stride,
                                                        output_padding, dilation):
    # output_padding >= stride (allowed below the dilation): the gradient image holds more
    # windows than the input has positions; the gradients read the input's positions only
    arrays = _arrays([shape, w_shape], seed=5)
    res = []
    for m in (ng, torch):
        x, w = (m.tensor(a, requires_grad=True) for a in arrays)
        y = getattr(m.nn.functional, fn)(x, w, None, stride, 0, output_padding, 1, dilation)
        gy = m.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)))
        gx, gw = m.autograd.grad(y, (x, w), gy, create_graph=True)
        hx, hw = m.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (x, w))
        res.append([to_numpy(t) for t in (y, gx, gw, hx, hw)])
    for ours, theirs in zip(*res):
        assert_close(ours, theirs, rtol=1e-10, atol=1e-10)
