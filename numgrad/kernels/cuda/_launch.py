"""Compiling and launching numba.cuda kernels.

* ``kernel(template, name, **bindings)``: a lazily compiled ``cuda.jit`` copy of a kernel
  template with scalar device functions bound into its globals (as ``specialize`` does for
  the CPU loops), so one template serves every formula.
* ``device_fn(formula)``: a CPU scalar formula as a CUDA device function. The fast CPU
  helpers (``fexp``, ``ftanh``, ``fsigmoid``, ``ferf``) become CUDA's libdevice math.
* ``launch(k, n, *args)``: a 1-D grid-stride launch covering ``n`` work items. Under the
  simulator (``NUMBA_ENABLE_CUDASIM=1``) every simulated thread is a Python thread, so the
  grid is one block of 32 threads and the grid-stride loops do the rest.
"""

import atexit
import math
import os
import pickle
import sys
import types
import weakref

from numba import config, cuda

from numgrad.kernels import _bind
from numgrad.kernels._jit import guard_cache

SIM = bool(config.ENABLE_CUDASIM)
_RECIPES = {}  # id(kernel or device function) -> how to rebuild it (see "recording" below)
THREADS = 32 if SIM else 256
MAX_BLOCKS = 1 if SIM else 4096


# bytes of live device buffers and their peak (``numgrad.cuda.memory_allocated``)
MEMORY = [0, 0]


def _release(nbytes):
    MEMORY[0] -= nbytes


def account(buf):
    """Count device buffer ``buf`` in ``MEMORY`` until it is garbage collected."""
    nbytes = buf.size * buf.dtype.itemsize
    MEMORY[0] += nbytes
    if MEMORY[0] > MEMORY[1]:
        MEMORY[1] = MEMORY[0]
    weakref.finalize(buf, _release, nbytes)
    return buf


def alloc(n, dtype):
    """A new flat device buffer of ``n`` elements (at least one, so views stay valid)."""
    return account(cuda.device_array(max(n, 1), dtype=dtype))


def to_device(flat):
    """A new device buffer holding host array ``flat``."""
    return account(cuda.to_device(flat))


class _SimMath:
    """``math`` for formulas interpreted by the simulator: NumPy's versions where they exist,
    so NumPy scalars keep their type and domain errors give nan/inf as on a GPU."""

    def __getattr__(self, name):
        import numpy as np
        fn = getattr(np, name, None)
        return fn if fn is not None else getattr(math, name)


def _rebind(fn, extra=None, name=None, qualname=None):
    """A copy of function ``fn`` whose globals are its own plus ``extra`` (and, under the
    simulator, the NumPy-backed ``math``), named ``name`` and ``qualname`` when given: how a
    template becomes a kernel that sees its bindings. ``fn`` itself when nothing changes."""
    if not (SIM or extra or name or qualname):
        return fn
    g = dict(fn.__globals__)
    g.update(extra or {})
    if SIM:
        g["math"] = _SimMath()
    f = types.FunctionType(fn.__code__, g, name or fn.__name__, fn.__defaults__, fn.__closure__)
    f.__qualname__ = qualname or fn.__qualname__
    return f


def _disk_cache():
    """Cache compiled GPU kernels in numgrad's kernel cache directory (``<dir>/cuda``), keyed
    like the CPU kernels by a hash of every kernel source, so an edit anywhere invalidates
    them. The folder is held to the CPU cache's rules (this user's, mode 0700, created so),
    else the GPU cache is off with a warning. Off under the simulator and when numgrad's cache
    is off."""
    if SIM:
        return False
    from numgrad.kernels import _jit
    try:
        from numba.cuda.dispatcher import CUDACacheImpl
    except ImportError:  # Numba's built-in CUDA target: compile in memory
        return False
    classes = getattr(CUDACacheImpl, "_locator_classes", None)
    if _jit.CACHE_DIR is None or not isinstance(classes, list):
        return False
    path = os.path.join(_jit.CACHE_DIR, "cuda")
    problem = _jit.secure_dir(path)
    if problem:  # numba-cuda unpickles what it finds there: never read a folder others control
        _jit.warn_cache_off(problem, "GPU kernel")
        return False

    class _CudaLocator(_jit._NumgradCacheLocator):
        def get_cache_path(self):
            return path

    CUDACacheImpl._locator_classes = [_CudaLocator, *classes]
    return True


CACHE = _disk_cache()


def jit(fn):
    """A kernel defined directly in a module (``@jit`` instead of ``@cuda.jit``)."""
    k = guard_cache(cuda.jit(_rebind(fn), cache=CACHE))
    _RECIPES[id(k)] = ("attr", fn.__module__, fn.__name__)
    return k


def device(fn):
    """A device function defined directly in a module."""
    d = cuda.jit(device=True)(_rebind(fn))
    _RECIPES[id(d)] = ("attr", fn.__module__, fn.__name__)
    return d


def bind(module, names, helpers, owner):
    """CUDA device functions of the functions ``names`` of ``module`` written once for both
    devices (``numgrad.kernels._bind``), seeing the GPU's ``helpers`` (and, under the
    simulator, the NumPy-backed ``math``): their globals. Each is also module ``owner``'s
    attribute ``<name>_dev``, so the PTX check rebuilds it by name."""
    mod = sys.modules[owner]
    h = {"math": _SimMath()} if SIM else {}
    h.update(helpers)

    def build(name, copy):
        d = cuda.jit(device=True)(copy)
        setattr(mod, name + "_dev", d)
        _RECIPES[id(d)] = ("attr", owner, name + "_dev")
        return d
    return _bind.bind(module, names, h, build)


