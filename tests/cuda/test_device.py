"""The CUDA device as PyTorch users meet it: creating and moving tensors, errors, printing,
interop through ``__cuda_array_interface__``, modules and saving."""

import io

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

CUDA0 = ng.device("cuda", 0)
MIXED = ("Expected all tensors to be on the same device, but found at least two devices, "
         "cuda:0 and cpu!")


def test_cuda_module_reports_one_device():
    assert ng.cuda.is_available()
    assert ng.cuda.device_count() == 1
    assert ng.cuda.current_device() == 0
    ng.cuda.synchronize()
    assert isinstance(ng.cuda.get_device_name(), str)


@pytest.mark.parametrize("spec", ["cuda", "cuda:0", ng.device("cuda"), CUDA0, 0])
def test_every_factory_takes_a_cuda_device(spec):
    for t in (ng.zeros(2, 3, device=spec), ng.ones(2, device=spec),
              ng.full((2,), 7.0, device=spec), ng.empty(3, device=spec),
              ng.tensor([1.0, 2.0], device=spec), ng.arange(4, device=spec),
              ng.rand(2, device=spec), ng.randn(2, device=spec),
              ng.randint(0, 5, (3,), device=spec), ng.eye(2, device=spec),
              ng.linspace(0, 1, 3, device=spec)):
        assert t.device == CUDA0 and t.is_cuda
    assert ng.full((2,), 7.0, device=spec).tolist() == [7.0, 7.0]
    assert ng.ones(2, 2, device=spec).sum().item() == 4.0


def test_like_factories_follow_the_input_device():
    x = ng.ones(2, 3, device="cuda")
    for t in (ng.zeros_like(x), ng.ones_like(x), ng.empty_like(x), ng.rand_like(x),
              ng.full_like(x, 2.0), x.new_zeros(4), x.new_ones(1), x.new_full((2,), 3.0),
              x.new_tensor([1.0])):
        assert t.is_cuda
    assert not ng.zeros_like(x, device="cpu").is_cuda


def test_moving_tensors_between_devices():
    x = ng.tensor([[1.0, 2.0], [3.0, 4.0]])
    g = x.to("cuda")
    assert g.is_cuda and not x.is_cuda
    assert g.cuda() is g and x.cpu() is x
    assert g.cpu().tolist() == x.tolist()
    assert x.cuda().device == CUDA0
    assert x.to(g).is_cuda and g.to(x).device == ng.device("cpu")
    assert g.to("cpu", ng.float64).dtype is ng.float64
    h = g.to(ng.float64)
    assert h.is_cuda and h.dtype is ng.float64
    assert g.type() == "torch.cuda.FloatTensor"
    assert g[1, 0].item() == 3.0 and float(g[0, 1]) == 2.0 and bool(g[0, 0])


def test_device_copies_are_differentiable_both_ways():
    a = ng.ones(2, 3, requires_grad=True)
    b = a.cuda()
    assert type(b.grad_fn).__name__ == "ToCopyBackward0"
    (b * 3).sum().backward()
    assert not a.grad.is_cuda and a.grad.tolist() == [[3.0] * 3] * 2
    c = ng.ones(2, device="cuda", requires_grad=True)
    (c.cpu() * 2).sum().backward()
    assert c.grad.is_cuda and c.grad.tolist() == [2.0, 2.0]


def test_data_stays_on_the_gpu_through_backward():
    x = ng.randn(3, 4, device="cuda", requires_grad=True)
    w = ng.randn(4, 2, device="cuda", requires_grad=True)
    y = (x @ w).relu().mean()
    assert y.is_cuda
    y.backward()
    assert x.grad.is_cuda and w.grad.is_cuda


def test_mixed_devices_raise_pytorchs_error():
    a = ng.ones(3)
    b = ng.ones(3, device="cuda")
    for fn in (lambda: a + b, lambda: b * a, lambda: ng.cat([a, b]), lambda: ng.mm(
            ng.ones(2, 3), ng.ones(3, 2, device="cuda")), lambda: ng.where(b > 0, a, b)):
        with pytest.raises(RuntimeError, match=MIXED.replace("(", r"\(").replace("!", "!")):
            fn()


def test_cpu_scalar_tensors_mix_with_cuda_tensors():
    b = ng.ones(3, device="cuda")
    r = b * ng.tensor(2.0)
    assert r.is_cuda and r.tolist() == [2.0, 2.0, 2.0]


def test_numpy_needs_cpu_first():
    g = ng.ones(2, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy. Use "
                                        "Tensor.cpu\\(\\) to copy the tensor to host memory "
                                        "first."):
        g.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0"):
        np.asarray(g)
    assert g.cpu().numpy().tolist() == [1.0, 1.0]


def test_printing_shows_the_device():
    g = ng.tensor([1.0, 2.0], device="cuda")
    assert repr(g) == "tensor([1., 2.], device='cuda:0')"
    assert repr(g.requires_grad_()) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(ng.tensor([1, 2], dtype=ng.int32, device="cuda")) == \
        "tensor([1, 2], device='cuda:0', dtype=torch.int32)"
    assert "grad_fn=<MulBackward0>" in repr(g * 2)


