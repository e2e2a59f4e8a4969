"""``CudaArray``: the data of a CUDA tensor.

A strided view (``offset``, ``shape``, element ``strides``) of a flat device buffer, with
the part of NumPy's ndarray interface the op layer uses: shape, dtype, strides, flags,
reshape, transpose, basic indexing, as_strided, copy, astype. View arithmetic is NumPy's
own, run on a zero-size stride template that touches no memory, so views on the GPU follow
exactly NumPy's (and PyTorch's) rules. Kernels receive the flat buffer, the offset and the
strides; no per-view device array is built on the hot path.
"""

import numpy as np
from numba import cuda

from numgrad.kernels.cuda import _launch

MIXED = ("Expected all tensors to be on the same device, but found at least two devices, "
         "cuda:0 and cpu!")
TO_NUMPY = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first.")


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")
    writeable = True

    def __init__(self, c, f, own):
        self.c_contiguous = c
        self.f_contiguous = f
        self.owndata = own

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata, "WRITEABLE": True}[key]


def c_strides(shape):
    """Element strides of a C-contiguous array of ``shape``."""
    st = [0] * len(shape)
    acc = 1
    for d in range(len(shape) - 1, -1, -1):
        st[d] = acc
        acc *= max(shape[d], 1)
    return tuple(st)


def _is_c(shape, strides):
    acc = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1 and strides[d] != acc:
            return False
        acc *= shape[d]
    return True


