"""Sampling with PyTorch's CPU numbers: ``multinomial``, ``bernoulli``/``bernoulli_``,
``exponential_`` and ``normal`` with tensor ``mean``/``std``.

Each draws from the generator exactly as PyTorch's CPU kernels do (``numgrad.random`` replays
the MT19937 stream; ``numgrad.kernels.cpu.sampling`` turns raw draws into samples), so after
``manual_seed(s)`` the samples and the generator state afterwards are PyTorch's:

* ``exponential_(lambd)``: ``-1/lambd * log1p(-u)`` in float64 (u: 53-bit uniform), rounded
  to the tensor's dtype, elements visited in memory order;
* ``multinomial`` without replacement (or one sample): the largest ``p / q`` per row, q
  exponential variates drawn into a tensor laid out like ``input``; with replacement: a
  running sum in ``input``'s dtype, normalized, searched with one 53-bit uniform per sample;
* ``bernoulli(p)`` for a tensor p: ``u < p`` with a 24-bit uniform (float32 p) or a 53-bit
  one (float64 p); ``bernoulli_(p)`` for a number p: a 53-bit uniform below p;
* ``normal(mean, std)`` with tensors: standard normals in the result's dtype, times ``std``,
  plus ``mean`` (``std`` a number: normals of that std, plus ``mean``).

Samples are not differentiable: as in PyTorch the nodes give zero gradients
(``ExponentialBackward0``, ``BernoulliBackward0/1/2``, ``NormalBackward1/2/3``), and
``bernoulli(input, p)`` records PyTorch's ``NotImplemented`` node.
"""

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._shape import broadcast_shapes, check_size, parse_shape
from numgrad._spellings import FACTORY, bind, bool_arg, int_arg, invalid_combination, type_name
from numgrad.autograd.graph import Node
from numgrad.kernels import LazyKernels
from numgrad.ops import elementwise as ew
from numgrad.ops._util import EW, Tensor, _wrap, dtype_of, edge, state
from numgrad.ops.inplace import ZeroBackward0, apply_, check_inplace, normal_
from numgrad.ops.registry import declare, inplace_of, write_out
from numgrad.random import Generator, default_generator

SMP = LazyKernels("sampling")

_GEN = "torch.Generator generator = None"
NORMAL_SIGNATURES = (
    f"(Tensor mean, Tensor std, *, {_GEN}, Tensor out = None)",
    f"(Tensor mean, float std = 1, *, {_GEN}, Tensor out = None)",
    f"(float mean, Tensor std, *, {_GEN}, Tensor out = None)",
    f"(float mean, float std, tuple of ints size, *, {_GEN}, {FACTORY})",
)
_PROBABILITY_RANGE = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this "
                      "error message be improved?  If so, please report an enhancement request "
                      "to PyTorch.)")
_AMINMAX = ("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity.")


# ----------------------------------------------------------------------------------------
# arguments
# ----------------------------------------------------------------------------------------


def generator_arg(fname, g):
    if g is None:
        return default_generator
    if not isinstance(g, Generator):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not "
                        f"{type_name(g)}")
    return g


def tensor_arg(fname, name, v, position):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {position}) must be Tensor, "
                        f"not {type_name(v)}")
    return v


def _not_implemented(kernel, t):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_of(t)._legacy}'")


# ----------------------------------------------------------------------------------------
# the order in which PyTorch's serial CPU kernels visit elements
# ----------------------------------------------------------------------------------------


