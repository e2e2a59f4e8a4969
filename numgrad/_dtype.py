"""dtype objects (``numgrad.float32`` ...) and PyTorch's type-promotion rules."""

import numpy as np

__all__ = ["dtype", "float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]


class dtype:
    """A tensor element type; prints as PyTorch prints its dtypes (``torch.float32``)."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_kind", "_legacy")

    def __init__(self, name, np_dtype, kind, legacy):
        self.name = name
        self.np = np.dtype(np_dtype)
        self._kind = kind  # 0 bool, 1 integer, 2 floating: PyTorch's promotion categories
        self.is_floating_point = kind == 2
        self.is_signed = self.np.kind in "if"
        self.itemsize = self.np.itemsize
        self._legacy = legacy  # the name PyTorch uses in some messages ("Float", "Long")

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_complex(self):
        return False

    def to_complex(self):  # pragma: no cover - complex dtypes are not supported
        raise TypeError("complex dtypes are not supported by numgrad")


bool_ = dtype("bool", np.bool_, 0, "Bool")
uint8 = dtype("uint8", np.uint8, 1, "Byte")
int8 = dtype("int8", np.int8, 1, "Char")
int16 = dtype("int16", np.int16, 1, "Short")
int32 = dtype("int32", np.int32, 1, "Int")
int64 = dtype("int64", np.int64, 1, "Long")
float32 = dtype("float32", np.float32, 2, "Float")
float64 = dtype("float64", np.float64, 2, "Double")
# the 16-bit floats are storage types (see numgrad/_half.py): float16 data is a NumPy float16
# array, bfloat16 data (NumPy has no such type) a 2-byte record array of the bit patterns
float16 = dtype("float16", np.float16, 2, "Half")
BFLOAT16_NP = np.dtype([("bfloat16", np.uint16)])
bfloat16 = dtype("bfloat16", BFLOAT16_NP, 2, "BFloat16")
bfloat16.is_signed = True

ALL = (bool_, uint8, int8, int16, int32, int64, float32, float64, float16, bfloat16)
_NP_TO_DTYPE = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "long": int64, "int": int32,
                 "short": int16, "bool": bool_, "half": float16})


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The numgrad dtype of a NumPy dtype, or None when numgrad has no such dtype."""
    return _NP_TO_DTYPE.get(np_dtype)


def get(spec):
    """Normalize a user's dtype argument: a numgrad dtype, a NumPy dtype/type or a name."""
    if spec.__class__ is dtype:
        return spec
    if spec is None:
        return None
    if spec is float:
        return float64
    if spec is int:
        return int64
    if spec is bool or spec is np.bool_:
        return bool_
    if isinstance(spec, str):
        d = _BY_NAME.get(spec.removeprefix("torch."))
        if d is not None:
            return d
    try:
        d = _NP_TO_DTYPE.get(np.dtype(spec))
    except TypeError:
        d = None
    if d is None:
        raise TypeError(f"dtype must be a numgrad dtype, got {spec!r}")
    return d


def arg(spec, fname):
    """A dtype argument of public function ``fname``: PyTorch takes its dtypes and Python's
    ``float``/``int``/``bool``, and refuses names and NumPy types."""
    if spec is None or spec.__class__ is dtype:
        return spec
    if spec is float or spec is int or spec is bool:
        return get(spec)
    raise TypeError(f"{fname}(): argument 'dtype' must be torch.dtype, not "
                    f"{type(spec).__name__}")


_default = [float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    d = get(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


def promote_types(a, b):
    """PyTorch's promote_types: the smallest dtype both ``a`` and ``b`` convert to safely."""
    if a is b:
        return a
    if a._kind != b._kind:
        hi, lo = (a, b) if a._kind > b._kind else (b, a)
        return hi
    if a._kind == 2:  # the wider float; float16 with bfloat16 meet in float32
        if a is float64 or b is float64:
            return float64
        return float32
    return _NP_TO_DTYPE[np.promote_types(a.np, b.np)]


def _scalar_dtype(value):
    """The dtype PyTorch gives a wrapped Python number."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    return _default[0]


def result_type(*operands):
    """PyTorch's result_type over tensors and Python scalars.

    Three tiers are promoted separately (tensors with dimensions, zero-dim tensors, Python
    numbers) and a lower tier only wins when it is of a higher category (bool < int < float).
    """
    if len(operands) == 2:
        a, b = operands
        da = getattr(a, "_data", None)
        if da is not None:
            db = getattr(b, "_data", None)
            if db is not None:
                if da.dtype is db.dtype:  # same dtype: nothing to promote
                    return _NP_TO_DTYPE[da.dtype]
            elif b.__class__ is float and da.dtype.kind == "f":  # float tensor (op) float
                return _NP_TO_DTYPE[da.dtype]
            elif b.__class__ is int and da.dtype.kind in "fi":  # int never widens a tensor
                return _NP_TO_DTYPE[da.dtype]
    dim = zero = wrapped = None
    for op in operands:
        d = getattr(op, "dtype", None)
        if d is None or op.__class__ in _PY_SCALARS or isinstance(op, np.generic):
            d = _scalar_dtype(op)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
        elif op.ndim == 0:
            zero = d if zero is None else promote_types(zero, d)
        else:
            dim = d if dim is None else promote_types(dim, d)
    return _combine(dim, _combine(zero, wrapped))


_PY_SCALARS = (int, float, bool)


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._kind == 2:
        return higher
    if higher is bool_ or lower._kind == 2:
        return promote_types(higher, lower)
    return higher


_C_TYPE = {"int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t",
           "uint8": "uint8_t", "float32": "float", "float64": "double", "bool": "bool",
           "float16": "at::Half", "bfloat16": "at::BFloat16"}

# dtype names as the C++ compiler spells them in PyTorch's typeid messages ("long int")
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
              "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "void16": "c10::BFloat16"}


def cpp_name(np_dtype):
    """``np_dtype`` as PyTorch's C++ messages print it ("expected dtype float ...")."""
    return _CPP_NAMES.get(np_dtype.name, np_dtype.name)


def checked_scalar(value, dt):
    """Python number ``value`` converted to dtype ``dt`` as PyTorch converts a Scalar argument
    (fill_, masked_fill): RuntimeError where it overflows; inf and nan pass into floats, a
    negative integer wraps into an unsigned type when its magnitude fits."""
    if value.__class__ is int:
        check_int(value)
    elif not isinstance(value, (int, float, np.number, np.bool_)):
        raise TypeError(f"received an invalid combination of arguments - got "
                        f"({type(value).__name__}), but expected a Number or a Tensor")
    if dt._kind == 0:
        return bool(value)
    if isinstance(value, (bool, np.bool_)):
        return int(value) if dt._kind == 1 else float(value)
    if dt._kind == 2:
        v = float(value)
        if v - v == 0 and not -_FMAX[dt.name] <= v <= _FMAX[dt.name]:
            raise _overflow(dt)
        return v
    info = np.iinfo(dt.np)
    if isinstance(value, (float, np.floating)):
        if not info.min <= value <= info.max:  # nan and inf fail this test too
            raise _overflow(dt)
        return int(value)
    v = int(value)
    if v > info.max or v < (-info.max if info.min == 0 else info.min):
        raise _overflow(dt)
    return v & int(info.max) if v < 0 and info.min == 0 else v


# the 16-bit floats take any value, which rounds to inf beyond their range (as in PyTorch)
_FMAX = {"float32": float(np.finfo(np.float32).max), "float64": float(np.finfo(np.float64).max),
         "float16": float("inf"), "bfloat16": float("inf")}


def _overflow(dt):
    return RuntimeError(f"value cannot be converted to type {_C_TYPE[dt.name]} without overflow")


def check_int(v):
    """A Python int argument as PyTorch's argument parser takes it: int64 or uint64 range."""
    if v >= 2**64:
        raise OverflowError("int too big to convert")
    if v < -2**63:
        raise OverflowError("can't convert negative int to unsigned")
