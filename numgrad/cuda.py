"""``numgrad.cuda``: the GPU, as ``torch.cuda`` reports it.

Nothing here loads Numba's CUDA driver until a function is called. Without an NVIDIA GPU
(or Numba's CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``) ``is_available()`` is False and
asking for a CUDA tensor raises PyTorch's "Torch not compiled with CUDA enabled".
"""

from numgrad import _device
from numgrad.amp import cuda_amp as amp  # noqa: F401  (``torch.cuda.amp.GradScaler``)


def is_available():
    return _device.cuda_available()


def device_count():
    return 1 if is_available() else 0


def _require():
    _device.get("cuda")


def current_device():
    _require()
    return 0


def is_initialized():
    return bool(_device._AVAILABLE) and _device._AVAILABLE[0]


def get_device_name(device=None):
    _require()
    from numgrad.kernels.cuda import _launch
    if _launch.SIM:
        return "Numba CUDA simulator"
    from numba import cuda
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None):
    _require()
    from numgrad.kernels.cuda import _launch
    if _launch.SIM:
        return (0, 0)
    from numba import cuda
    return tuple(cuda.get_current_device().compute_capability)


def synchronize(device=None):
    """Wait for every queued kernel to finish (timings need this; results never do, since
    every device-to-host copy waits for the kernels before it)."""
    _require()
    from numgrad.kernels.cuda import _launch
    _launch.synchronize()


def empty_cache():
    """Free now the device memory of arrays already released (Numba defers those frees)."""
    if is_available():
        from numgrad.kernels.cuda import _launch
        _launch.release_cached()


def is_bf16_supported(including_emulation=True):
    """numgrad has no bfloat16 kernels on any device."""
    return False


def manual_seed(seed):
    """CUDA tensors draw their random numbers from numgrad's (CPU) default generator, so
    ``numgrad.manual_seed`` seeds them; this keeps PyTorch scripts running unchanged."""


manual_seed_all = manual_seed


# --- memory statistics: bytes of device buffers numgrad allocated and has not released yet
# (PyTorch's caching allocator counts the same: what live tensors occupy); 0 without a GPU


def _stats():
    import sys
    launch = sys.modules.get("numgrad.kernels.cuda._launch")  # no tensor made: nothing used
    return launch.MEMORY if launch is not None else None


def memory_allocated(device=None):
    stats = _stats()
    return stats[0] if stats is not None else 0


def max_memory_allocated(device=None):
    stats = _stats()
    return stats[1] if stats is not None else 0


def reset_peak_memory_stats(device=None):
    stats = _stats()
    if stats is not None:
        stats[1] = stats[0]


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def memory_reserved(device=None):
    return memory_allocated(device)


def max_memory_reserved(device=None):
    return max_memory_allocated(device)


def _legacy_types():
    from numgrad._tensortype import CUDA_TYPES
    globals().update(CUDA_TYPES)  # numgrad.cuda.FloatTensor, ...


_legacy_types()
