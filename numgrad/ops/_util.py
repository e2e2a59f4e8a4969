"""Helpers shared by the op modules: lazy kernel access, argument coercion, recording."""

import numpy as np

from numgrad import _dtype
from numgrad.autograd import grad_mode
from numgrad.kernels import EW, IDX, LIN, RED, LazyKernels  # noqa: F401  (re-exported)
from numgrad.tensor import INFERENCE, NO_EDGE, Tensor, _wrap, edge

state = grad_mode.state
_NP2DT = {d.np: d for d in _dtype.ALL}
SCALAR_TYPES = (int, float, bool)


def dtype_of(t):
    return _NP2DT[t._data.dtype]


def is_scalar(v):
    return v.__class__ in SCALAR_TYPES or isinstance(v, np.generic)


def to_tensor(v, name="other"):
    """Tensor arguments pass through; NumPy arrays and nested sequences are converted."""
    if isinstance(v, Tensor):
        return v
    from numgrad._factories import tensor
    return tensor(v)


def as_type(t, dt):
    """The data of ``t`` in dtype ``dt`` (a cast runs the copy kernel)."""
    a = t._data
    if a.dtype == dt.np:
        return a
    if a.itemsize == 2 or dt.np.itemsize == 2:
        from numgrad import _half
        if _half.is_half(a.dtype) or _half.is_half(dt.np):  # the 16-bit floats' kernels
            return _half.cast(a, dt.np)
    return EW.unary(EW.copy, a, dt.np)


def scalar_value(s, dt):
    """A Python scalar converted for a kernel computing in dtype ``dt``."""
    if dt._kind == 2:
        return float(s)
    if dt._kind == 1:
        v = int(s)
        return v - 2**64 if v >= 2**63 else v  # uint64-range ints wrap into int64, as PyTorch
    return bool(s)


def float_type(dt):
    """The dtype a float-valued op (exp, div, mean, ...) produces for an input of ``dt``."""
    return dt if dt._kind == 2 else _dtype.get_default_dtype()


def needs_grad(*ts):
    """Whether an op on these tensors records a node."""
    if not state.enabled:
        return False
    for t in ts:
        if t.__class__ is not float and t._requires_grad:
            return True
    return False


def attach(out, node):
    """Make ``node`` the grad_fn of ``out`` and note the versions of what it saved.

    ``node._vchk`` lists (tensor, version, None) for saved tensors and (version counter,
    version, array) for saved outputs; the engine checks them before running the node.
    """
    out._grad_fn = node
    out._requires_grad = True
    saved = node._saved
    if saved:
        chk = []
        od = out._data
        for v in saved:
            if v is od:
                vc = out._vc
                if vc is None:
                    vc = out._vc = [0]
                chk.append((vc, vc[0], v))
            elif isinstance(v, Tensor):
                vc = v._vc
                if vc is None:
                    chk.append((v, 0, None))
                elif vc is INFERENCE:
                    raise RuntimeError(
                        "Inference tensors cannot be saved for backward. Please do not use "
                        "Tensors created in inference mode in computation tracked by "
                        "autograd. To work around this, you can make a clone to get a normal "
                        "tensor and use it in autograd, or use `torch.no_grad()` instead of "
                        "`torch.inference_mode()`.")
                else:
                    chk.append((v, vc[0], None))
        if chk:
            node._vchk = chk
    return out


def meta_for(t, shape, dt):
    """(shape, dtype) of input ``t`` when its gradient must be reduced or cast, else None."""
    a = t._data
    if a.shape == shape and a.dtype == dt.np:
        return None
    return (a.shape, dtype_of(t))


def wrap_out(node, arr, nr=0):
    """A saved output array as a tensor of ``node`` (differentiable when create_graph)."""
    t = _wrap(arr)
    t._grad_fn = node
    t._output_nr = nr
    t._requires_grad = True
    return t


__all__ = ["EW", "RED", "IDX", "LIN", "Tensor", "_wrap", "edge", "NO_EDGE", "state",
           "dtype_of", "is_scalar", "to_tensor", "as_type", "scalar_value", "float_type",
           "needs_grad", "attach", "meta_for", "wrap_out"]
