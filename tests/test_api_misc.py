"""Namespace entries, dtypes, formatting and small utilities, against PyTorch: formatting of
tensors, ``numgrad.inf``/``pi``/..., the legacy tensor types (``FloatTensor``), ``isclose``/
``allclose``/``equal``/``type_as``, ``numgrad.testing.assert_close`` and its messages,
``set_default_device``, ``numgrad.accelerator``, float16/bfloat16 storage and casts, the CUDA
memory statistics, ``type(x)``'s repr, ``gradgradcheck``'s random draws and the
``numgrad.utils.data`` submodules."""

import io
import pickle
import warnings

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng
from numgrad._device import cuda_available


def _outcome(fn):
    """``("ok", repr-able result)`` or ``(exception class name, first line of message)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn()
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e).__name__, str(e).split("\n")[0]


def _same(call):
    """``call(m)`` gives the same result (compared by ``str``) or error under both."""
    ours, theirs = _outcome(lambda: call(ng)), _outcome(lambda: call(torch))
    assert ours[0] == theirs[0], (ours, theirs)
    assert str(ours[1]) == str(theirs[1]), (ours, theirs)


# ---------------------------------------------------------------------------- formatting


FORMAT_VALUES = [("float32", 2.2949554920196533), ("float64", 2.2949554920196533),
                 ("int64", 3), ("bool", True), ("float32", -0.0), ("float32", float("nan")),
                 ("int32", -7), ("float64", 1e-9)]


@requires_torch
@pytest.mark.parametrize("spec", ["", ".4f", ".3f", ">12", "e", ".2%", "d", "+.1f"])
@pytest.mark.parametrize("dtype,value", FORMAT_VALUES)
def test_zero_dim_tensor_formats_as_its_number(dtype, value, spec):
    _same(lambda m: format(m.tensor(value, dtype=getattr(m, dtype)), spec))
    _same(lambda m: f"{m.tensor(value, dtype=getattr(m, dtype)):{spec}}")


@requires_torch
@pytest.mark.parametrize("call", [
    lambda m: f"{m.tensor([1.5, 2.0])}", lambda m: format(m.tensor([1.5, 2.0]), ".4f"),
    lambda m: str.format("{:.3f}", m.tensor(1.0 / 3)), lambda m: f"{m.tensor(1.5) * 2}",
    lambda m: f"{m.nn.Parameter(m.tensor(1.5))}",
    lambda m: format(m.nn.Parameter(m.tensor(1.5)), ".2f"),
    lambda m: f"{m.tensor(2.5, requires_grad=True):.1f}",
])
def test_formatting_matches_pytorch(call):
    _same(call)


# ---------------------------------------------------------------------------- constants, types


@requires_torch
def test_constants_match_pytorch():
    for name in ("inf", "pi", "e"):
        assert getattr(ng, name) == getattr(torch, name)
        assert type(getattr(ng, name)) is float
    assert ng.nan != ng.nan
    assert ng.newaxis is None is torch.newaxis
    assert ng.half is ng.float16
    x = ng.arange(6.0).reshape(2, 3)
    assert x[:, ng.newaxis].shape == (2, 1, 3)


LEGACY = ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor",
          "ShortTensor", "CharTensor", "ByteTensor", "HalfTensor", "BFloat16Tensor"]


@requires_torch
@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("call", [
    lambda T, m: T([1, 0, 2]), lambda T, m: T([[1.7, 2.2]]), lambda T, m: T(2, 3).shape,
    lambda T, m: T().shape, lambda T, m: T(m.Size([2, 2])).shape, lambda T, m: T(0),
    lambda T, m: T(m.Size([])).shape, lambda T, m: T(()), lambda T, m: T((1, 2)),
    lambda T, m: T(np.array([1, 2])), lambda T, m: T(2, 3).dtype, lambda T, m: T(-1),
    lambda T, m: T(2.5), lambda T, m: T("a"), lambda T, m: T([1], 2),
    lambda T, m: T([1], dtype=m.float64), lambda T, m: T([1], device="cuda"),
    lambda T, m: T(2, "a"), lambda T, m: T([1.0], device="cpu"),
    lambda T, m: T(m.tensor([1.0, 2.0])), lambda T, m: T(m.tensor([1, 2])),
    lambda T, m: isinstance(T([1]), T), lambda T, m: isinstance(m.tensor([1.0]), T),
    lambda T, m: isinstance(T([1]), m.Tensor), lambda T, m: issubclass(T, m.Tensor),
    lambda T, m: T([1]).type(), lambda T, m: m.tensor([1.5, -2.5]).type(T),
    lambda T, m: repr(T), lambda T, m: T.dtype, lambda T, m: T.is_cuda,
    lambda T, m: pickle.loads(pickle.dumps(T)) is T,
])
def test_legacy_tensor_types_match_pytorch(name, call):
    _same(lambda m: call(getattr(m, name), m))


@requires_torch
@pytest.mark.parametrize("call", [
    lambda m: m.tensor([1.5]).type(), lambda m: m.tensor([1]).type("torch.DoubleTensor"),
    lambda m: m.tensor([1.5]).type(m.int64), lambda m: m.tensor([1.5]).type(float),
    lambda m: m.tensor([1.5]).type(3), lambda m: m.tensor([1.5]).type("foo"),
    lambda m: m.tensor([1.5]).type(np.float32), lambda m: m.tensor([1]).type(m.Tensor),
    lambda m: m.tensor([1.5]).type(m.int64, non_blocking=True),
    lambda m: repr(m.cuda.FloatTensor), lambda m: isinstance(m.ones(1), m.cuda.FloatTensor),
    lambda m: repr(type(m.ones(1))), lambda m: repr(m.Tensor),
    lambda m: repr(type(m.nn.Parameter(m.ones(1)))),
])
def test_type_strings_match_pytorch(call):
    _same(call)


def test_tensor_class_prints_as_pytorchs_and_still_pickles_and_subclasses():
    x = ng.tensor([1.0, 2.0])
    assert repr(type(x)) == "<class 'torch.Tensor'>"
    assert str(ng.Tensor) == "<class 'torch.Tensor'>"
    assert pickle.loads(pickle.dumps(ng.Tensor)) is ng.Tensor
    assert pickle.loads(pickle.dumps(x)).tolist() == [1.0, 2.0]
    p = ng.nn.Parameter(ng.ones(2))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is ng.nn.Parameter and q.requires_grad

    class Mine(ng.Tensor):
        __slots__ = ()

    assert repr(Mine) == f"<class '{__name__}.test_tensor_class_prints_as_pytorchs_and_still" \
                         "_pickles_and_subclasses.<locals>.Mine'>"
    assert issubclass(Mine, ng.Tensor) and isinstance(p, ng.Tensor)


# ---------------------------------------------------------------------------- closeness


@requires_torch
@pytest.mark.parametrize("call", [
    lambda m: m.isclose(m.tensor([1.0, 2.0, float("nan"), float("inf")]),
                        m.tensor([1.0, 2.00001, float("nan"), float("inf")])),
    lambda m: m.isclose(m.tensor([1.0, float("nan")]), m.tensor([1.0, float("nan")]),
                        equal_nan=True),
    lambda m: m.isclose(m.tensor([0], dtype=m.uint8), m.tensor([255], dtype=m.uint8), atol=1),
    lambda m: m.isclose(m.tensor([1, 2]), m.tensor([3, 2]), atol=2.5, rtol=0),
    lambda m: m.isclose(m.tensor([True, False]), m.tensor([True, True])),
    lambda m: m.isclose(m.tensor([-float("inf")]), m.tensor([float("inf")]), atol=float("inf")),
    lambda m: m.isclose(m.tensor([1.0, 2]), m.tensor([[1.0], [2]])),
    lambda m: m.isclose(m.tensor([1.0]), m.tensor([1])),
    lambda m: m.isclose(m.tensor([1.0, 2]), m.tensor([1.0, 2, 3])),
    lambda m: m.isclose(m.tensor([1.0]), m.tensor([1.0]), rtol=-0.5),
    lambda m: m.isclose(m.tensor([1.0]), m.tensor([1.0]), atol=-1),
    lambda m: m.isclose(m.tensor([1.0]), m.tensor([1.0]), rtol=None),
    lambda m: m.allclose(m.tensor([1.0]), 1.0), lambda m: m.equal(m.tensor([1.0]), 1.0),
    lambda m: m.allclose(m.tensor([1.0]), m.tensor([1.0]), 0.1, 0.2, True, 3),
    lambda m: m.allclose(m.tensor(1.0), m.tensor([1.0, 1.0])),
    lambda m: m.allclose(m.tensor([]), m.tensor([])),
    lambda m: m.tensor([1.0, 1.1]).allclose(m.tensor([1.0, 1.0]), rtol=0.2),
    lambda m: m.equal(m.tensor([1.0, float("nan")]), m.tensor([1.0, float("nan")])),
    lambda m: m.equal(m.tensor([1.0]), m.tensor([1])),
    lambda m: m.equal(m.tensor([[1.0]]), m.tensor([1.0])),
    lambda m: m.tensor([True]).equal(m.tensor([1])),
    lambda m: m.tensor([1.5]).type_as(m.tensor([1])),
    lambda m: m.tensor([1.5], requires_grad=True).type_as(m.tensor([1.0], dtype=m.float64)),
    lambda m: m.tensor([1.5]).type_as([1]),
    lambda m: m.isclose(m.tensor([1.0], requires_grad=True), m.tensor([1.0])),
])
def test_closeness_matches_pytorch(call):
    _same(call)


def test_type_as_is_differentiable():
    x = ng.tensor([1.5, -2.0], requires_grad=True)
    y = x.type_as(ng.zeros(1, dtype=ng.float64))
    assert y.dtype is ng.float64 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * ng.tensor([2.0, 3.0], dtype=ng.float64)).sum().backward()
    assert x.grad.dtype is ng.float32 and x.grad.tolist() == [2.0, 3.0]
    assert x.type_as(x) is x


def _assert_close_cases(m):
    t = m.tensor
    nan, inf = float("nan"), float("inf")
    return [
        (t([1.0, 2, 3]), t([1.0, 2.5, 3]), {}),
        (t([[1.0, 2], [3, 4]]), t([[1.0, 2], [3.1, 4.2]]), {}),
        (t(1.0), t(1.5), {}), (t([1, 2]), t([1, 3]), {}), (t([1.0, 2]), t([1.0, 2, 3]), {}),
        (t([1.0, 2]), t([1.0, 2], dtype=m.float64), {}),
        (t([1.0, 2]), t([1.0, 2], dtype=m.float64), {"check_dtype": False}),
        (t([1.0]), t([1.0]), {"rtol": 1}), (t([1.0]), t([1.0]), {"atol": 1}),
        (t([1.0, nan]), t([1.0, nan]), {}), (t([1.0, nan]), t([1.0, nan]), {"equal_nan": True}),
        (t([0.0, 1]), t([0.0, 2]), {}), (t([True]), t([False]), {}), (1.0, 1.0001, {}),
        ([t([1.0])], [t([2.0])], {}), ({"a": t([1.0])}, {"a": t([2.0])}, {}),
        (t([1.0]), t([1.1]), {"msg": "custom"}), (t([1.0], requires_grad=True), t([1.0]), {}),
        (t([1.0]).expand(3), t([1.0, 1, 1]), {}), (t(1), t(2), {}), (t(True), t(False), {}),
        (t(1.0), t([1.0]), {}), (np.array([1.0]), np.array([2.0]), {}),
        (t([1.0]), np.array([1.0]), {}), (t([1, 2]), t([1.0, 2.5]), {"check_dtype": False}),
        (1, 2, {}), (1, 1.0, {}), (1, 1.0, {"check_dtype": False}), (True, False, {}),
        (t([1.0, inf]), t([1.0, -inf]), {}), (t([]), t([]), {}), (t([5.0, 2]), t([0.0, 2]), {}),
        (t([0.0, 2]), t([1e-9, 2]), {"rtol": 0, "atol": 0}),
        (t([[1.0, 2]]), t([[1.0, 2]]).t(), {}), ([1.0, 2], [1.0, 2, 3], {}),
        ({"a": 1.0}, {"b": 1.0}, {}), ({"a": 1.0}, {"a": 1.0, "b": 2.0}, {}),
        ([[t([1.0, 2])]], [[t([1.0, 3])]], {}), ([{"x": 1}], [{"x": 2}], {}),
        (m.ones(2, 3), m.ones(3, 2).t(), {"check_stride": True}), (1.0, nan, {}),
        (nan, nan, {"equal_nan": True}), ("a", "b", {}), (None, None, {}),
        (t(1.0), t(1.5), {"msg": lambda s: "PRE " + s}),
        ([t(1.0)], [t(1.5)], {"msg": lambda s: "PRE " + s}),
        (t(1.0), t(1.5), {"rtol": 0.1, "atol": 0.0}),
        (t([300]), t([1], dtype=m.uint8), {"check_dtype": False}),
        (t([1, 5, 9]), t([0, 2, 9]), {}),
        (t([1.0, 2, 3, 4]).reshape(2, 2), t([1.0, 2, 3, 5]).reshape(2, 2),
         {"rtol": 0.1, "atol": 0.5}),
        (t([1.0, 2]).half(), t([1.0, 2.001]).half(), {}),
        (t([1.0, 2]).bfloat16(), t([1.0, 2.01]).bfloat16(), {}),
        ((t(1.0),), [t(1.0)], {}),
    ]


@requires_torch
@pytest.mark.parametrize("index", range(len(_assert_close_cases(ng))))
def test_assert_close_matches_pytorch(index):
    """Same outcome, same exception class, same whole message."""
    def run(m):
        actual, expected, kw = _assert_close_cases(m)[index]
        try:
            m.testing.assert_close(actual, expected, **kw)
            return "ok"
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__}: {e}"
    assert run(ng) == run(torch)


# ---------------------------------------------------------------------------- default device


@pytest.fixture
def restore_default_device():
    yield
    ng.set_default_device(None)
    if torch is not None:
        torch.set_default_device(None)


@requires_torch
@pytest.mark.skipif(cuda_available() or torch is None or torch.cuda.is_available(),
                    reason="answers for a machine without a GPU")
@pytest.mark.usefixtures("restore_default_device")
def test_default_device_matches_pytorch_without_a_gpu():
    for m in (ng, torch):
        assert repr(m.get_default_device()) == "device(type='cpu')"
    steps = [
        lambda m: m.set_default_device("cpu"), lambda m: repr(m.get_default_device()),
        lambda m: m.zeros(2).device, lambda m: m.set_default_device("cuda:1"),
        lambda m: repr(m.get_default_device()), lambda m: m.set_default_device("cuda"),
        lambda m: m.get_default_device(), lambda m: m.zeros(1), lambda m: m.tensor([1.0]),
        lambda m: m.ones(2, 2), lambda m: m.arange(3), lambda m: m.randn(2),
        lambda m: m.full((1,), 2.0), lambda m: m.FloatTensor([1.0]).device,
        lambda m: m.Tensor(2).device, lambda m: m.zeros_like(m.from_numpy(np.ones(2))).device,
        lambda m: m.from_numpy(np.ones(2)).device, lambda m: m.set_default_device(None),
        lambda m: repr(m.get_default_device()), lambda m: m.zeros(1).device,
        lambda m: m.set_default_device(3), lambda m: repr(m.get_default_device()),
        lambda m: m.set_default_device(ng.device("cpu") if m is ng else torch.device("cpu")),
        lambda m: repr(m.get_default_device()),
    ]
    for step in steps:
        _same(step)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        ng.set_default_device("foo")


@requires_torch
@pytest.mark.skipif(cuda_available() or torch is None or torch.cuda.is_available(),
                    reason="answers for a machine without a GPU")
@pytest.mark.parametrize("call", [
    lambda m: m.accelerator.is_available(), lambda m: m.accelerator.current_accelerator(),
    lambda m: m.accelerator.current_accelerator(check_available=True),
    lambda m: m.accelerator.device_count(), lambda m: m.accelerator.current_device_index(),
    lambda m: m.accelerator.synchronize(), lambda m: m.accelerator.memory_allocated(),
    lambda m: m.accelerator.empty_cache(), lambda m: m.accelerator.set_device_index(0),
    lambda m: m.cuda.memory_allocated(), lambda m: m.cuda.max_memory_allocated(),
    lambda m: m.cuda.memory_reserved(), lambda m: m.cuda.max_memory_reserved(),
    lambda m: m.cuda.empty_cache(), lambda m: m.cuda.memory_allocated(0),
])
def test_accelerator_and_memory_match_pytorch_without_a_gpu(call):
    _same(call)


def test_memory_statistics_count_live_device_buffers(monkeypatch):
    """With the backend loaded (here faked), the numbers follow its byte counter."""
    import sys
    import types
    fake = types.SimpleNamespace(MEMORY=[4096, 8192])
    monkeypatch.setitem(sys.modules, "numgrad.kernels.cuda._launch", fake)
    assert ng.cuda.memory_allocated() == 4096 and ng.cuda.max_memory_allocated() == 8192
    ng.cuda.reset_peak_memory_stats()
    assert ng.cuda.max_memory_allocated() == 4096
    ng.cuda.reset_peak_memory_stats()  # no GPU and no backend loaded: nothing to reset
    monkeypatch.delitem(sys.modules, "numgrad.kernels.cuda._launch")
    ng.cuda.reset_peak_memory_stats()
    assert ng.cuda.memory_allocated() == 0


# ---------------------------------------------------------------------------- 16-bit floats

VALUES = [0.1, -2.7, 65519.99, 65520.0, 1e-8, 3e-8, 2.98023223876953125e-08, float("nan"),
          -float("inf"), 1 + 2**-11 + 2**-40, 3.4e38, -0.0, 1e-40, 6.1e-5, 0.33]


@requires_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("call", [
    lambda m, d: m.tensor(VALUES).to(d), lambda m, d: m.tensor(VALUES).to(d).float().tolist(),
    lambda m, d: m.tensor(VALUES, dtype=m.float64).to(d).double().tolist(),
    lambda m, d: m.tensor(VALUES, dtype=d).tolist(), lambda m, d: m.tensor(VALUES[:3]).to(d).long(),
    lambda m, d: m.tensor([0.0, 0.1, -0.0]).to(d).bool(), lambda m, d: m.tensor([1, 300, -5]).to(d),
    lambda m, d: (m.ones(1, dtype=d).dtype, m.ones(1, dtype=d).element_size()),
    lambda m, d: (m.ones(1, dtype=d).type(), m.ones(1, dtype=d).is_floating_point()),
    lambda m, d: m.ones(2, dtype=d), lambda m, d: m.full((2,), 0.1, dtype=d),
    lambda m, d: m.zeros(2, 2, dtype=d), lambda m, d: m.full((1,), 1e39, dtype=d),
    lambda m, d: m.tensor([[1.3, 2.5], [0.33, -1e-3]], dtype=d),
    lambda m, d: m.tensor([[1.3, 2.5], [0.33, -1e-3]], dtype=d).t().float(),
    lambda m, d: m.tensor([1.3, 2.5, 0.33], dtype=d)[::2].double(),
    lambda m, d: m.tensor(VALUES).to(d)[1].item(), lambda m, d: float(m.tensor([0.1], dtype=d)),
    lambda m, d: f"{m.tensor(0.1, dtype=d)}", lambda m, d: bool(m.tensor([0.0], dtype=d)),
    lambda m, d: m.tensor([1.0, 2.0], requires_grad=True).to(d),
    lambda m, d: m.tensor([0.1, 1e5]).half().to(d), lambda m, d: m.tensor([0.1, 1e5]).to(d).half(),
    lambda m, d: m.arange(3.0).to(d).reshape(3, 1).expand(3, 2).float(),
    lambda m, d: m.tensor([1.5]).to(d).numpy().tolist(),
    lambda m, d: m.tensor([1.0], dtype=d).requires_grad_().requires_grad,
])
def test_16_bit_floats_match_pytorch(call, dtype):
    _same(lambda m: call(m, getattr(m, dtype)))


@requires_torch
def test_16_bit_methods_and_promotion_match_pytorch():
    _same(lambda m: m.tensor([0.1, 70000.0]).half())
    _same(lambda m: m.tensor([0.1, 3.0e38]).bfloat16())
    _same(lambda m: (m.half, m.float16 is m.half, m.bfloat16.itemsize, m.float16.is_signed))
    for a in ("float16", "bfloat16"):
        for b in ("float16", "bfloat16", "float32", "float64", "int64", "bool"):
            _same(lambda m, a=a, b=b: m.promote_types(getattr(m, a), getattr(m, b)))


def test_float16_casts_agree_with_numpy_bit_for_bit():
    """Every float16 bit pattern widens exactly; float32 values (all exponents, ties, both
    signs, nan and inf) round to nearest even as NumPy's float32 -> float16 cast does."""
    bits = np.arange(2**16, dtype=np.uint16)
    h = ng.from_numpy(bits.view(np.float16).copy())
    ours = h.float().numpy()
    ref = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan)
    assert np.array_equal(ours[~nan].view(np.uint32), ref[~nan].view(np.uint32))
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ties = (bits.view(np.float16).astype(np.float32).view(np.uint32) + (1 << 12)).view(
        np.float32)
    x = np.concatenate([x, ties, np.array([np.inf, -np.inf, 65520.0, 65519.996], np.float32)])
    x = x[~np.isnan(x)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref16 = x.astype(np.float16)
    assert np.array_equal(ng.from_numpy(x).half().numpy().view(np.uint16), ref16.view(np.uint16))


@requires_torch
def test_bfloat16_rounding_matches_pytorch_bit_for_bit():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([x, (np.arange(2**16, dtype=np.uint32) << 16) | (1 << 15)]).view(
        np.float32)
    ours = ng.from_numpy(x).bfloat16()._data.view(np.uint16)
    theirs = torch.from_numpy(x).bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(ours, theirs)
    back = ng.from_numpy(x).bfloat16().float().numpy()
    ref = torch.from_numpy(x).bfloat16().float().numpy()
    assert np.array_equal(back.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_tensors_save_and_load(dtype):
    d = getattr(ng, dtype)
    x = ng.tensor([[0.1, -2.5, 1e4], [3.0, 0.0, -0.0]], dtype=d)
    buf = io.BytesIO()
    ng.save({"x": x, "t": x.t(), "d": d}, buf)
    buf.seek(0)
    back = ng.load(buf)
    assert back["d"] is d and back["x"].dtype is d and back["t"].dtype is d
    assert back["x"].float().tolist() == x.float().tolist()
    assert back["t"].float().tolist() == x.t().float().tolist()


def test_16_bit_gradient_flows_back_through_the_cast():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.half()
    y.backward(ng.tensor([0.5, 1.0, 1e-8]).half())
    assert x.grad.dtype is ng.float32
    assert x.grad.tolist() == [0.5, 1.0, 0.0]


# ---------------------------------------------------------------------------- gradgradcheck


@requires_torch
def test_gradgradcheck_draws_grad_outputs_as_pytorch(monkeypatch):
    """Uniform [-1, 1) grad_outputs from the global generator (PyTorch's make_tensor draws),
    one output after another, leaving the generator in PyTorch's state."""
    seen = []
    grad = ng.autograd.grad

    def recording(outputs, inputs, grad_outputs=None, **kw):
        if grad_outputs is not None and not seen:
            seen.append([g.tolist() for g in grad_outputs])
        return grad(outputs, inputs, grad_outputs, **kw)

    monkeypatch.setattr(ng.autograd, "grad", recording)
    after = []
    for m in (ng, torch):
        x = m.tensor(np.linspace(0.2, 1.0, 6).reshape(2, 3), dtype=m.float64,
                     requires_grad=True)

        def f(a):
            return (a * a).sum(1), a.exp()

        m.manual_seed(5)
        assert m.autograd.gradgradcheck(f, (x,))
        after.append(m.rand(4, dtype=m.float64).tolist())
    torch.manual_seed(5)
    draws = [torch.empty(2, dtype=torch.float64).uniform_(-1, 1).tolist(),
             torch.empty(2, 3, dtype=torch.float64).uniform_(-1, 1).tolist()]
    assert seen[0] == draws
    assert after[0] == after[1]


# ---------------------------------------------------------------------------- utils.data


def test_utils_data_submodules():
    import numgrad.utils.data as data
    from numgrad.utils.data import DataLoader, RandomSampler, TensorDataset
    from numgrad.utils.data.dataloader import DataLoader as DL
    from numgrad.utils.data.dataloader import default_collate
    from numgrad.utils.data.dataset import Dataset, Subset, random_split
    from numgrad.utils.data.sampler import BatchSampler, Sampler, SequentialSampler

    assert DL is DataLoader is ng.utils.data.DataLoader is data.dataloader.DataLoader
    assert RandomSampler is data.sampler.RandomSampler
    for cls in (Dataset, Subset, BatchSampler, Sampler, SequentialSampler):
        assert getattr(data, cls.__name__) is cls
    assert random_split is data.random_split and default_collate is data.default_collate
    loader = DataLoader(TensorDataset(ng.arange(6.0)), batch_size=4)
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]


# --- 16-bit storage: clear errors where numgrad does not compute, copies that keep the bits


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", [lambda x: x + 1, lambda x: x.sum(), lambda x: x.exp(),
                                lambda x: ng.cat([x, x]), lambda x: x.mean(1),
                                lambda x: ng.nn.functional.relu(x)])
