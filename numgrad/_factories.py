"""Tensor factories: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``/``ones``/``empty``/
``full``, ``rand``/``randn``/``randint``/``randperm``, ``arange``, ``linspace``, ``eye`` and
the ``*_like`` forms, with PyTorch's dtype inference and errors."""

import functools
import numbers
import operator
import warnings

import numpy as np

from numgrad import _arrays, _device, _dtype, _half, _memory_format
from numgrad._shape import check_size, parse_shape
from numgrad._spellings import NOT_GIVEN, check_int_bounds, factory_size, randint_args
from numgrad.random import default_generator
from numgrad.tensor import Tensor, _wrap

_NUMPY_SUPPORTED = ("float64, float32, float16, complex64, complex128, int64, int32, int16, "
                    "int8, uint64, uint32, uint16, uint8, and bool")


# the device factories create tensors on when given none (``set_default_device``); None is
# the CPU, so the common case costs one list read
_DEFAULT_DEVICE = [None]


def set_default_device(device):
    """Factories called without ``device=`` create their tensors on ``device`` (None: the
    CPU); as in PyTorch, the device is checked when a tensor is made there, not here."""
    if device is None:
        _DEFAULT_DEVICE[0] = None
        return
    if isinstance(device, int) and not isinstance(device, bool):
        if not _device.cuda_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        device = _device.device("cuda", device)
    d = device if isinstance(device, _device.device) else _device.device(device)
    _DEFAULT_DEVICE[0] = None if d.type == "cpu" else d


def get_default_device():
    """The device factories use when given none (``set_default_device``)."""
    d = _DEFAULT_DEVICE[0]
    if d is None:
        return _device.CPU
    if d.index is None:  # PyTorch asks the backend which device "cuda" is
        return _device.get(d)
    return d


def _finish(arr, requires_grad, device=None, constant=False):
    """A tensor of ``arr`` (host data, or CUDA data already) on ``device`` (the default
    device when None). ``constant``: ``arr`` is made from Python values and sizes only, so a
    compiled trace may keep it."""
    if constant:
        _arrays.constant(arr)
    if device is None:
        device = _DEFAULT_DEVICE[0]
    if device is not None:
        arr = _arrays.to_device(arr, _device.get(device))
    t = _wrap(arr)
    if requires_grad:
        if arr.dtype.kind not in "fV":  # "V": bfloat16
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _ragged_error(data, dim=0):
    """PyTorch's message for a nested sequence whose lengths differ."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    lens = [len(x) if isinstance(x, (list, tuple)) else None for x in data]
    first = lens[0]
    for n in lens[1:]:
        if n != first:
            return ValueError(
                f"expected sequence of length {first} at dim {dim + 1} (got {n})")
    for x in data:
        err = _ragged_error(x, dim + 1)
        if err is not None:
            return err
    return None


def _from_python(data, requested=None):
    """A NumPy array from nested Python data, with PyTorch's dtype inference (or directly in
    the ``requested`` dtype, so float64 data is not rounded through float32 first)."""
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(data, (list, tuple)):
        data = _tensors_to_scalars(data)
    try:
        arr = np.array(data)
    except ValueError:
        err = _ragged_error(data)
        raise (err or ValueError("could not convert the data to a tensor")) from None
    if arr.dtype in (object, np.uint64) and requested is not None and \
            requested.np.kind == "f" and _numbers_only(data):
        try:  # ints beyond int64 stored as floats, as PyTorch does for a float dtype
            arr = np.array(data, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            pass
    if arr.dtype == object or arr.dtype.kind in "USV" or arr.dtype == np.uint64:
        _python_data_error(arr, data)
    if arr.dtype.kind == "f" and (requested is None or requested.np.kind in "iub") and \
            _int_overflow(data, requested is None):
        raise ValueError("Overflow when unpacking long long")
    if requested is not None:
        _check_range(arr, requested, requested.np.name)
        arr = _astype(arr, requested.np)
    elif arr.dtype.kind == "f" and arr.dtype != np.float32 and not _has_numpy_floats(data):
        arr = arr.astype(_dtype.get_default_dtype().np)
    elif arr.dtype.kind == "c":
        raise TypeError("complex tensors are not supported by numgrad")
    return arr


def _numbers_only(data):
    return all(isinstance(v, (int, float, np.number)) for v in _leaves(data))


def _int_overflow(data, inferred):
    """Whether nested Python ``data`` (which NumPy made floats) holds an int outside int64
    that PyTorch would unpack as one: always when an integer dtype was requested, and when
    the dtype is inferred only if no float makes the result floating (the walk stops at the
    first float then, so float data costs little)."""
    big = False
    for v in _leaves(data):
        if isinstance(v, (float, np.floating)):
            if inferred:
                return False
        elif isinstance(v, int) and not -2**63 <= v < 2**63:
            if not inferred:
                return True
            big = True
    return big


def _leaves(data):
    """The non-sequence items of nested lists and tuples, in order, without copying them."""
    iters = [iter((data,))]
    while iters:
        for v in iters[-1]:
            if isinstance(v, (list, tuple)):
                iters.append(iter(v))
                break
            yield v
        else:
            iters.pop()


def _python_data_error(arr, data):
    """PyTorch's error for nested data that holds no number it can store."""
    flat = arr.reshape(-1) if arr.size else np.array([data], dtype=object)
    for v in flat:
        if v is None:
            raise RuntimeError("Could not infer dtype of NoneType")
        if isinstance(v, (int, np.integer)) and not -2**63 <= int(v) < 2**63:
            raise ValueError("Overflow when unpacking long long")
    bad = flat[0]
    name = type(bad).__name__
    if isinstance(bad, (str, bytes)):
        name = "str" if name == "str_" else name
        first = data
        while isinstance(first, (list, tuple)) and first:
            first = first[0]
        if first is not data and isinstance(first, str):  # the shape is read from it
            raise ValueError("too many dimensions 'str'")
        raise TypeError(f"new(): invalid data type '{name}'")
    raise RuntimeError(f"Could not infer dtype of {name}")