class _Foreign:
    """Another library's GPU array: only its ``__cuda_array_interface__``."""

    def __init__(self, desc, owner):
        self.__cuda_array_interface__ = desc
        self.owner = owner


def test_cuda_array_interface_exports_and_imports_zero_copy():
    g = ng.arange(6, dtype=ng.float32, device="cuda").reshape(2, 3)
    desc = g.__cuda_array_interface__
    assert desc["shape"] == (2, 3) and desc["typestr"] == "<f4" and desc["version"] == 3
    assert desc["data"][0] == g.data_ptr()
    t = ng.as_tensor(_Foreign(desc, g))  # a view of the same memory
    assert t.is_cuda and t.tolist() == g.tolist()
    t.add_(1.0)
    assert g.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    col = ng.as_tensor(_Foreign(g.t().__cuda_array_interface__, g))  # strided views too
    assert col.tolist() == g.t().tolist()
    c = ng.tensor(_Foreign(desc, g))  # tensor() copies
    c.mul_(0)
    assert g.sum().item() == 21.0


def test_numba_device_arrays_convert_both_ways():
    from numba import cuda
    src = cuda.to_device(np.arange(4, dtype=np.float64))
    t = ng.as_tensor(src)
    assert t.is_cuda and t.dtype is ng.float64 and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    t.add_(1.0)  # shares memory with the Numba array
    assert src.copy_to_host().tolist() == [1.0, 2.0, 3.0, 4.0]
    if hasattr(cuda, "as_cuda_array"):  # not in the simulator
        back = cuda.as_cuda_array(t)
        assert back.copy_to_host().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_cuda_array_interface_refuses_tensors_that_require_grad():
    g = ng.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't get __cuda_array_interface__ on Variable that "
                                           "requires grad"):
        _ = g.__cuda_array_interface__
    assert "data" in g.detach().__cuda_array_interface__
    assert not hasattr(ng.ones(2), "__cuda_array_interface__")


def test_module_to_cuda_keeps_parameters_and_moves_buffers():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    params = list(m.parameters())
    assert m.to("cuda") is m
    assert [p is q for p, q in zip(params, m.parameters())] == [True] * 4
    assert all(p.is_cuda for p in m.parameters())
    assert all(b.is_cuda for b in m.buffers())
    out = m(ng.randn(4, 3, device="cuda"))
    assert out.is_cuda
    m.cpu()
    assert not any(p.is_cuda for p in m.parameters())


def test_save_and_load_keep_the_device():
    g = ng.tensor([1.0, 2.0], device="cuda")
    buf = io.BytesIO()
    ng.save({"g": g, "c": g.cpu()}, buf)
    buf.seek(0)
    back = ng.load(buf)
    assert back["g"].is_cuda and not back["c"].is_cuda
    assert back["g"].tolist() == [1.0, 2.0]
    buf.seek(0)
    assert not ng.load(buf, map_location="cpu")["g"].is_cuda


def test_inplace_ops_and_item_assignment_on_cuda():
    g = ng.zeros(2, 3, device="cuda")
    g[0] = 1.0
    g[1, 1:] = ng.tensor([5.0, 6.0])
    g[:, 0] += 2
    assert g.tolist() == [[3.0, 1.0, 1.0], [2.0, 5.0, 6.0]]
    g.zero_()
    assert g.sum().item() == 0.0
    h = ng.ones(3, device="cuda", requires_grad=True)
    k = h * 1
    k[1] = 4.0
    k.sum().backward()
    assert h.grad.tolist() == [1.0, 0.0, 1.0]


def test_cuda_index_tensors():
    x = ng.arange(12.0, device="cuda").reshape(3, 4)
    i = ng.tensor([2, 0], device="cuda")
    assert x[i].tolist() == [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
    assert x.gather(1, ng.tensor([[0], [1], [3]], device="cuda")).tolist() == [[0.0], [5.0],
                                                                              [11.0]]
    assert x[x > 9].tolist() == [10.0, 11.0]
    assert ng.nonzero(x[0]).tolist() == [[1], [2], [3]]


def test_kernels_called_on_either_device_have_a_cuda_twin():
    # ops call ``K.name(data, ...)`` whatever the device: each name a CPU kernel module lists
    # in EITHER_DEVICE is one the CUDA module of the same name launches, and the handle's
    # launcher runs the CPU kernel for NumPy data and the twin for CUDA data
    import importlib
    import pkgutil

    from numgrad import kernels
    from numgrad.kernels import cpu

    listed = 0
    for info in pkgutil.iter_modules(cpu.__path__):
        mod = importlib.import_module(f"numgrad.kernels.cpu.{info.name}")
        for name in getattr(mod, "EITHER_DEVICE", ()):
            twin = importlib.import_module(f"numgrad.kernels.cuda.{info.name}")
            assert callable(getattr(twin, name)), (info.name, name)
            listed += 1
    assert listed >= 30
    x = np.array([0.0, 2.0, 1.0])
    nn_k = kernels.LazyKernels("nn")
    assert nn_k.first_outside.kernel is importlib.import_module(
        "numgrad.kernels.cpu.nn").first_outside
    assert nn_k.first_outside(x, 0.0, 1.5) == 1
    assert nn_k.first_outside(ng.tensor(x, device="cuda")._data, 0.0, 1.5) == 1