def test_computing_in_16_bit_raises_one_clear_error(dtype, op):
    x = ng.arange(6.0).view(2, 3).to(getattr(ng, dtype))
    with pytest.raises(RuntimeError, match="does not compute in them yet"):
        op(x)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_clone_contiguous_and_module_casts_keep_values(dtype):
    dt = getattr(ng, dtype)
    x = ng.tensor([[0.1, 2.5, -3.0], [1e-3, 7.0, 65504.0]]).to(dt)
    for y in (x.clone(), x.t().contiguous().t(), x.t().clone().t()):
        assert y.dtype == dt
        assert ng.equal(y.float(), x.float())
    m = ng.nn.Linear(3, 2)
    w = m.weight.detach().clone()
    m.to(dt)
    assert m.weight.dtype == dt
    m.float()
    assert ng.equal(m.weight.detach(), w.to(dt).float())


# --- out= on the arithmetic ops, cat and stack


OUT_CALLS = [
    ("add", lambda m, a, b, o: m.add(a, b, alpha=2, out=o)),
    ("sub", lambda m, a, b, o: m.sub(a, b, out=o)),
    ("mul", lambda m, a, b, o: m.mul(a, 3, out=o)),
    ("div", lambda m, a, b, o: m.div(a, b, out=o)),
    ("div floor", lambda m, a, b, o: m.div(a, b, rounding_mode="floor", out=o)),
    ("cat", lambda m, a, b, o: m.cat([a, b], 1, out=o)),
    ("stack", lambda m, a, b, o: m.stack([a, b], out=o)),
]


