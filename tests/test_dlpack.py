"""DLPack: ``Tensor.__dlpack__``/``__dlpack_device__``, ``numgrad.from_dlpack`` and
``numgrad.utils.dlpack`` share memory with NumPy and PyTorch on the CPU, both ways, with
PyTorch's errors for tensors that require grad and for streams on the CPU; CUDA tensors share
through ``__cuda_array_interface__`` (checked on the simulator)."""

import numpy as np
import pytest
from conftest import raised, requires_torch, run_on_simulator, torch

import numgrad as ng

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]


def _sample(dtype):
    t = ng.tensor([[0, 1, 0], [1, 1, 0]]).to(getattr(ng, dtype))
    return t


def _ptr(a):
    return a.__array_interface__["data"][0]


def test_numpy_shares_memory_both_ways():
    t = ng.arange(6.).reshape(2, 3)
    a = np.from_dlpack(t)
    assert _ptr(a) == _ptr(t.numpy())
    a[0, 0] = 42
    assert t.tolist() == [[42, 1, 2], [3, 4, 5]]
    n = np.arange(4, dtype=np.int32)
    g = ng.from_dlpack(n)
    g[1] = -7
    assert n.tolist() == [0, -7, 2, 3] and g.dtype is ng.int32


def test_views_keep_their_strides_and_sizes_edge_cases():
    s = ng.arange(12.).reshape(3, 4).t()[::2]
    assert np.from_dlpack(s).strides == (8, 16)  # float32
    e = ng.ones(3)[None].expand(4, 3)
    assert np.from_dlpack(e).strides == (0, 4)
    assert ng.from_dlpack(np.zeros(())).shape == () and ng.from_dlpack(np.zeros((0, 2))).shape \
        == (0, 2)


def test_read_only_numpy_memory_is_copied():
    # numgrad's kernels write through any tensor, so read-only memory is not shared
    ro = np.ones(2)
    ro.flags.writeable = False
    g = ng.from_dlpack(ro)
    g[0] = 5
    assert ro.tolist() == [1, 1] and g.tolist() == [5, 1]


def test_copy_and_device_keywords():
    a = np.ones(2)
    ng.from_dlpack(a, copy=True)[0] = 5
    ng.from_dlpack(a, device="cpu")[1] = 7
    assert a.tolist() == [1, 7]
    with pytest.raises(AssertionError, match="unsupported device type: <class 'int'>"):
        ng.from_dlpack(a, device=3)


def test_the_device_and_the_capsule_helpers():
    t = ng.ones(2)
    assert t.__dlpack_device__() == (ng.utils.dlpack.DLDeviceType.kDLCPU, 0)
    capsule = ng.utils.dlpack.to_dlpack(t)
    assert "dltensor" in repr(capsule)
    back = ng.utils.dlpack.from_dlpack(capsule)
    back[0] = 3
    assert t.tolist() == [3, 1]
    with pytest.raises(RuntimeError, match="consumed only once"):
        ng.from_dlpack(capsule)
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    c = t.__dlpack__(copy=True)
    np.from_dlpack(ng.from_dlpack(c))[0] = 9
    assert t.tolist() == [3, 1]


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_pytorch_shares_memory_both_ways(dtype):
    t = _sample(dtype)
    theirs = torch.from_dlpack(t)
    assert theirs.dtype is getattr(torch, dtype) and theirs.tolist() == t.tolist()
    theirs[0, 0] = 1
    assert t.tolist()[0][0] == 1
    x = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    ours = ng.from_dlpack(x)
    assert ours.dtype is getattr(ng, dtype) and ours.shape == (2, 3)
    x[1, 2] = 1
    assert ours.tolist()[1][2] == 1


@requires_torch
def test_pytorch_strides_and_capsules():
    x = torch.arange(12.).reshape(3, 4).t()
    ours = ng.from_dlpack(x)
    assert ours.stride() == (1, 4) and ours.tolist() == x.tolist()
    s = ng.arange(12.).reshape(3, 4).t()[::2]
    assert torch.from_dlpack(s).stride() == s.stride() == (2, 4)
    assert ng.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(2))).tolist() == [1, 1]
    assert torch.from_dlpack(ng.utils.dlpack.to_dlpack(ng.ones(2))).tolist() == [1, 1]
    assert ng.ones(2).__dlpack_device__() == torch.ones(2).__dlpack_device__()


@requires_torch
@pytest.mark.parametrize("kwargs", [{}, {"stream": None}, {"stream": -1}, {"stream": 1},
                                    {"stream": "s"}])
def test_errors_are_pytorchs(kwargs):
    assert raised(ng.ones(2, requires_grad=True).__dlpack__, **kwargs) == raised(
        torch.ones(2, requires_grad=True).__dlpack__, **kwargs)
    assert raised(ng.ones(2).__dlpack__, **kwargs) == raised(torch.ones(2).__dlpack__, **kwargs)
    assert raised(ng.from_dlpack, [1, 2]) == raised(torch.from_dlpack, [1, 2])


CUDA_SCRIPT = """
import numgrad as ng
t = ng.arange(4., device="cuda")
assert t.__dlpack_device__() == (2, 0), t.__dlpack_device__()
try:
    t.__dlpack__()
    raise AssertionError("exported")
except BufferError as e:
    assert "__cuda_array_interface__" in str(e)
u = ng.from_dlpack(t)
u[0] = 7
assert u.is_cuda and t.tolist() == [7, 1, 2, 3]
print("ok")
"""


def test_cuda_tensors_share_through_the_array_interface_on_the_simulator():
    run_on_simulator(CUDA_SCRIPT)
