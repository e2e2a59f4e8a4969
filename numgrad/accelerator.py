"""``numgrad.accelerator``: the current accelerator, as ``torch.accelerator`` reports it.

numgrad's only accelerator is CUDA (``numgrad.cuda``): with a GPU (or Numba's CUDA simulator)
these answer for it, otherwise ``is_available()`` is False, ``current_accelerator()`` is None,
``device_count()`` is 0 and the functions that need a device raise PyTorch's RuntimeError.
"""

from numgrad import _device

_NONE = "Cannot access accelerator device when none is available."

__all__ = ["current_accelerator", "current_device_index", "device_count", "empty_cache",
           "is_available", "max_memory_allocated", "memory_allocated", "reset_peak_memory_stats",
           "set_device_index", "synchronize"]


def is_available():
    return _device.cuda_available()


def current_accelerator(check_available=False):
    """``device(type='cuda')`` when a GPU is there, else None."""
    return _device.device("cuda") if _device.cuda_available() else None


def device_count():
    return 1 if _device.cuda_available() else 0


def _require():
    if not _device.cuda_available():
        raise RuntimeError(_NONE)


def current_device_index():
    _require()
    return 0


current_device_idx = current_device_index


def set_device_index(device):
    _require()
    _device.get(device)


set_device_idx = set_device_index


def synchronize(device=None):
    _require()
    from numgrad import cuda
    cuda.synchronize()


def empty_cache():
    _require()
    from numgrad import cuda
    cuda.empty_cache()


def memory_allocated(device_index=None):
    _require()
    from numgrad import cuda
    return cuda.memory_allocated()


def max_memory_allocated(device_index=None):
    _require()
    from numgrad import cuda
    return cuda.max_memory_allocated()


def reset_peak_memory_stats(device_index=None):
    _require()
    from numgrad import cuda
    cuda.reset_peak_memory_stats()