def stride_order(a):
    """Axes from outermost to innermost in the order a serial kernel writing ``a`` visits its
    elements, PyTorch's (TensorIterator's) order: an insertion sort by stride, equal strides
    putting the smaller size inside, a broadcast (stride 0) axis staying where it is."""
    shape, strides = a.shape, [abs(s) for s in a.strides]
    perm = list(range(a.ndim - 1, -1, -1))  # innermost first

    def after(d0, d1):  # 1: d0 goes outside d1, -1: inside, 0: either
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, a.ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = after(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm[::-1]


def dense_order(a):
    """The axes order of ``empty_like(a)``: ``a``'s own (a dense tensor's strides are kept,
    and PyTorch infers dense strides in the same order for any other)."""
    return stride_order(a)


def laid_out(flat, shape, perm):
    """An array of ``shape`` whose elements, visited in axes order ``perm``, are ``flat``."""
    if perm == sorted(perm):
        return flat.reshape(shape)
    inverse = np.argsort(perm)
    return flat.reshape([shape[d] for d in perm]).transpose(inverse)


def _uniform_count(n, wide):
    return 2 * n if wide else n


def exponential_draws(g, n, dt, lambd=1.0):
    """``n`` exponential variates of rate ``lambd`` in NumPy dtype ``dt``."""
    half = np.dtype(dt).itemsize < 4  # float16/bfloat16: computed in float64, then rounded
    out = _arrays.new(n, np.float64 if half else dt)
    if n:
        SMP.exponential(g.raw(2 * n), out, float(lambd))
    return out.astype(dt) if half else out


# ----------------------------------------------------------------------------------------
# nodes: samples have zero derivatives
# ----------------------------------------------------------------------------------------


ExponentialBackward0 = type("ExponentialBackward0", (ZeroBackward0,), {"__slots__": ()})
BernoulliBackward2 = type("BernoulliBackward2", (ZeroBackward0,), {"__slots__": ()})


class _ZeroGrads(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx of a sample = 0 for every tensor argument
    def _backward(self, g):
        zero = ew.mul(g, 0)
        return tuple(zero if f[0] is not None else None for f in self.next_functions)


BernoulliBackward0 = type("BernoulliBackward0", (_ZeroGrads,), {"__slots__": ()})
BernoulliBackward1 = type("BernoulliBackward1", (_ZeroGrads,), {"__slots__": ()})
NormalBackward1 = type("NormalBackward1", (_ZeroGrads,), {"__slots__": ()})
NormalBackward2 = type("NormalBackward2", (_ZeroGrads,), {"__slots__": ()})
NormalBackward3 = type("NormalBackward3", (_ZeroGrads,), {"__slots__": ()})


class NotImplemented(Node):  # noqa: A001  (PyTorch's node name)
    """The node of an op PyTorch has no derivative for; backward raises its error."""

    __slots__ = ()
    _meta_only = True

    def name(self):
        return "torch::autograd::NotImplemented"

    def _backward(self, g):
        raise RuntimeError("derivative for aten::bernoulli is not implemented")


def _record(out, node_cls, inputs):
    """Attach ``node_cls`` to ``out`` when a tensor among ``inputs`` requires grad."""
    if state.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        node = node_cls(tuple(edge(t) if isinstance(t, Tensor) else (None, 0) for t in inputs))
        ew._record(out, node, inputs, out._data.shape, dtype_of(out))
    return out


def _fill_(self, draw, node_cls, extra=()):
    """``self`` filled in place with ``draw(self)`` (an array of self's shape), recording
    ``node_cls`` over ``self`` (and the tensors in ``extra``) as PyTorch does."""
    def drawn(t):  # host draws, moved to t's device
        return _arrays.to_device(draw(t), _device.of(t._data))

    def op(src, *args):
        return _record(_wrap(drawn(self)), node_cls, (src, *args))

    def raw(t, *args):
        EW.unary(EW.copy, drawn(t), t._data.dtype, out=t._data)

    return apply_(self, op, *extra, raw=raw)


# ----------------------------------------------------------------------------------------
# exponential_
# ----------------------------------------------------------------------------------------


@inplace_of("exponential", nodes=("ExponentialBackward0",))
def exponential_(self, *args, generator=None, **kwargs):
    """Fill ``self`` with exponential variates of rate ``lambd``, PyTorch's numbers."""
    g = generator_arg("exponential_", generator)
    lambd = bind("exponential_", args, kwargs, ("lambd",), 0)[0].get("lambd", 1.0)
    if isinstance(lambd, Tensor):
        lambd = lambd.item()
    if self._data.dtype.kind != "f":
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be "
            f"a floating point but you specified {dtype_of(self)._legacy}")
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    check_inplace(self)

    def draw(t):
        a = t._data
        return laid_out(exponential_draws(g, a.size, a.dtype, lambd), a.shape, stride_order(a))

    return _fill_(self, draw, ExponentialBackward0)


# ----------------------------------------------------------------------------------------
# bernoulli
# ----------------------------------------------------------------------------------------


def _bernoulli_tensor_draw(g, p, shape, perm, dt=np.float64):
    """0/1 draws (NumPy dtype ``dt``) of ``shape`` against probabilities ``p`` (broadcast to
    ``shape``), visited in axes order ``perm``."""
    pd = _arrays.host(p._data)  # drawn on the host, as every numgrad random tensor is
    if pd.dtype.kind != "f":
        raise _not_implemented("bernoulli_tensor_cpu_p_", p)
    if not SMP.all_between(np.ascontiguousarray(pd).reshape(-1), 0.0, 1.0):
        raise RuntimeError(_PROBABILITY_RANGE)
    pe = np.broadcast_to(pd, shape).transpose(perm)
    flat = np.ascontiguousarray(pe).reshape(-1)
    wide = pd.dtype == np.float64
    out = _arrays.new(flat.size, dt)
    if out.size:
        SMP.bernoulli_tensor(g.raw(_uniform_count(out.size, wide)), flat, out, wide)
    return laid_out(out, shape, perm)


def _expand_error(p, shape):
    ps = p._data.shape
    if len(ps) > len(shape):
        return RuntimeError(
            f"expand(torch.{dtype_of(p)._legacy}Tensor{{{list(ps)}}}, size={list(shape)}): the "
            f"number of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(ps)})")
    for i in range(1, len(ps) + 1):
        if ps[-i] != 1 and ps[-i] != shape[-i]:
            return RuntimeError(
                f"The expanded size of the tensor ({shape[-i]}) must match the existing size "
                f"({ps[-i]}) at non-singleton dimension {len(shape) - i}.  Target sizes: "
                f"{list(shape)}.  Tensor sizes: {list(ps)}")
    return None


def _scalar_p(p):
    if isinstance(p, Tensor):
        return p
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    return p


def _bernoulli(fname, input, p, generator, positions_of_p=None):
    tensor_arg(fname, "input", input, 1)
    g = generator_arg(fname, generator)
    a = input._data
    perm = list(range(a.ndim))  # the result is row-major whatever input's layout
    if p is None:
        drawn = _bernoulli_tensor_draw(g, input, a.shape, perm, a.dtype)
        out = _wrap(_arrays.to_device(drawn, _device.of(a)))
        return _record(out, BernoulliBackward0, (input,))
    if isinstance(p, Tensor):
        raise invalid_combination(fname, (input, p), {}, (
            f"(Tensor input, *, {_GEN}, Tensor out = None)",
            f"(Tensor input, float p, *, {_GEN})"))
    p = _scalar_p(p)
    out = _wrap(laid_out(g.bernoulli(a.size, p, a.dtype), a.shape, perm))
    return _record(out, NotImplemented, (input,))


@declare(nodes=("BernoulliBackward0", "NotImplemented"))
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 draws: elementwise at the probabilities in ``input``, or at rate ``p`` in
    ``input``'s shape and dtype (PyTorch's numbers)."""
    if out is not None:
        return write_out(bernoulli, out, input, p, generator=generator)
    return _bernoulli("bernoulli", input, p, generator)


@inplace_of("bernoulli", nodes=("BernoulliBackward1", "BernoulliBackward2"))
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill ``self`` with 0/1 draws: at rate ``p`` (a number), or elementwise against the
    probabilities of tensor ``p`` (broadcast to ``self``), PyTorch's numbers."""
    g = generator_arg("bernoulli_", generator)
    p = _scalar_p(p)
    shape = self._data.shape
    if isinstance(p, Tensor):
        err = _expand_error(p, shape)
        if err is not None:
            raise err
    check_inplace(self)

    def draw(t):
        a = t._data
        perm = stride_order(a)
        if isinstance(p, Tensor):
            return _bernoulli_tensor_draw(g, p, shape, perm)
        return laid_out(g.bernoulli(a.size, p, a.dtype), shape, perm)

    if isinstance(p, Tensor):
        return _fill_(self, draw, BernoulliBackward1, (p,))
    return _fill_(self, draw, BernoulliBackward2)


