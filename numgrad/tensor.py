"""``numgrad.Tensor``: a NumPy array plus autograd state.

The hot path creates tensors with ``_wrap`` (no ``__init__``), reads ``_data`` directly and
checks ``_requires_grad``; public properties carry PyTorch's checks and messages. Operators
and methods are bound to the op functions in ``numgrad.ops`` (see ``numgrad/ops/__init__``).
"""

import warnings
import weakref

import numpy as np

from numgrad import _device, _dtype, _hook
from numgrad._shape import Size, wrap_dim
from numgrad.autograd import grad_mode
from numgrad.autograd.creation_meta import rebase_error, without_grad_mode
from numgrad.autograd.graph import AccumulateGrad, RemovableHandle

_NP2DT = {d.np: d for d in _dtype.ALL}
_TO_NUMPY = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
             "tensor to host memory first.")
_new = object.__new__


class _InferenceVersion(list):
    """The version counter of inference tensors: shared by all, never checked."""


# A tensor's version counter is ``{0: version}``, shared by the tensor and its views and bumped
# in place (``vc[0] += 1``): CPython's collector does not track a dict that holds only ints,
# where it tracks every list, so the counters of a graph's saved outputs cost it nothing.
INFERENCE = _InferenceVersion([0])
# number of threads inside inference_mode: _wrap consults the thread-local flag only then
_INFERENCE_THREADS = [0]

NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


def _wrap(arr):
    """A new tensor that owns ``arr`` (no copy), requires no grad and has no history."""
    t = _new(Tensor)
    t._data = arr
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._accum = None
    t._hooks = None
    t._post_acc_hooks = None
    t._retains_grad = False
    t._base = None
    t._vc = INFERENCE if _INFERENCE_THREADS[0] and grad_mode.state.inference else None
    return t


_FIELDS = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_accum", "_hooks",
           "_post_acc_hooks", "_retains_grad", "_base", "_vc")


def _init_like_wrap(t, arr):
    """Give ``t`` (a Tensor or subclass made without __init__) the fields _wrap sets."""
    src = _wrap(arr)
    for name in _FIELDS:
        object.__setattr__(t, name, getattr(src, name))


def _grad_accumulator(t):
    """The (unique while alive) AccumulateGrad node of leaf ``t``."""
    ref = t._accum
    if ref is not None:
        node = ref()
        if node is not None:
            return node
    node = AccumulateGrad(t)
    t._accum = weakref.ref(node)
    return node


def edge(t):
    """The ``next_functions`` entry for tensor input ``t``."""
    fn = t._grad_fn if t._base is None else _view_grad_fn(t)
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        if t._base is not None and without_grad_mode(t):
            return NO_EDGE
        return (_grad_accumulator(t), 0)
    return (None, 0)


NO_EDGE = (None, 0)


# how a view's node is rebuilt after its base changed; set by numgrad.ops.inplace, which owns
# the region nodes (the tensor module does not import the ops)
_stale_view_node = [None]


def _view_grad_fn(t):
    """grad_fn of view ``t``, regenerated (``AsStridedBackward0`` of the base) when its base
    was modified in place after the view was made, as PyTorch regenerates stale views (in any
    grad mode); a view whose creation forbids that (``t._cmeta``, see
    ``numgrad.autograd.creation_meta``) raises PyTorch's error instead."""
    vc = t._vc
    if vc[0] != t._view_ver:
        base = t._base
        if t._grad_fn is None and not base._requires_grad:
            return None
        if t._cmeta:
            raise rebase_error(t, True)
        t._view_ver = vc[0]
        if base._requires_grad and vc is not INFERENCE:
            t._grad_fn = _stale_view_node[0](base, t)
            t._output_nr = 0
            t._requires_grad = True
    return t._grad_fn