def _tensors_to_scalars(data):
    """Nested data with each tensor in it replaced by its one value (PyTorch reads a tensor
    inside a list as a number)."""
    out = []
    changed = False
    for x in data:
        if isinstance(x, Tensor):
            if x._data.size != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            x = x.item()
            changed = True
        elif isinstance(x, (list, tuple)):
            y = _tensors_to_scalars(x)
            changed = changed or y is not x
            x = y
        out.append(x)
    return out if changed else data


def _overflow(name):
    return RuntimeError(f"value cannot be converted to type {name} without overflow")


def _check_range(arr, d, name):
    """PyTorch's overflow check when numbers are stored as dtype ``d``: integers must fit
    (unsigned ones may wrap from down to -max), floats must be finite to become integers."""
    if d.np.kind not in "iu" or arr.dtype.kind not in "iuf" or not arr.size:
        return
    info = np.iinfo(d.np)
    lo = -int(info.max) if d.np.kind == "u" else int(info.min)
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or arr.min() < lo or arr.max() > info.max:
            raise _overflow(name)
    elif int(arr.min()) < lo or int(arr.max()) > info.max:
        raise _overflow(name)


def _has_numpy_floats(data):
    if isinstance(data, np.ndarray):
        return True
    if isinstance(data, np.generic):
        return True
    if isinstance(data, (list, tuple)):
        return any(_has_numpy_floats(x) for x in data[:1])
    return False


_BYTE_ORDER = ("given numpy array has byte order different from the native byte order. "
               "Conversion between byte orders is currently not supported.")