# ----------------------------------------------------------------------------------------
# multinomial
# ----------------------------------------------------------------------------------------


def _check_probabilities(codes, replacement):
    """PyTorch's error for the first invalid row (``SMP.check_rows`` codes). A compiled
    trace replays the search for invalid rows and checks that none is found again."""
    bad = _arrays.host_step(np.flatnonzero, codes)
    if not bad.size:
        return
    if replacement:
        code = codes[bad[0]]
        raise RuntimeError("invalid multinomial distribution (" + (
            "encountering probability entry < 0", "encountering probability entry = infinity "
            "or NaN", "sum of probabilities <= 0")[code - 1] + ")")
    if (codes == 1).any() or (codes == 2).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def sample_multinomial(input, n, replacement, g):
    """The (rows, n) int64 samples of probabilities ``input`` (1-D or 2-D, checked)."""
    a = input._data
    if a.__class__ is not np.ndarray:
        a = input.cpu()._data
    rows = a.shape[0] if a.ndim == 2 else 1
    cats = a.shape[-1]
    res = _arrays.new((rows, n), np.int64)
    if not a.size:
        if replacement and not cats and rows:
            raise RuntimeError(_AMINMAX)
        return res
    if a.itemsize < 4:  # float16/bfloat16 weights: sampled in float32 (PyTorch's accumulation)
        a = a.astype(np.float32)
    p2 = a.reshape(rows, cats)
    _check_probabilities(SMP.check_rows(p2), replacement and n > 1)
    if replacement and n > 1:
        SMP.multinomial_replacement(p2, g.raw(2 * rows * n), res)
    else:
        q = laid_out(exponential_draws(g, a.size, a.dtype), a.shape, dense_order(a))
        SMP.multinomial_exponential(p2, q.reshape(rows, cats), res)
    return res