class CudaArray:
    """Elements ``buf[offset + sum(i_k * strides_el[k])]`` of the 1-D device buffer ``buf``."""

    __slots__ = ("buf", "offset", "shape", "strides_el", "dtype", "base", "size", "_c",
                 "__weakref__")

    def __init__(self, buf, offset, shape, strides_el, base=None):
        self.buf = buf
        self.offset = offset
        self.shape = shape
        self.strides_el = strides_el
        self.dtype = buf.dtype
        self.base = base
        n = 1
        for s in shape:
            n *= s
        self.size = n
        self._c = n <= 1 or _is_c(shape, strides_el)

    # ------------------------------------------------------------------ construction
    @classmethod
    def empty(cls, shape, dtype):
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(int(s) for s in shape)
        n = 1
        for s in shape:
            n *= s
        return cls(_launch.alloc(n, np.dtype(dtype)), 0, shape, c_strides(shape))

    @classmethod
    def full(cls, shape, value, dtype):
        out = cls.empty(shape, dtype)
        if out.size:
            from numgrad.kernels.cpu import elementwise as EW
            from numgrad.kernels.cuda import elementwise as CE
            CE.unary(EW.fill, out, out.dtype, value, out=out)
        return out

    @classmethod
    def from_host(cls, arr):
        arr = np.asarray(arr)
        if not arr.flags.c_contiguous:
            arr = arr.copy()
        flat = arr.reshape(-1) if arr.size else np.zeros(1, arr.dtype)
        return cls(_launch.to_device(flat), 0, arr.shape, c_strides(arr.shape))

    @classmethod
    def from_interface(cls, obj):
        """A view of another library's device array (``__cuda_array_interface__``)."""
        if _launch.SIM and hasattr(obj, "_ary"):  # a simulator array: its host memory
            desc = obj._ary.__array_interface__
        else:
            desc = obj.__cuda_array_interface__
        dtype = np.dtype(desc["typestr"])
        shape = tuple(desc["shape"])
        item = dtype.itemsize
        strides = desc.get("strides")
        strides_el = c_strides(shape) if strides is None else tuple(s // item for s in strides)
        if any(s < 0 for s in strides_el):
            raise ValueError("arrays with negative strides are not supported")
        extent = 1 + sum((d - 1) * s for d, s in zip(shape, strides_el)) if all(shape) else 1
        ptr = desc["data"][0]
        if _launch.SIM:  # simulated device memory is host memory
            if hasattr(obj, "_ary"):
                host = obj._ary
            else:
                holder = type("_Interface", (), {})()
                holder.__array_interface__ = {"shape": (extent,), "typestr": dtype.str,
                                              "data": (ptr, False), "version": 3}
                holder.owner = obj
                host = np.asarray(holder)
            flat = np.lib.stride_tricks.as_strided(host, (extent,), (item,))
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
            buf, base = FakeCUDAArray(flat), obj
        else:
            flat = {"shape": (extent,), "strides": None, "data": (ptr, False),
                    "typestr": dtype.str, "version": 3}
            buf = cuda.from_cuda_array_interface(flat, owner=obj, sync=False)
            base = obj
        return cls(buf, 0, shape, strides_el, base=base)

    # ------------------------------------------------------------------ metadata
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):
        item = self.dtype.itemsize
        return tuple(s * item for s in self.strides_el)

    @property
    def flags(self):
        f = self.size <= 1 or _is_c(self.shape[::-1], self.strides_el[::-1])
        return _Flags(self._c, f, self.base is None)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # ------------------------------------------------------------------ views (NumPy's rules)
    def _template(self):
        return np.lib.stride_tricks.as_strided(np.empty(0, self.dtype), self.shape,
                                               self.strides, writeable=False)

    def _view(self, offset, shape, strides_el):
        return CudaArray(self.buf, offset, shape, strides_el,
                         base=self.base if self.base is not None else self)

    def _from_template(self, template, t):
        item = self.dtype.itemsize
        moved = (t.__array_interface__["data"][0]
                 - template.__array_interface__["data"][0]) // item
        return self._view(self.offset + moved, t.shape, tuple(s // item for s in t.strides))

    def reshape(self, *shape, copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if self._c:
            shape = _fill_minus_one(shape, self.size)
            n = 1
            for d in shape:
                n *= d
            if n != self.size:
                raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
            return self._view(self.offset, shape, c_strides(shape))
        t0 = self._template()
        try:
            return self._from_template(t0, t0.reshape(shape, copy=False))
        except (ValueError, AttributeError):
            if copy is False:
                raise
            return self.copy().reshape(shape)

    def ravel(self):
        return self.reshape(-1)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        t0 = self._template()
        return self._from_template(t0, t0.transpose(*axes) if axes else t0.T)

    @property
    def T(self):  # noqa: N802
        return self.transpose()

    def swapaxes(self, a, b):
        t0 = self._template()
        return self._from_template(t0, t0.swapaxes(a, b))

    def __getitem__(self, key):
        parts = key if isinstance(key, tuple) else (key,)
        for k in parts:
            if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))):
                raise TypeError("CudaArray supports basic indexing only; advanced indexing "
                                "runs in the indexing kernels")
        t0 = self._template()
        t = t0[parts][...]  # [...] keeps an all-integer index a 0-d view
        return self._from_template(t0, t)

    def as_strided(self, shape, strides_bytes, offset_el=0):
        item = self.dtype.itemsize
        return self._view(self.offset + offset_el, tuple(int(s) for s in shape),
                          tuple(int(s) // item for s in strides_bytes))

    def broadcast_to(self, shape):
        """A read-only-by-convention view with stride 0 along broadcast dims."""
        shape = tuple(shape)
        lead = len(shape) - len(self.shape)
        st = [0] * lead
        for d, (s, n) in enumerate(zip(self.shape, shape[lead:])):
            st.append(self.strides_el[d] if s == n else 0)
        return self._view(self.offset, shape, tuple(st))

    # ------------------------------------------------------------------ data
    def copy(self):
        return self.astype(self.dtype)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        from numgrad.kernels.cuda import elementwise as CE
        out = CudaArray.empty(self.shape, dtype)
        if self.size:
            CE.copy_into(self, out)
        return out

    def contiguous(self):
        return self if self._c else self.copy()

    def to_host(self):
        if not self.size:
            return np.empty(self.shape, self.dtype)
        a = self if self._c else self.copy()
        flat = a.buf[a.offset:a.offset + a.size].copy_to_host()
        return flat.reshape(a.shape)

    @property
    def __cuda_array_interface__(self):
        if _launch.SIM:  # the simulator's "device pointer" is the host address
            host = self.buf._ary if hasattr(self.buf, "_ary") else np.asarray(self.buf)
            ptr = host.__array_interface__["data"][0] + self.offset * self.dtype.itemsize
            return {"shape": self.shape, "strides": None if self._c else self.strides,
                    "data": (ptr, False), "typestr": self.dtype.str, "version": 3}
        return self.device_array().__cuda_array_interface__

    def device_array(self):
        """A Numba device array for this view (zero copy), for interop."""
        if _launch.SIM:
            host = self.buf._ary if hasattr(self.buf, "_ary") else np.asarray(self.buf)
            view = np.lib.stride_tricks.as_strided(host[self.offset:], self.shape,
                                                   self.strides)
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
            return FakeCUDAArray(view)
        ptr = self.buf.__cuda_array_interface__["data"][0] + self.offset * self.dtype.itemsize
        desc = {"shape": self.shape, "strides": None if self._c else self.strides,
                "data": (ptr, False), "typestr": self.dtype.str, "version": 3}
        return cuda.from_cuda_array_interface(desc, owner=self.buf, sync=False)

    def item(self):
        return self.to_host().reshape(-1)[0].item()

    def tolist(self):
        return self.to_host().tolist()

    def __array__(self, dtype=None, copy=None):
        raise TypeError(TO_NUMPY)

    def __repr__(self):
        return f"CudaArray(shape={self.shape}, dtype={self.dtype})"


def _fill_minus_one(shape, size):
    shape = tuple(int(s) for s in shape)
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        shape = tuple((size // known if known else 0) if s == -1 else s for s in shape)
    return shape


def from_any(a):
    """``a`` as a CudaArray. A 0-d CPU array (a CPU scalar tensor, which PyTorch lets CUDA
    ops take) is copied over; any other CPU data is a mixed-device error."""
    if a.__class__ is CudaArray:
        return a
    if isinstance(a, np.ndarray) and a.ndim == 0:
        return CudaArray.from_host(a)
    raise RuntimeError(MIXED)


def vec(a):
    """Kernel arguments of 1-D data ``a``: its buffer, offset and element stride."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el[0] if a.strides_el else 1


def _register_numba_type():
    """A CudaArray reaching a CPU kernel means a CPU and a CUDA tensor met in one op."""
    from numba.core.typing.typeof import typeof_impl

    @typeof_impl.register(CudaArray)
    def _typeof_cuda_array(val, c):
        raise RuntimeError(MIXED)


_register_numba_type()