def _check_dtype(arr):
    if not arr.dtype.isnative:
        raise ValueError(_BYTE_ORDER)
    d = _dtype.from_numpy_dtype(arr.dtype)
    if d is None:
        conv = {np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64,
                np.dtype(np.uint64): np.int64, np.dtype(np.float16): np.float32}
        if arr.dtype in conv:
            return arr.astype(conv[arr.dtype])
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. The only "
            f"supported types are: {_NUMPY_SUPPORTED}.")
    return arr


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor that copies ``data`` (a number, nested sequence, array or tensor)."""
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach()."
            "clone() or sourceTensor.detach().clone().requires_grad_(True), rather than "
            "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
        arr = _arrays.copy(data._data)
        if device is None:
            device = _DEFAULT_DEVICE[0] or data.device
    elif _arrays.is_foreign_cuda(data):
        arr = _arrays.cuda_array().from_interface(data).copy()
        if device is None:
            device = _DEFAULT_DEVICE[0] or _device.CUDA0
    elif isinstance(data, np.ndarray):
        arr = _check_dtype(np.array(data, order="C", copy=True))
    else:
        arr = _from_python(data, _dtype.arg(dtype, "tensor"))
    d = _dtype.arg(dtype, "tensor")
    python = not isinstance(data, (Tensor, np.ndarray)) and not _arrays.is_foreign_cuda(data)
    if d is not None and arr.dtype != d.np:
        arr = _astype(arr, d.np) if python else _arrays.host_step(_astype, arr, d.np)
    return _finish(arr, requires_grad, device, constant=python)


def _astype(arr, np_dtype):
    """Host array ``arr`` in ``np_dtype``; the 16-bit floats are rounded by their kernels."""
    if _half.is_half(np_dtype) or _half.is_half(arr.dtype):
        return _half.cast(arr, np_dtype)
    with np.errstate(over="ignore"):  # 1e40 as float32 is inf, without a warning (PyTorch)
        return arr.astype(np_dtype)


def as_tensor(data, dtype=None, device=None):
    """Shares memory with ``data`` when it is a tensor or array of the requested dtype."""
    d = _dtype.get(dtype)
    device = device or _DEFAULT_DEVICE[0]
    if isinstance(data, Tensor):
        out = data if d is None or data.dtype is d else data.to(d)
        return out if device is None else out.to(device)
    if _arrays.is_foreign_cuda(data):
        # zero copy: a view of another library's GPU memory (CuPy, PyTorch, Numba)
        t = _wrap(_arrays.cuda_array().from_interface(data))
        _check_dtype(np.empty(0, t._data.dtype))
        if device is not None and _device.get(device).type != "cuda":
            t = t.cpu()
        return t if d is None or t.dtype is d else t.to(d)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        t = t if d is None or t.dtype is d else t.to(d)
        return t if device is None else t.to(device)
    return tensor(data, dtype=d, device=device)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around this "
            "by making a copy of your array with array.copy().) ")
    if not ndarray.dtype.isnative:
        raise ValueError(_BYTE_ORDER)
    if _dtype.from_numpy_dtype(ndarray.dtype) is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{ndarray.dtype.type.__name__}. The only "
            f"supported types are: {_NUMPY_SUPPORTED}.")
    if not ndarray.flags.writeable:
        # PyTorch shares the read-only memory and calls writes to it undefined behaviour; a
        # kernel writing into a read-only mapping would crash, so numgrad takes a copy
        warnings.warn(
            "The given NumPy array is not writable, and PyTorch does not support non-writable "
            "tensors. This means writing to this tensor will result in undefined behavior. You "
            "may want to copy the array to protect its data or make it writable before "
            "converting it to a tensor. This type of warning will be suppressed for the rest "
            "of this program.", UserWarning, stacklevel=2)
        ndarray = ndarray.copy()
    return _wrap(ndarray)


def asarray(obj, dtype=None, device=None, copy=None, requires_grad=False):
    t = tensor(obj, dtype=dtype) if copy else as_tensor(obj, dtype=dtype)
    if requires_grad:
        t.requires_grad_()
    return t


def _size_dtype(size, dtype, fname):
    d = _dtype.arg(dtype, fname) or _dtype.get_default_dtype()
    return _storage(check_size(parse_shape(size), fname), d), d


def _storage(shape, d):
    """``shape`` once its byte size fits in int64, as PyTorch's storage size check."""
    n = d.np.itemsize
    for s in shape:
        n *= s
    if n >= 2**63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return shape


def _filled(shape, value, d, device):
    """Host ``np.full`` or, on the GPU, a device buffer filled by the fill kernel."""
    if device is None:
        device = _DEFAULT_DEVICE[0]
    if device is not None and _device.get(device).type == "cuda":
        return _arrays.cuda_array().full(shape, value, d.np)
    if value is None:
        return np.empty(shape, d.np)
    if _half.is_half(d.np):  # the value rounded once, by the 16-bit kernels
        return np.broadcast_to(_half.cast(np.array([value], np.float32), d.np), shape).copy()
    return np.full(shape, value, d.np)


def zeros(*dims, size=NOT_GIVEN, dtype=None, device=None, requires_grad=False, out=None,
          layout=None):
    shape, d = _size_dtype(factory_size("zeros", dims, size), dtype, "zeros")
    return _finish(_filled(shape, 0, d, device), requires_grad, device,
                   constant=True)