@device
def unravel3(t, d1, d2):
    """Coordinates (i0, i1, i2) of flat index ``t`` in a C-ordered (*, d1, d2) grid."""
    r = t // d2
    return r // d1, r % d1, t % d2


@device
def unravel4(t, d1, d2, d3):
    """Coordinates (i0, i1, i2, i3) of flat index ``t`` in a C-ordered (*, d1, d2, d3) grid."""
    i0, i1, i2 = unravel3(t // d3, d1, d2)
    return i0, i1, i2, t % d3


def kernel(template, name, **bindings):
    """A copy of ``template`` with ``bindings`` (device functions, constants) in its globals."""
    fn = _rebind(template, bindings, qualname=f"{template.__name__}__{name}")
    k = guard_cache(cuda.jit(fn, cache=CACHE))
    _RECIPES[id(k)] = ("kernel", template.__module__, template.__name__, name,
                       {b: _recipe(v) for b, v in bindings.items()})
    return k


def _sigmoid(x):
    # 1/(1+e^-|x|) or e^-|x|/(1+e^-|x|): no cancellation on either side
    z = math.exp(-abs(x))
    d = 1 + z
    return 1 / d if x >= 0 else z / d


dsigmoid = cuda.jit(device=True)(_sigmoid)


def _fma(a, b, c):
    return cuda.fma(a, b, c)  # a * b + c rounded once
_DEVICE_MATH = {"fexp": math.exp, "ftanh": math.tanh, "fsigmoid": dsigmoid, "ferf": math.erf}
if SIM:
    _DEVICE_MATH["math"] = _SimMath()
else:
    _DEVICE_MATH["ffma"] = cuda.jit(device=True)(_fma)


def device_fn(fn, name=None):
    """A CPU scalar formula (plain Python function) as a CUDA device function."""
    d = cuda.jit(device=True)(_rebind(fn, _DEVICE_MATH, name))
    _RECIPES[id(d)] = ("device_fn", fn.__module__, fn.__qualname__, name)
    return d


def grid(n):
    return (min((n + THREADS - 1) // THREADS, MAX_BLOCKS), THREADS)


def launch(k, n, *args):
    """Launch ``k`` over ``n`` work items (grid-stride loops inside the kernel)."""
    if n > 0:
        if _RECORD is not None:
            _record(k, args)
        k[grid(n)](*args)


def launch_blocks(k, blocks, threads, *args):
    """Launch ``k`` with an explicit grid (reductions, tiled matmul)."""
    if blocks > 0:
        if _RECORD is not None:
            _record(k, args)
        k[blocks, threads](*args)


# ----------------------------------------------------------------------------------------
# recording launches (NUMGRAD_CUDA_RECORD=path): every kernel and argument types the tests
# launch under the simulator, so ``tests/cuda/compile_ptx.py`` can compile each for a real
# GPU (sm_90 PTX) on a machine without one
# ----------------------------------------------------------------------------------------

_RECORD = os.environ.get("NUMGRAD_CUDA_RECORD") or None
_SEEN = {}


def _recipe(v):
    r = _RECIPES.get(id(v))
    if r is not None:
        return r
    if isinstance(v, (int, float, bool, str)) or v is None:
        return ("const", v)
    raise TypeError(f"cannot record kernel binding {v!r}")


def _arg_type(a):
    import numpy as np
    from numba import typeof
    if hasattr(a, "_ary"):  # simulator device array
        a = a._ary
    if isinstance(a, np.ndarray):
        return typeof(a)
    return typeof(a)


def _record(k, args):
    r = _RECIPES.get(id(k))
    if r is None:
        raise RuntimeError(f"kernel {k} was not made by numgrad.kernels.cuda._launch")
    key = (repr(r), tuple(_arg_type(a) for a in args))
    _SEEN[key] = (r, key[1])


@atexit.register
def _dump():
    if _RECORD is not None and _SEEN:
        old = {}
        if os.path.exists(_RECORD):
            with open(_RECORD, "rb") as fh:
                old = pickle.load(fh)
        old.update(_SEEN)
        with open(_RECORD, "wb") as fh:
            pickle.dump(old, fh)


def scalar(dtype, v):
    """``v`` as a NumPy scalar of ``dtype`` (the kernel computes in that type)."""
    try:
        return dtype.type(v)
    except (OverflowError, ValueError):
        return dtype.type(0)


def is_available():
    if SIM:
        return True
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver is "not available"
        return False


def synchronize():
    if not SIM:
        cuda.synchronize()


def release_cached():
    if not SIM:
        cuda.current_context().deallocations.clear()


_RECIPES[id(dsigmoid)] = ("attr", __name__, "dsigmoid")


def _register_gpu_rounding():
    """GPU versions of the CPU kernels' rounding helpers (libdevice, float in, float out)."""
    from numba import types
    try:
        from numba.cuda.extending import overload
    except ImportError:  # Numba's built-in CUDA target
        from numba.extending import overload
    from numba.cuda import libdevice

    from numgrad.kernels.cpu import _scalar

    pairs = ((_scalar.ffloor, libdevice.floorf, libdevice.floor),
             (_scalar.fceil, libdevice.ceilf, libdevice.ceil),
             (_scalar.ftrunc, libdevice.truncf, libdevice.trunc),
             (_scalar.frint, libdevice.rintf, libdevice.rint))
    for fn, f32, f64 in pairs:
        def register(fn=fn, f32=f32, f64=f64):
            @overload(fn, target="cuda")
            def _impl(x):
                if x == types.float32:
                    return lambda x: f32(x)
                if isinstance(x, types.Float):
                    return lambda x: f64(x)
                return lambda x: x
        register()


if not SIM:
    _register_gpu_rounding()