class _TensorMeta(type):
    """Tensor's metaclass: it only makes the classes print as PyTorch's do
    (``<class 'torch.Tensor'>``, ``<class 'torch.nn.parameter.Parameter'>``); pickling (by
    module and name), ``isinstance`` and subclassing are those of any class."""

    def __repr__(cls):
        if cls is Tensor:
            return "<class 'torch.Tensor'>"
        mod = cls.__module__
        if mod == "numgrad" or mod.startswith("numgrad."):
            mod = "torch" + mod[len("numgrad"):]
        return f"<class '{mod}.{cls.__qualname__}'>"


class Tensor(metaclass=_TensorMeta):
    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_accum",
                 "_hooks", "_post_acc_hooks", "_retains_grad", "_base", "_vc", "_view_ver",
                 "_cmeta", "__weakref__")
    __array_priority__ = 1000  # NumPy defers binary operators to numgrad

    def __init__(self, *args, dtype=None, device=None):
        # legacy constructor: Tensor([1., 2.]) copies data, Tensor(2, 3) is uninitialized
        from numgrad import _factories
        d = _dtype.get(dtype) or _dtype.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int):
            src = _factories.tensor(args[0], dtype=d)._data
        else:
            src = np.empty(tuple(args), d.np)
        _init_like_wrap(self, src)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    @property
    def dtype(self):
        return _NP2DT[self._data.dtype]

    @property
    def device(self):
        return _device.of(self._data)

    @property
    def is_cuda(self):
        return self._data.__class__ is not np.ndarray

    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        from numgrad import _dlpack
        return _dlpack.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from numgrad import _dlpack
        return _dlpack.dlpack_device(self)

    @property
    def __cuda_array_interface__(self):
        a = self._data
        if a.__class__ is np.ndarray:
            raise AttributeError(
                "Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                f"torch.{self.dtype._legacy}Tensor If CUDA data is required use tensor.cuda() "
                "to copy tensor to device memory.")
        if self._requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. If "
                "gradients aren't required, use var.detach() to get Variable that doesn't "
                "require grad.")
        return a.__cuda_array_interface__

    @property
    def is_leaf(self):
        return (self._grad_fn if self._base is None else _view_grad_fn(self)) is None

    @property
    def grad_fn(self):
        return self._grad_fn if self._base is None else _view_grad_fn(self)

    @property
    def output_nr(self):
        return self._output_nr

    def is_floating_point(self):
        return self._data.dtype.kind in "fV"  # "V": bfloat16 (see numgrad/_half.py)

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def stride(self, dim=None):
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[wrap_dim(dim, self._data.ndim)]

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return self._data.flags.c_contiguous
        from numgrad import _memory_format
        _memory_format.check(memory_format, "is_contiguous")
        return _memory_format.is_contiguous(self._data, memory_format)

    is_sparse = False  # numgrad tensors are dense (strided)

    def is_complex(self):
        return False  # no complex dtypes

    def data_ptr(self):
        a = self._data
        if not a.size:
            return 0
        if a.__class__ is np.ndarray:
            return a.__array_interface__["data"][0]
        return a.__cuda_array_interface__["data"][0]

    @property
    def _version(self):
        vc = self._vc
        if vc is INFERENCE:
            raise RuntimeError("Inference tensors do not track version counter.")
        return 0 if vc is None else vc[0]

    def is_inference(self):
        return self._vc is INFERENCE

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if self._grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach().")
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if value and self._data.dtype.kind not in "fV":
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients")
        if value and self._vc is INFERENCE and not grad_mode.state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        # a view made without grad mode keeps requiring grad while its base does (PyTorch)
        self._requires_grad = bool(value) or (self._base is not None and without_grad_mode(self))

    def requires_grad_(self, requires_grad=True):
        if not isinstance(requires_grad, bool):
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {type(requires_grad).__name__}")
        if requires_grad and self._data.dtype.kind not in "fV" and self._grad_fn is None:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            warnings.warn(NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    "assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}")
            a, b = self._data, value._data
            if b.dtype != a.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_dtype.cpp_name(b.dtype)}' to a "
                    f"tensor with grad_dtype '{self.dtype._legacy}'. The gradient must match the "
                    "tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                    "tensor's grad_dtype attribute with a specific dtype, or None to allow any "
                    "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
                    "its gradient may break downstream systems that assume they match.")
            if b.__class__ is not a.__class__:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{value.device.type}' to "
                    f"a tensor with device type '{self.device.type}'. Please ensure that the "
                    "gradient and the tensor are on the same device")
            if b.shape != a.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(b.shape)}' to a "
                    f"tensor of size '{list(a.shape)}'. Please ensure that the "
                    "gradient and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._retains_grad

    @property
    def data(self):
        """The same storage without history (changes through it are not tracked)."""
        t = _wrap(self._data)
        return t

    @data.setter
    def data(self, value):
        # any size, dtype or device, as in PyTorch: what reads a tensor together with its
        # gradient or optimizer state (AccumulateGrad, optimizer steps) checks them
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value._data.dtype.kind != "f":
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        self._data = value._data

    def detach(self):
        """A tensor sharing storage (and version counter) with no history."""
        t = _wrap(self._data)
        t._vc = self._shared_vc()
        return t

    def detach_(self):
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is "
                "set as True, gradients are views of DDP buckets, and hence detach_() cannot "
                "be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    def _shared_vc(self):
        vc = self._vc
        if vc is None:
            vc = self._vc = {0: 0}
        return vc

    def _bump_version(self):
        vc = self._vc
        if vc is None:
            self._vc = {0: 1}
        elif vc is INFERENCE:
            if not grad_mode.state.inference:
                raise RuntimeError(
                    "Inplace update to inference tensor outside InferenceMode is not allowed.You "
                    "can make a clone to get a normal tensor before doing inplace update.See "
                    "https://github.com/pytorch/rfcs/pull/17 for more details.")
        else:
            vc[0] += 1

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        ref = weakref.ref(self)

        def retain(grad):
            t = ref()
            if t is None:
                return
            if t._grad is None:
                t._grad = grad.detach().clone() if not grad_mode.state.enabled else grad.clone()
            else:
                t._grad = t._grad + grad

        self._grad_fn._node_hooks().retain[self._output_nr] = retain

    def register_hook(self, hook):
        """``hook(grad)`` runs when the gradient of this tensor is computed; a returned tensor
        replaces the gradient."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is None:
            if self._hooks is None:
                self._hooks = {}
            hooks = self._hooks
        else:
            hooks = self._grad_fn._node_hooks().tensor_pre.setdefault(self._output_nr, {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after the gradient was accumulated into this leaf's ``.grad``."""
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that doesn't require gradient")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = {}
        handle = RemovableHandle(self._post_acc_hooks)
        self._post_acc_hooks[handle.id] = hook
        return handle

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from numgrad.autograd import backward, engine
        if gradient is None and not retain_graph and not create_graph and inputs is None:
            if engine.backward_scalar(self):
                return
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ------------------------------------------------------------------ conversion
    def item(self):
        if _hook.TAPE is not None:
            _hook.host_read("item()")
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return _values(self._data).reshape(()).item()

    def tolist(self):
        if _hook.TAPE is not None:
            _hook.host_read("tolist()")
        return _values(self._data).tolist()

    def numpy(self, *, force=False):
        if _hook.TAPE is not None:
            _hook.host_read("numpy()")
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")
        a = self._data
        if a.dtype.kind == "V":
            raise TypeError("Got unsupported ScalarType BFloat16")
        if a.__class__ is not np.ndarray:
            if force:
                return a.to_host()
            raise TypeError(_TO_NUMPY)
        return a

    def __array__(self, dtype=None, copy=None):
        if _hook.TAPE is not None:
            _hook.host_read("NumPy conversion")
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")
        a = self._data
        if a.__class__ is not np.ndarray:
            raise TypeError(_TO_NUMPY)
        if a.dtype.kind == "V":
            raise TypeError("Got unsupported ScalarType BFloat16")
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self):
        if _hook.TAPE is not None:
            _hook.host_read("bool()")
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(_values(self._data).reshape(()).item())

    def _scalar_value(self, kind):
        if _hook.TAPE is not None:
            _hook.host_read("a Python number conversion")
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return kind(_values(self._data).reshape(()).item())

    def __float__(self):
        return self._scalar_value(float)

    def __int__(self):
        return self._scalar_value(int)

    def __index__(self):
        if _hook.TAPE is not None:
            _hook.host_read("an index conversion")
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError(
                "only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(()).item())

    def __complex__(self):
        return self._scalar_value(complex)

    __hash__ = object.__hash__

    def __repr__(self, *, tensor_contents=None):
        from numgrad._printing import tensor_repr
        if _hook.TAPE is not None:
            _hook.host_read("printing")
        return tensor_repr(self)

    def __format__(self, spec):
        if _hook.TAPE is not None:
            _hook.host_read("formatting")
        # a plain 0-dim tensor formats as its Python number (f"{loss}", f"{loss:.4f}"); others
        # (and subclasses such as Parameter) as object does: str(), or TypeError with a spec
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        if self._requires_grad and self._grad_fn is not None:
            raise RuntimeError("Can't pickle a non-leaf tensor that requires grad")
        a = self._data
        host = a.copy() if a.__class__ is np.ndarray else a.to_host()
        return (_rebuild, (host, self._requires_grad, str(self.device)))

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment.  If you were attempting to deepcopy a module, "
                "this may be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001")
        t = _wrap(self._data.copy())
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = _wrap(self._grad._data.copy())
        memo[id(self)] = t
        return t

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            where = "cuda." if self.is_cuda else ""
            return f"torch.{where}{self.dtype._legacy}Tensor"
        if isinstance(dtype, str):
            device, dtype = _type_name(dtype)
            return self.to(device=device, dtype=dtype)
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), _dtype.dtype):
            # a legacy tensor type (numgrad.LongTensor, numgrad.cuda.FloatTensor)
            return self.to(device="cuda" if dtype.is_cuda else "cpu", dtype=dtype.dtype)
        if dtype is Tensor:  # 'torch.Tensor': the default dtype
            return self.to(_dtype.get_default_dtype())
        if isinstance(dtype, type):
            mod = dtype.__module__
            name = dtype.__name__ if mod == "builtins" else f"{mod}.{dtype.__name__}"
            raise ValueError(f"invalid type: '{name}'")
        if not isinstance(dtype, _dtype.dtype):
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(dtype)

    def new(self, *args, **kwargs):
        from numgrad._tensor_new import new
        return new(self, *args, **kwargs)

    def resize_(self, *sizes, memory_format=None):
        from numgrad._tensor_new import resize_
        return resize_(self, *sizes, memory_format=memory_format)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from numgrad._factories import tensor
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return self.new_full(_one_size(size), 0, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self.new_full(_one_size(size), 1, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        from numgrad._factories import empty
        return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        from numgrad._factories import full
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)


def _values(a):
    """Data ``a`` as an array NumPy reads numbers from: bfloat16 bit patterns (a record
    array) become float32, CUDA data stays (its ``item``/``tolist`` copy to the host)."""
    if a.dtype.kind != "V":
        return a
    from numgrad import _half
    return _half.to_float32(_arrays_host(a))


def _arrays_host(a):
    from numgrad import _arrays
    return _arrays.host(a)


def _type_name(name):
    """``'torch.FloatTensor'`` or ``'torch.cuda.FloatTensor'``: (device, dtype)."""
    for d in _dtype.ALL:
        for where, device in (("", "cpu"), ("cuda.", "cuda")):
            if name == f"torch.{where}{d._legacy}Tensor":
                return device, d
    raise ValueError(f"invalid type: {name!r}")


def _one_size(size):
    """``f(2, 3)`` or ``f((2, 3))``: the size as one argument."""
    return size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def _rebuild(data, requires_grad, device="cpu"):
    from numgrad import _arrays
    t = _wrap(_arrays.to_device(data, _device.get(device)))
    t._requires_grad = requires_grad
    return t