def ones(*dims, size=NOT_GIVEN, dtype=None, device=None, requires_grad=False, out=None,
         layout=None):
    shape, d = _size_dtype(factory_size("ones", dims, size), dtype, "ones")
    return _finish(_filled(shape, 1, d, device), requires_grad, device,
                   constant=True)


def empty(*dims, size=NOT_GIVEN, dtype=None, device=None, requires_grad=False, out=None,
          layout=None, memory_format=None):
    shape, d = _size_dtype(factory_size("empty", dims, size), dtype, "empty")
    return _finish(_filled(shape, None, d, device), requires_grad, device,
                   constant=True)


def _fill_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return _dtype.bool_
    if isinstance(value, numbers.Integral):
        return _dtype.int64
    return _dtype.get_default_dtype()


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None,
         layout=None):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = _dtype.arg(dtype, "full") or _fill_dtype(fill_value)
    fill_value = _dtype.checked_scalar(fill_value, d)
    return _finish(_filled(_storage(check_size(parse_shape((size,))), d), fill_value, d, device),
                   requires_grad, device, constant=True)


def rand(*dims, size=NOT_GIVEN, generator=None, dtype=None, device=None, requires_grad=False,
         out=None):
    shape, d = _size_dtype(factory_size("rand", dims, size, random=True), dtype, "rand")
    if d._kind != 2:
        raise NotImplementedError(f'"check_uniform_bounds" not implemented for \'{d._legacy}\'')
    g = generator or default_generator
    return _finish(g.uniform(shape, d.np), requires_grad, device)


def randn(*dims, size=NOT_GIVEN, generator=None, dtype=None, device=None, requires_grad=False,
          out=None):
    shape, d = _size_dtype(factory_size("randn", dims, size, random=True), dtype, "randn")
    if d._kind != 2:
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for \'{d._legacy}\'')
    g = generator or default_generator
    return _finish(g.normal(shape, d.np), requires_grad, device)


