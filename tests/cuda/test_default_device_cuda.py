"""``set_default_device("cuda")``, ``numgrad.accelerator``, the memory statistics and the
legacy CUDA tensor types with a (real or simulated) GPU."""

import gc

import numpy as np
import pytest

import numgrad as ng

CUDA0 = ng.device("cuda", 0)


@pytest.fixture
def default_cuda():
    ng.set_default_device("cuda")
    yield
    ng.set_default_device(None)


@pytest.mark.usefixtures("default_cuda")
def test_factories_create_on_the_default_device():
    assert ng.get_default_device() == CUDA0
    for t in (ng.zeros(2), ng.ones(2, 2), ng.empty(3), ng.full((2,), 1.5), ng.tensor([1.0]),
              ng.as_tensor([1, 2]), ng.arange(3), ng.randn(2), ng.rand(2), ng.eye(2),
              ng.linspace(0, 1, 3), ng.randperm(3), ng.tensor(ng.ones(1, device="cpu"))):
        assert t.device == CUDA0, t
    cpu = ng.from_numpy(np.ones(2, np.float32))
    assert cpu.device.type == "cpu"
    assert ng.zeros_like(cpu).device.type == "cpu"  # *_like follow their input
    assert ng.zeros(2, device="cpu").device.type == "cpu"
    assert ng.FloatTensor([1.0]).device.type == "cpu"  # legacy constructors: their own type
    layer = ng.nn.Linear(3, 2)
    assert layer.weight.device == CUDA0
    assert layer(ng.ones(4, 3)).device == CUDA0


def test_default_device_resets_to_the_cpu():
    ng.set_default_device("cuda:0")
    ng.set_default_device(None)
    assert ng.get_default_device() == ng.device("cpu")
    assert ng.zeros(1).device.type == "cpu"
    ng.set_default_device(0)
    assert ng.get_default_device() == CUDA0
    ng.set_default_device("cpu")
    assert ng.zeros(1).device.type == "cpu"


def test_accelerator_answers_for_cuda():
    assert ng.accelerator.is_available()
    assert ng.accelerator.current_accelerator() == ng.device("cuda")
    assert ng.accelerator.device_count() == 1
    assert ng.accelerator.current_device_index() == 0
    ng.accelerator.synchronize()


def test_memory_statistics_follow_live_buffers():
    gc.collect()
    ng.cuda.reset_peak_memory_stats()
    base = ng.cuda.memory_allocated()
    x = ng.ones(1000, device="cuda")
    assert ng.cuda.memory_allocated() == base + 4000
    y = x * 2
    assert ng.cuda.memory_allocated() == base + 8000
    del y
    gc.collect()
    assert ng.cuda.memory_allocated() == base + 4000
    assert ng.cuda.max_memory_allocated() == base + 8000
    ng.cuda.reset_peak_memory_stats()
    assert ng.cuda.max_memory_allocated() == base + 4000
    del x


def test_legacy_cuda_types():
    x = ng.ones(2, device="cuda")
    assert isinstance(x, ng.cuda.FloatTensor) and not isinstance(x, ng.FloatTensor)
    assert x.type() == "torch.cuda.FloatTensor"
    assert x.type(ng.cuda.LongTensor).device == CUDA0
    assert x.type(ng.LongTensor).device.type == "cpu"
    assert ng.cuda.DoubleTensor([1.0, 2.0]).device == CUDA0
    assert ng.cuda.FloatTensor(2, 3).shape == (2, 3)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cuda"):
        ng.cuda.FloatTensor([1.0], device="cpu")


def test_random_fills_of_cuda_tensors_draw_the_cpu_stream():
    ng.manual_seed(0)
    a = ng.empty(5, device="cuda").uniform_(-1, 1).cpu().tolist()
    ng.manual_seed(0)
    assert a == ng.empty(5).uniform_(-1, 1).tolist()