def _multinomial(fname, args, kwargs, self=None):
    """``multinomial`` (``self``: the tensor of the method form, not among ``args``)."""
    first = self is None
    names = ("input", "num_samples", "replacement")[1 - first:]
    values, positions = bind(fname, args, kwargs, names, 1 + first, ("generator", "out"))
    input = values["input"] if first else self
    if first:
        tensor_arg(fname, "input", input, 1)
    n = int_arg(fname, "num_samples", values["num_samples"], positions)
    replacement = bool_arg(fname, "replacement", values.get("replacement", False), positions)
    g = generator_arg(fname, values.get("generator"))
    out = values.get("out")
    a = input._data
    if a.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if a.dtype.kind != "f":
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{dtype_of(input)._legacy}")
    if out is not None and out._data.dtype != np.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {dtype_of(out)._legacy}")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n > a.shape[-1]:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if a.shape[-1] > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    res = sample_multinomial(input, n, replacement, g)
    res = res.reshape(n) if a.ndim == 1 else res
    if out is None:
        return _wrap(res) if input.device.type == "cpu" else _wrap(res).to(input.device)
    check_inplace(out)
    if out._data.shape != res.shape:
        out._data = _wrap(res).to(out.device)._data
    else:
        EW.unary(EW.copy, res, np.int64, out=out._data)
    out._bump_version()
    return out


def _multinomial_method(self, *args, **kwargs):
    return _multinomial("multinomial", args, kwargs, self)


@declare(method=_multinomial_method)
def multinomial(*args, **kwargs):
    """``multinomial(input, num_samples, replacement=False, *, generator=None, out=None)``:
    category indices drawn from the (unnormalized) weights in each row of ``input``,
    PyTorch's samples for the same seed."""
    return _multinomial("multinomial", args, kwargs)