def randint(*args, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """``randint(high, size)`` or ``randint(low, high, size)`` (also by keyword)."""
    given = dict(kwargs, **{k: v for k, v in (("generator", generator), ("dtype", dtype),
                                              ("device", device)) if v is not None})
    if requires_grad:
        given["requires_grad"] = requires_grad
    low, high, size = randint_args(args, given)
    d = _dtype.arg(dtype, "randint") or _dtype.int64
    check_int_bounds(low, high, d)
    g = generator or default_generator
    shape = _storage(check_size(size), d)
    return _finish(g.randint(low, high, shape, d.np), requires_grad, device)


# PyTorch's C++ names in randperm's overflow message, and each integer dtype's largest value
_RANDPERM_INT = {"Byte": ("uint8_t", 255), "Char": ("int8_t", 127), "Short": ("int16_t", 32767),
                 "Int": ("int", (1 << 31) - 1)}
_RANDPERM_FLOAT = {"Half": (11, "2049"), "Float": (24, "2^24+1"), "Double": (53, "2^53+1")}


def _check_randperm(n, d):
    """PyTorch's checks: a dtype randperm fills, ``n - 1`` held by it, and (floats) every value
    below ``n`` exact."""
    if d._kind == 0:
        raise NotImplementedError(f'"randperm" not implemented for \'{d._legacy}\'')
    if d._legacy in _RANDPERM_INT:
        name, top = _RANDPERM_INT[d._legacy]
        if n - 1 > top:
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    if d._legacy in _RANDPERM_FLOAT:
        digits, shown = _RANDPERM_FLOAT[d._legacy]
        if n > (1 << digits) + 1:
            raise RuntimeError(f"n cannot be greater than {shown} for {d._legacy} type.")


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    d = _dtype.arg(dtype, "randperm") or _dtype.int64
    n = operator.index(n)
    check_size((n,))
    _check_randperm(n, d)
    g = generator or default_generator
    out = _finish(g.randperm(n), False, None)
    if d is not _dtype.int64:
        out = out.to(d)  # exact: n - 1 fits the dtype (checked above)
    return _finish(out._data, requires_grad, device)


def normal(mean, std, size=None, *, generator=None, dtype=None, device=None):
    g = generator or default_generator
    if size is None:
        raise NotImplementedError("normal() with tensor mean/std is not supported by numgrad")
    d = _dtype.get(dtype) or _dtype.get_default_dtype()
    # PyTorch's normal(mean, std, size) ignores the default device
    return _finish(g.normal(parse_shape((size,)), d.np, float(mean), float(std)), False,
                   device or _device.CPU)


def _like(fn, input, dtype, requires_grad, device=None, **kw):
    d = _dtype.arg(dtype, f"{fn.__name__}_like") or input.dtype
    return fn(input._data.shape, dtype=d, requires_grad=requires_grad,
              device=device or input.device, **kw)


def _laid_out(fn, input, memory_format):
    """The memory order ``memory_format`` asks of a ``*_like`` result (None: C order)."""
    return _memory_format.order(memory_format, input._data.shape, fn)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None):
    phys = _laid_out("zeros_like", input, memory_format)
    return _memory_format.uniform_in(_like(zeros, input, dtype, requires_grad, device), phys)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None):
    phys = _laid_out("ones_like", input, memory_format)
    return _memory_format.uniform_in(_like(ones, input, dtype, requires_grad, device), phys)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None):
    phys = _laid_out("empty_like", input, memory_format)
    return _memory_format.uniform_in(_like(empty, input, dtype, requires_grad, device), phys)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None, layout=None):
    d = _dtype.get(dtype) or input.dtype
    return full(input._data.shape, fill_value, dtype=d, requires_grad=requires_grad,
                device=device or input.device)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None):
    return _like(rand, input, dtype, requires_grad, device)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None):
    return _like(randn, input, dtype, requires_grad, device)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False,
                 memory_format=None):
    if high is None:
        low, high = 0, low
    d = _dtype.get(dtype) or input.dtype
    return randint(low, high, input._data.shape, dtype=d, requires_grad=requires_grad,
                   device=device or input.device)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    for v in vals:
        if isinstance(v, float) and not np.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    floating = any(isinstance(v, float) for v in vals)
    d = _dtype.arg(dtype, "arange") or (_dtype.get_default_dtype() if floating else _dtype.int64)
    n = int(np.ceil((end - start) / step))
    np.empty(_storage((n,), d), d.np)  # the result must fit before its wider temporaries
    arr = (start + step * np.arange(n, dtype=np.float64)) if floating else \
        (start + step * np.arange(n, dtype=np.int64))
    return _finish(arr.astype(d.np), requires_grad, device, constant=True)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    d = _dtype.arg(dtype, "linspace") or _dtype.get_default_dtype()
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps == 1:
        arr = np.array([start], np.float64)
    else:
        # PyTorch's symmetric formula: the second half counts back from ``end``
        step = (end - start) / (steps - 1)
        i = np.arange(steps, dtype=np.float64)
        half = steps // 2
        arr = np.where(i < half, start + step * i, end - step * (steps - i - 1))
    return _finish(arr.astype(d.np), requires_grad, device, constant=True)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    lin = linspace(start, end, steps, dtype=_dtype.float64)._data
    d = _dtype.get(dtype) or _dtype.get_default_dtype()
    return _finish((base ** lin).astype(d.np), requires_grad, device, constant=True)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    d = _dtype.arg(dtype, "eye") or _dtype.get_default_dtype()
    for pos, name, v in ((1, "n", n), (2, "m", m)):
        if v is None:
            continue
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not "
                            f"{type(v).__name__}")
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    return _finish(np.eye(n, m if m is not None else n, dtype=d.np), requires_grad, device,
                   constant=True)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    d = _dtype.get(dtype) or _dtype.get_default_dtype()
    return _finish(np.array(_dtype.checked_scalar(s, d), d.np), requires_grad, device,
                   constant=True)


def _allocating(fn):
    """``fn`` with PyTorch's RuntimeError where the host cannot allocate the tensor (NumPy
    raises MemoryError)."""

    @functools.wraps(fn)
    def factory(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemoryError as e:
            n = getattr(e, "_total_size", None)
            tried = f": you tried to allocate {n} bytes" if n is not None else ""
            raise RuntimeError(f"DefaultCPUAllocator: can't allocate memory{tried}.") from None

    return factory


for _name in ("tensor", "as_tensor", "zeros", "ones", "empty", "full", "rand", "randn",
              "randint", "randperm", "normal", "zeros_like", "ones_like", "empty_like",
              "full_like", "rand_like", "randn_like", "randint_like", "arange", "linspace",
              "logspace", "eye"):
    globals()[_name] = _allocating(globals()[_name])
del _name