@requires_torch
@pytest.mark.parametrize("name, call", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
@pytest.mark.parametrize("out_dtype", ["float32", "float64", "int64"])
def test_out_argument_of_arithmetic_and_joins_matches_pytorch(name, call, out_dtype):
    a = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2.0, np.float32)
    results = []
    for m in (ng, torch):
        out = m.zeros(1, dtype=getattr(m, out_dtype))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the resize warning, checked elsewhere
                r = call(m, m.tensor(a), m.tensor(b), out)
            assert r is out
            results.append((str(out.dtype), out.numpy().tolist()))
        except (RuntimeError, TypeError) as e:
            results.append((type(e).__name__, str(e)))
    assert results[0] == results[1]


@requires_torch
def test_out_argument_refuses_inputs_that_require_grad_as_pytorch():
    msgs = []
    for m in (ng, torch):
        x = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            m.add(x, 1, out=m.empty(3))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@requires_torch
def test_pin_memory_without_an_accelerator_warns_as_pytorch():
    if torch.cuda.is_available() or ng.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    seen = []
    for m in (ng, torch):
        ds = m.utils.data.TensorDataset(m.arange(6))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            it = iter(m.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
        seen.append(([str(w.message) for w in caught], next(it)[0].tolist()))
    assert seen[0] == seen[1] and seen[0][0]
