"""numgrad: PyTorch's autograd API over Numba kernels. ``import numgrad as torch``.

Importing numgrad compiles nothing and does not import Numba; kernels load and compile on
first use and are cached on disk (see ``numgrad.kernels._jit``).
"""

import builtins as _builtins
import math as _math
import os as _os
import sys as _sys

# OpenBLAS (NumPy's BLAS) keeps its helper threads spinning for ~2^28 cycles after each call;
# on small machines they then starve numgrad's own kernel threads (a 2.5-4x slower CNN step
# on 2 cores). Unless the user chose otherwise, let them sleep right away. OpenBLAS reads the
# variable when it loads; if NumPy was imported first, numgrad.kernels.cpu._openblas makes it
# read it again when the first CPU kernel loads. It never changes results.
from numgrad import _startup  # noqa: I001,E402  (first: it notes whether NumPy came first)

from numgrad import autograd  # noqa: I001,E402  (autograd first: it wires tensor <-> graph)
from numgrad._version import __version__
from numgrad import _dtype
from numgrad._dtype import (
    bfloat16,
    bool_ as bool,  # noqa: A004
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from numgrad._device import device
from numgrad._shape import Size
from numgrad.tensor import Tensor
from numgrad import ops as _ops

globals().update(_ops.registry.namespace())  # every op: numgrad.add, numgrad.tanh, numgrad.tanh_
from numgrad._factories import (
    arange, as_tensor, asarray, empty, empty_like, eye, from_numpy, full, full_like, linspace,
    logspace, ones, ones_like, rand, rand_like, randint, randint_like, randn,
    randn_like, randperm, scalar_tensor, tensor, zeros, zeros_like,
)
from numgrad.random import Generator, default_generator, get_rng_state, initial_seed
from numgrad.random import manual_seed, seed, set_rng_state
from numgrad.autograd.grad_mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)
from numgrad._printing import set_printoptions
from numgrad._finfo import finfo, iinfo
from numgrad._memory_format import (channels_last, channels_last_3d, contiguous_format,
                                     memory_format, preserve_format)
from numgrad.serialization import load, save
from numgrad._dlpack import from_dlpack
from numgrad import cuda, nn, optim, utils, viz  # noqa: E402  (after the namespace they build on)
from numgrad import accelerator, testing  # noqa: E402
from numgrad import profiler  # noqa: E402
from numgrad import distributions, multiprocessing  # noqa: E402
from numgrad import onnx  # noqa: E402  (light: the onnx package loads in export())
from numgrad import func  # noqa: E402
from numgrad import special  # noqa: E402
from numgrad.func import vmap  # noqa: E402
from numgrad._tensortype import CPU_TYPES as _CPU_TYPES
from numgrad._factories import get_default_device, set_default_device

globals().update(_CPU_TYPES)  # FloatTensor, DoubleTensor, LongTensor, ... (legacy types)
inf = _math.inf
nan = _math.nan
pi = _math.pi
e = _math.e
newaxis = None
half = float16
from numgrad import amp, backends
from numgrad.amp import autocast, get_autocast_dtype, is_autocast_enabled

float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    if not isinstance(input, Tensor):
        raise TypeError("is_complex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_complex()


def numel(input):
    return input.numel()


def detach(input):
    return input.detach()


def precompile():
    """Compile (or load from the disk cache) the kernels of the common float32/float64 ops,
    so the first real call pays no compile time."""
    from numgrad._warmup import warmup
    warmup()


def _thread_count(n):
    if n.__class__ is not _builtins.int:  # numgrad.int is the dtype
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    return n


def set_num_threads(int):  # noqa: A002  (PyTorch's parameter name)
    """Threads for numgrad's parallel CPU kernels (at most Numba's ``NUMBA_NUM_THREADS``) and,
    as PyTorch's setting covers its BLAS, for the matrix products (NumPy's OpenBLAS)."""
    n = _thread_count(int)
    import numba

    import numgrad.kernels.cpu  # noqa: F401  (starts Numba's threads with numgrad's settings)
    from numgrad.kernels.cpu._openblas import set_threads
    numba.set_num_threads(_builtins.min(n, numba.config.NUMBA_NUM_THREADS))
    set_threads(n)


def get_num_threads():
    """Threads used by numgrad's parallel CPU kernels."""
    import numba

    import numgrad.kernels.cpu  # noqa: F401
    return numba.get_num_threads()


def __getattr__(name):
    """``numgrad.compile`` (PyTorch's name) loads the compiler on first use, not at import."""
    if name == "compile":
        from numgrad._compile.api import compile
        globals()["compile"] = compile
        return compile
    raise AttributeError(f"module 'numgrad' has no attribute {name!r}")


__all__ = [n for n in dir() if not n.startswith("_")] + ["compile"]
