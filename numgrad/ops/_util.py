"""Helpers shared by the op modules: lazy kernel access, argument coercion, recording."""

import numpy as np

from numgrad import _dtype
from numgrad.autograd import grad_mode
from numgrad.kernels import EW, IDX, LIN, RED, LazyKernels  # noqa: F401  (re-exported)
from numgrad.tensor import INFERENCE, NO_EDGE, Tensor, _wrap, edge

state = grad_mode.state
_NP2DT = {d.np: d for d in _dtype.ALL}
# ``isinstance(v, Tensor)`` for a ``v`` of another class: Tensor's metaclass makes the builtin
# look ``__instancecheck__`` up and bind it on every such call (about 0.4 us); this is that
# check, bound once. Hot loops test ``v.__class__ is Tensor or is_tensor_instance(v)``.
is_tensor_instance = Tensor.__instancecheck__
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

    ``node._vchk``, which the engine checks before running the node (``check_versions``):
    ``None``, nothing to check; ``True``, the tensors in ``_saved`` were at version 0; a
    version counter ``{0: 0}``, ``out``'s own (new), the node having saved ``out``'s array
    (the only array in ``_saved``), expected at version 0 like the tensors in ``_saved``;
    else a list of (tensor, version, None) for saved tensors and (version counter, version,
    array) for saved outputs. The two short forms keep a graph of tiny ops to at most one
    tracked object per node for its checks.
    """
    out._grad_fn = node
    out._requires_grad = True
    saved = node._saved
    if saved:
        od = out._data
        short = True  # whether a short form says it all
        saves_out = tensors = False
        for v in saved:
            if v is od:
                if saves_out or out._vc is not None:
                    short = False
                    break
                saves_out = True
            elif v.__class__ is Tensor or is_tensor_instance(v):
                vc = v._vc
                if vc is not None and (vc is INFERENCE or vc[0] != 0):
                    short = False
                    break
                tensors = True
        if not short or (saves_out and len(saved) > 1 and sum(map(is_array, saved)) != 1):
            _explicit_checks(out, node, saved, od)
        elif saves_out:
            node._vchk = out._vc = {0: 0}
        elif tensors:
            node._vchk = True
    return out


def is_array(v):
    """Whether ``v`` is tensor data (a NumPy array or CUDA data), as a node saves its output."""
    return v.__class__ is np.ndarray or v.__class__.__name__ == "CudaArray"


def _explicit_checks(out, node, saved, od):
    """``node._vchk`` as the list of (target, version, array) triples (see ``attach``)."""
    chk = []
    for v in saved:
        if v is od:
            vc = out._vc
            if vc is None:
                vc = out._vc = {0: 0}
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
    node._vchk = chk or None


def version_checks(node, od):
    """``node._vchk`` in its list form, ``od`` being the data of the output it was attached to
    (``inplace`` rewrites the checks of a node whose output went into another tensor)."""
    chk = node._vchk
    if chk is None or (chk is not True and chk[0].__class__ is not int):
        return chk
    out = [] if chk is True else [(chk, 0, od)]
    return out + [(v, 0, None) for v in node._saved if isinstance(v, Tensor)]


_SHARED = {}  # _meta value -> the one tuple every node with that value holds


def shared(value):
    """One tuple per distinct value (a node's ``_meta``, a select's saved place), shared by
    every node that holds it: a graph of tiny ops then gives the garbage collector no new
    tracked object for it. Bounded: the table starts over past 4096 values."""
    s = _SHARED.get(value)
    if s is None:
        if len(_SHARED) >= 4096:
            _SHARED.clear()
        s = _SHARED[value] = value
    return s


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
           "needs_grad", "attach", "is_array", "version_checks", "shared", "meta_for", "wrap_out"]