# ----------------------------------------------------------------------------------------
# normal
# ----------------------------------------------------------------------------------------


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _std_tensor_ok(std):
    if not SMP.all_between(np.ascontiguousarray(std._data).reshape(-1), 0.0, np.inf):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _normal_tensors(mean, std, g):
    """``normal`` with a tensor ``mean`` and/or ``std`` (the other may be a number)."""
    from numgrad.autograd.grad_mode import no_grad
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    base = mean if mt else std
    if base._data.dtype.kind != "f":
        raise _not_implemented("normal_kernel_cpu", base)
    dt = dtype_of(base)
    if st:
        _std_tensor_ok(std)
    elif not float(std) >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
    shape = broadcast_shapes(mean._data.shape, std._data.shape) if mt and st else \
        base._data.shape
    with no_grad():
        if st:
            z = _wrap(g.normal(shape, dt.np))
            out = ew.add(ew.mul(z, std).to(dt), mean).to(dt)
        else:
            out = ew.add(_wrap(g.normal(shape, dt.np, 0.0, float(std))), mean).to(dt)
    node = NormalBackward3 if mt and st else NormalBackward1 if mt else NormalBackward2
    return _record(out, node, tuple(t for t in (mean, std) if isinstance(t, Tensor)))


def _normal_numbers(mean, std, size, g, dtype, device, requires_grad):
    """``normal(mean, std, size)`` with numbers: the factory (``numgrad._factories``)."""
    from numgrad._factories import normal as factory
    d = _dtype.arg(dtype, "normal") or _dtype.get_default_dtype()
    if d._kind != 2:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{d._legacy}'")
    check_size(parse_shape((size,)))
    out = factory(mean, std, size, generator=g, dtype=d, device=device)
    return out.requires_grad_() if requires_grad else out


_FACTORY_KEYWORDS = ("generator", "out", "dtype", "layout", "device", "pin_memory",
                     "requires_grad")


def _named(name, fn):
    fn.__name__ = name
    return fn


def normal(*args, **kwargs):
    """PyTorch's four ``normal`` overloads: tensor/tensor, tensor/number, number/tensor
    ``mean``/``std`` (the result takes their broadcast shape), and number/number with
    ``size``."""
    values, _ = bind("normal", args, kwargs, ("mean", "std", "size"), 1,
                     _FACTORY_KEYWORDS)
    mean, std, size = values["mean"], values.get("std"), values.get("size")
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    factory_only = any(k in kwargs for k in ("dtype", "layout", "device", "pin_memory",
                                             "requires_grad"))
    tensors = (mt and (st or std is None or _is_number(std))) or (st and _is_number(mean))
    if tensors and size is None and not factory_only:
        g = generator_arg("normal", values.get("generator"))
        out = values.get("out")
        if out is not None:
            return write_out(_named("normal", lambda *a: _normal_tensors(*a)), out, mean,
                             1.0 if std is None else std, g)
        return _normal_tensors(mean, 1.0 if std is None else std, g)
    if _is_number(mean) and _is_number(std) and isinstance(size, (tuple, list)):
        g = generator_arg("normal", values.get("generator"))
        dtype = values.get("dtype")
        if values.get("out") is not None and dtype is None:  # drawn in out's dtype
            dtype = values["out"].dtype
        out = _normal_numbers(mean, std, size, g, dtype, values.get("device"),
                              values.get("requires_grad", False))
        if values.get("out") is not None:
            return write_out(_named("normal", lambda: out), values["out"])
        return out
    raise invalid_combination("normal", args, kwargs, NORMAL_SIGNATURES)


normal = declare("normal", nodes=("NormalBackward1", "NormalBackward2", "NormalBackward3"),
                 variants=("function",))(normal)
inplace_of("normal")(normal_)  # Tensor.normal_ (numgrad.ops.inplace) stays on the new entry
