"""``DataParallel`` and ``data_parallel`` as PyTorch runs them with one device or none:
without a GPU the wrapper calls its module as it is; with numgrad's one GPU it moves the
module and the inputs' tensors to ``cuda:0`` and calls it there. ``state_dict`` keys carry
the ``module.`` prefix, as PyTorch's."""

import itertools

from numgrad import cuda
from numgrad.nn.modules.module import Module
from numgrad.tensor import Tensor


def _device_index(d):
    if isinstance(d, int):
        return d
    index = getattr(d, "index", None)
    return 0 if index is None else index


def _one_device(device_ids, output_device):
    """The checked device index (numgrad drives one GPU: ``cuda:0``)."""
    ids = [0] if device_ids is None else [_device_index(d) for d in device_ids]
    if not ids:
        raise RuntimeError("no available devices were found")
    out = ids[0] if output_device is None else _device_index(output_device)
    for i in (*ids, out):
        if i != 0:
            raise RuntimeError(f"numgrad drives one GPU (cuda:0); device {i} is not available")
    return ids, out


def _to_device(obj, device):
    """``obj`` with every tensor in it (through tuples, lists and dicts) moved to ``device``."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to_device(v, device) for v in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _check_on(module, device):
    for t in itertools.chain(module.parameters(), module.buffers()):
        if str(t.device) != device:
            raise RuntimeError("module must have its parameters and buffers on device "
                               f"{device} (device_ids[0]) but found one of them on device: "
                               f"{t.device}")


class DataParallel(Module):
    """Runs ``module`` on the one device there is (no replicas, no scatter across devices)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        ids, out = _one_device(device_ids, output_device)
        self.dim = dim
        self.module = module
        self.device_ids = ids
        self.output_device = out
        self.src_device_obj = "cuda:0"
        self.module.to("cuda:0")

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_on(self.module, self.src_device_obj)
        return self.module(*_to_device(inputs, "cuda:0"), **_to_device(kwargs, "cuda:0"))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """``module(*inputs, **module_kwargs)`` on the GPU (``cuda:0``), as PyTorch's with one
    device; without a GPU, PyTorch's error."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not cuda.is_available():
        raise RuntimeError("device type could not be determined")
    _one_device(device_ids, output_device)
    _check_on(module, "cuda:0")
    return module(*_to_device(inputs, "cuda:0"), **_to_device(module_kwargs or {}, "cuda:0"))
