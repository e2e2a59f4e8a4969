"""SGD, Adam, AdamW, RMSprop and Adagrad: one fused Numba update per parameter, computed as
PyTorch's single-tensor implementations compute it (defaults, validation and state names included).

The kernels read flat arrays of the parameter's size and dtype, and the parameter's step count
(a one-element view of ``state["step"]``), which they increment and turn into the bias
corrections or the decayed learning rate themselves: the update reads nothing on the host, so
a compiled training step replays it. Each step checks first that the gradient and the state
it reads are exactly that (one comparison per array); anything else (a ``.data`` or
``.grad.data`` rebound to another size or dtype, a loaded state dict with foreign shapes, a
non-tensor state) goes to ``_checked``, which replays PyTorch's sequence of tensor operations
on shapes, dtypes and devices and raises the error PyTorch raises, or, where PyTorch
broadcasts or casts, runs the kernel on conforming copies."""

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._dtype import bool_, from_numpy_dtype, result_type
from numgrad._shape import broadcast_shapes
from numgrad.autograd.grad_mode import no_grad
from numgrad.kernels import LazyKernels
from numgrad.kernels._guard import OVERLAP, internal_overlap
from numgrad.optim import _hyper
from numgrad.optim.optimizer import Optimizer, required
from numgrad.tensor import Tensor, _wrap

NN = LazyKernels("nn")
OPT = LazyKernels("optim")


def _check(value, name):
    """``if not 0.0 <= value``, as PyTorch's constructors test (NaN fails; a string raises
    Python's TypeError of that comparison)."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name}: {value}")


def _check_sgd(value, name):
    """SGD's ``if value < 0.0`` (NaN passes)."""
    if value < 0.0:
        raise ValueError(f"Invalid {name}: {value}")


def _zeros_like(p):
    return _wrap(_arrays.zeros(p._data, p._data.shape, p._data.dtype))


def _scalar_step():
    return _wrap(np.zeros((), np.float32))


_STEPS = "API has changed, `state_steps` argument must contain a list of singleton tensors"


def _step_tensor(state):
    """``state["step"]`` after PyTorch's checks: a tensor, whose memory does not repeat (it is
    incremented in place)."""
    step_t = state["step"]
    if not isinstance(step_t, Tensor):
        raise RuntimeError(_STEPS)
    _meta(step_t, written=True)
    return step_t


_COUNTS = (np.dtype(np.float32), np.dtype(np.float64))


def _count(step_t):
    """The step count as the fused kernels take it: a one-element view of a 0-d float32 or
    float64 host tensor's data, which the kernel increments and reads itself (so a compiled
    step that replays the kernel counts on); None sends the step to the slow path."""
    a = getattr(step_t, "_data", None)
    if (a.__class__ is np.ndarray and a.ndim == 0 and a.dtype in _COUNTS and a.flags.writeable
            and isinstance(step_t, Tensor)):
        return a.reshape(1)
    return None


def _count_of(step):
    """For the slow path, which counts the step tensor itself: a scratch count holding
    ``step`` (the count before this step), which the kernel increments to the step's number."""
    return np.array([step], np.float64)


# ----------------------------------------------------------------------------------------
# PyTorch's checks, replayed on what they look at (the slow path)
# ----------------------------------------------------------------------------------------

_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
             "to invert a mask, use the `~` or `logical_not()` operator instead.")
_ALPHA = "For integral input tensors, argument alpha must not be a floating point number."


class _Meta:
    """An operand as PyTorch's checks see it: shape, dtype (``_dtype.result_type`` reads
    ``dtype`` and ``ndim``) and device (the data's class)."""

    __slots__ = ("shape", "dtype", "cls")

    def __init__(self, shape, dtype, cls):
        self.shape = shape
        self.dtype = dtype
        self.cls = cls

    @property
    def ndim(self):
        return len(self.shape)


def _meta(t, method=None, written=False):
    """``t``'s _Meta; ``method`` is what PyTorch calls on it first (its error for a
    non-tensor); ``written`` refuses memory that repeats elements, as in-place ops do."""
    if not isinstance(t, Tensor):
        raise AttributeError(f"'{type(t).__name__}' object has no attribute '{method}'")
    a = t._data
    dt = from_numpy_dtype(a.dtype)
    if dt is None:
        raise TypeError(f"optimizer state of unsupported dtype {a.dtype}")
    if written and internal_overlap(a.shape, a.strides):
        raise RuntimeError(OVERLAP)
    return _Meta(a.shape, dt, a.__class__)


def _same_device(*ops):
    first = ops[0].cls
    for o in ops[1:]:
        if o.cls is not first:
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               f"least two devices, {_device.CUDA0} and {_device.CPU}!")


def _neg(g):
    if g.dtype is bool_:
        raise RuntimeError(_NEG_BOOL)
    return g


def _op(a, *others, alpha=None):
    """The result of an out-of-place op on ``a`` and ``others`` (``add``, ``addcmul``)."""
    shape = a.shape
    for o in others:
        shape = broadcast_shapes(shape, o.shape)
    _same_device(a, *others)
    dt = result_type(a, *others)
    if isinstance(alpha, float) and not dt.is_floating_point:
        raise RuntimeError(_ALPHA)
    return _Meta(shape, dt, a.cls)


def _inplace(out, *others, scalar=None, alpha=None):
    """``out.op_(*others)`` (and a Python ``scalar`` operand): the broadcast must be ``out``'s
    shape and the result must cast to ``out``'s dtype."""
    shape = out.shape
    for o in others:
        shape = broadcast_shapes(shape, o.shape)
    if shape != out.shape:
        raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    _same_device(out, *others)
    dt = result_type(out, *others, *(() if scalar is None else (scalar,)))
    if dt._kind > out.dtype._kind:
        raise RuntimeError(f"result type {dt._legacy} can't be cast to the desired output type "
                           f"{out.dtype._legacy}")
    if isinstance(alpha, float) and not dt.is_floating_point:
        raise RuntimeError(_ALPHA)


def _lerp(out, end):
    if end.dtype is not out.dtype:
        raise RuntimeError(f"expected dtype {_dtype.cpp_name(out.dtype.np)} for `end` but got "
                           f"dtype {_dtype.cpp_name(end.dtype.np)}")
    _inplace(out, end, scalar=0.5)


def _sqrt(a):
    return a if a.dtype.is_floating_point else _Meta(a.shape, result_type(a, 0.5), a.cls)


def _step_value(step_t):
    """``_get_value(step)``: the number a step holds (PyTorch's ``item()`` error else)."""
    a = step_t._data
    if a.size != 1:
        raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
    return float(_arrays.item(a.reshape(())))


# ----------------------------------------------------------------------------------------
# operands for the kernels once the checks passed
# ----------------------------------------------------------------------------------------


def _flat_in(t, like):
    """A read-only operand: ``t``'s values broadcast to ``like``'s shape, in its dtype."""
    a = t._data
    pa = like._data
    if a.dtype != pa.dtype:
        t = t.to(like.dtype)
    if a.shape != pa.shape:
        t = t.expand(pa.shape)
    return t.contiguous()._data.reshape(-1)


def _flat_out(t, like, writebacks, state=None, key=None):
    """A written operand. One of another dtype or layout is updated through a conforming copy
    (written back after the kernel); one of another shape, which PyTorch would broadcast, is
    replaced in ``state`` by one of the parameter's shape (its elements are all equal along
    the broadcast dims, so the values are PyTorch's)."""
    a = t._data
    pa = like._data
    if a.shape != pa.shape:
        new = t.to(like.dtype).expand(pa.shape).contiguous()
        if new._data is a:
            new = new.clone()
        state[key] = new
        return new._data.reshape(-1)
    if a.dtype == pa.dtype and a.flags.c_contiguous:
        return a.reshape(-1)
    tmp = t.to(like.dtype).contiguous()
    if tmp._data is a:
        tmp = tmp.clone()
    writebacks.append((t, tmp))
    return tmp._data.reshape(-1)


def _writeback(writebacks):
    for t, tmp in writebacks:
        t.copy_(tmp)


def _param(p):
    """The parameter as the kernel updates it: (flat data, write-backs)."""
    a = p._data
    if a.flags.c_contiguous:
        return a.reshape(-1), []
    writebacks = []
    return _flat_out(p, p, writebacks), writebacks


# ----------------------------------------------------------------------------------------
# optimizers
# ----------------------------------------------------------------------------------------


def _fits(t, pd):
    """Whether ``t`` (a gradient or state) is what the fused kernels read beside parameter data
    ``pd``: a tensor of its shape, dtype and device, C-contiguous. Anything else takes the
    checked slow path."""
    a = getattr(t, "_data", None)
    return (a is not None and a.shape == pd.shape and a.dtype is pd.dtype
            and a.__class__ is pd.__class__ and a.flags.c_contiguous)


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr is not required:
            _check_sgd(lr, "learning rate")
        _check_sgd(momentum, "momentum value")
        _check_sgd(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _group_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False,
                           fused=False)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            flags = (bool(group["nesterov"]), bool(group["maximize"]))
            replay = not _hyper.plain(group["lr"], group["weight_decay"], momentum,
                                      group["dampening"])
            if not replay:
                args = (float(group["lr"]), float(group["weight_decay"]), float(momentum),
                        float(group["dampening"])) + flags
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if replay:  # PyTorch's TypeErrors (its first step reads no momentum)
                    first_step = momentum != 0 and self.state[p].get("momentum_buffer") is None
                    args = _hyper.sgd(group, first_step) + flags
                pd = p._data
                fast = pd.size != 0 and _fits(g, pd) and pd.flags.c_contiguous
                first = False
                bf = pf = pd.reshape(-1)
                if momentum != 0:  # plain SGD keeps no state, as in PyTorch
                    buf = self.state[p].get("momentum_buffer")
                    if buf is None:
                        first = True
                        buf = _zeros_like(p)
                        bf = buf._data.reshape(-1)
                    elif fast:
                        fast = _fits(buf, pd)
                        if fast:
                            bf = buf._data.reshape(-1)
                if fast:
                    NN.sgd_step(pf, g._data.reshape(-1), bf, *args, first)
                else:
                    self._slow_step(p, g, buf if momentum != 0 else None, first, group, args)
                if first:
                    self.state[p]["momentum_buffer"] = buf
                p._bump_version()
        return loss

    def _slow_step(self, p, g, buf, first, group, args):
        momentum = group["momentum"]
        P = _meta(p, written=True)
        G = _neg(_meta(g)) if group["maximize"] else _meta(g)
        if group["weight_decay"] != 0:
            G = _op(G, P, alpha=group["weight_decay"])
        if momentum != 0:
            if first:
                B = G  # PyTorch's first buffer is a copy of the gradient
            else:
                B = _meta(buf, "mul_", written=True)
                _inplace(B, scalar=momentum)
                _inplace(B, G, alpha=1 - group["dampening"])
            G = _op(G, B, alpha=momentum) if group["nesterov"] else B
        _inplace(P, G, alpha=-group["lr"])
        if not p._data.size:
            return
        pf, wb = _param(p)
        bf = pf if buf is None else _flat_out(buf, p, wb, self.state[p], "momentum_buffer")
        NN.sgd_step(pf, _flat_in(g, p), bf, *args, first)
        _writeback(wb)


class Adam(Optimizer):
    _decoupled_default = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=None):
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay, "weight_decay value")
        if decoupled_weight_decay is None:
            decoupled_weight_decay = self._decoupled_default
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        # foreach and fused run the same per-parameter kernels: on the CPU PyTorch's foreach
        # path gives its single-tensor numbers bit for bit; its fused kernel rounds a few
        # values differently (an ulp apart)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _group_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False,
                           differentiable=False, fused=None)

    def _setstate_groups(self):
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", self._decoupled_default)
        _steps_to_tensors(self)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            amsgrad = group["amsgrad"]
            flags = (bool(group["decoupled_weight_decay"]), bool(amsgrad),
                     bool(group["maximize"]))
            if _hyper.plain(group["lr"], beta1, beta2, group["eps"], group["weight_decay"]):
                lr = float(group["lr"])
                args = (float(beta1), float(beta2), float(group["eps"]),
                        float(group["weight_decay"])) + flags
            elif any(p.grad is not None for p in group["params"]):  # PyTorch's TypeErrors
                lr, b1, b2, eps, wd = _hyper.adam(group)
                args = (b1, b2, eps, wd) + flags
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = _scalar_step()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_like(p)
                m = state["exp_avg"]
                v = state["exp_avg_sq"]
                vmax = state["max_exp_avg_sq"] if amsgrad else None
                step_t = state["step"]
                pd = p._data
                count = _count(step_t)
                fast = (count is not None and pd.size != 0 and pd.flags.c_contiguous
                        and _fits(g, pd) and _fits(m, pd) and _fits(v, pd)
                        and (not amsgrad or _fits(vmax, pd)))
                if not fast:
                    self._slow_step(p, g, state, group, lr, args)
                    continue
                pf = pd.reshape(-1)
                NN.adam_step(pf, g._data.reshape(-1), m._data.reshape(-1),
                                    v._data.reshape(-1),
                                    pf if vmax is None else vmax._data.reshape(-1), count, lr,
                                    *args)
                p._bump_version()
        return loss

    def _slow_step(self, p, g, state, group, lr, args):
        wd = group["weight_decay"]
        step_t = _step_tensor(state)
        P = _meta(p, written=True)
        G = _neg(_meta(g)) if group["maximize"] else _meta(g)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                _inplace(P, scalar=1 - lr * wd)
            else:
                G = _op(G, P, alpha=wd)
        m = state["exp_avg"]
        v = state["exp_avg_sq"]
        M = _meta(m, "lerp_", written=True)
        _lerp(M, G)
        V = _meta(v, "mul_", written=True)
        _inplace(V, scalar=group["betas"][1])
        _inplace(V, G, G)
        step = _step_value(step_t)
        D = V
        vmax = None
        if group["amsgrad"]:
            vmax = state["max_exp_avg_sq"]
            if not isinstance(vmax, Tensor):
                raise TypeError("maximum(): argument 'input' (position 1) must be Tensor, not "
                                f"{type(vmax).__name__}")
            D = _meta(vmax, written=True)
            _inplace(D, V)  # torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        _inplace(P, M, _sqrt(D), scalar=-lr)
        step_t._data[()] += 1
        if not p._data.size:
            return
        pf, wb = _param(p)
        mf = _flat_out(m, p, wb, state, "exp_avg")
        vf = _flat_out(v, p, wb, state, "exp_avg_sq")
        xf = pf if vmax is None else _flat_out(vmax, p, wb, state, "max_exp_avg_sq")
        NN.adam_step(pf, _flat_in(g, p), mf, vf, xf, _count_of(step), lr, *args)
        _writeback(wb)
        p._bump_version()


class AdamW(Adam):
    _decoupled_default = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        _check(momentum, "momentum value")
        _check(weight_decay, "weight_decay value")
        _check(alpha, "alpha value")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False,
                           differentiable=False, capturable=False)

    def _setstate_groups(self):
        _steps_to_tensors(self)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            centered = group["centered"]
            flags = (bool(centered), bool(group["maximize"]))
            if _hyper.plain(group["lr"], group["alpha"], group["eps"], group["weight_decay"],
                            momentum):
                args = (float(group["lr"]), float(group["alpha"]), float(group["eps"]),
                        float(group["weight_decay"]), float(momentum)) + flags
            elif any(p.grad is not None for p in group["params"]):  # PyTorch's TypeErrors
                args = _hyper.rmsprop(group) + flags
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = _scalar_step()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                sq = state["square_avg"]
                step_t = state["step"]
                buf = state["momentum_buffer"] if momentum > 0 else None
                gavg = state["grad_avg"] if centered else None
                pd = p._data
                count = _count(step_t)
                fast = (count is not None and pd.size != 0 and pd.flags.c_contiguous
                        and _fits(g, pd) and _fits(sq, pd) and (momentum <= 0 or _fits(buf, pd))
                        and (not centered or _fits(gavg, pd)))
                if not fast:
                    self._slow_step(p, g, state, group, args)
                    continue
                pf = pd.reshape(-1)
                NN.rmsprop_step(pf, g._data.reshape(-1), sq._data.reshape(-1),
                                       pf if buf is None else buf._data.reshape(-1),
                                       pf if gavg is None else gavg._data.reshape(-1), count,
                                       *args)
                p._bump_version()
        return loss

    def _slow_step(self, p, g, state, group, args):
        wd = group["weight_decay"]
        momentum = group["momentum"]
        step_t = _step_tensor(state)
        P = _meta(p, written=True)
        G = _neg(_meta(g)) if group["maximize"] else _meta(g)
        if wd != 0:
            G = _op(G, P, alpha=wd)
        sq = state["square_avg"]
        Q = _meta(sq, "mul_", written=True)
        _inplace(Q, scalar=group["alpha"])
        _inplace(Q, G, G)
        gavg = buf = None
        if group["centered"]:
            gavg = state["grad_avg"]
            A = _meta(gavg, "lerp_", written=True)
            _lerp(A, G)
            avg = _sqrt(_op(Q, A, A))
        else:
            avg = _sqrt(Q)
        if momentum > 0:
            buf = state["momentum_buffer"]
            B = _meta(buf, "mul_", written=True)
            _inplace(B, scalar=momentum)
            _inplace(B, G, avg)
            _inplace(P, B, alpha=-group["lr"])
        else:
            _inplace(P, G, avg)
        step_t._data[()] += 1
        if not p._data.size:
            return
        pf, wb = _param(p)
        qf = _flat_out(sq, p, wb, state, "square_avg")
        bf = pf if buf is None else _flat_out(buf, p, wb, state, "momentum_buffer")
        af = pf if gavg is None else _flat_out(gavg, p, wb, state, "grad_avg")
        NN.rmsprop_step(pf, _flat_in(g, p), qf, bf, af, _count_of(0.0), *args)
        _writeback(wb)
        p._bump_version()


class Adagrad(Optimizer):
    """Adagrad (PyTorch's single-tensor update); its state ("sum", "step") is made for every
    parameter when the optimizer is built, as in PyTorch."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(lr, "learning rate")
        _check(lr_decay, "lr_decay value")
        _check(weight_decay, "weight_decay value")
        _check(initial_accumulator_value, "initial_accumulator_value value")
        _check(eps, "epsilon value")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, initial_accumulator_value)

    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def _init_state(self, p, value):
        state = self.state[p]
        state["step"] = _scalar_step()
        state["sum"] = _wrap(_arrays.full(p._data, p._data.shape, value, p._data.dtype))

    def _setstate_groups(self):
        _steps_to_tensors(self)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr_decay = group["lr_decay"]
            if _hyper.plain(group["lr"], lr_decay, group["weight_decay"], group["eps"]):
                lr = float(group["lr"])
                args = (float(group["weight_decay"]), float(group["eps"]),
                        bool(group["maximize"]))
            elif any(p.grad is not None for p in group["params"]):  # PyTorch's TypeErrors
                lr, lr_decay, wd, eps = _hyper.adagrad(group)
                args = (wd, eps, bool(group["maximize"]))
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if not state:  # a parameter added later: the optimizer's default start value
                    self._init_state(p, self.defaults["initial_accumulator_value"])
                ssum = state["sum"]
                step_t = state["step"]
                pd = p._data
                count = _count(step_t)
                fast = (count is not None and pd.size != 0 and pd.flags.c_contiguous
                        and _fits(g, pd) and _fits(ssum, pd))
                if not fast:
                    self._slow_step(p, g, state, group, lr)
                    continue
                OPT.adagrad_step(pd.reshape(-1), g._data.reshape(-1),
                                        ssum._data.reshape(-1), count, lr, float(lr_decay), *args)
                p._bump_version()
        return loss

    def _slow_step(self, p, g, state, group, lr):
        step_t = _step_tensor(state)
        ssum = state["sum"]
        step = _step_value(step_t)
        clr = lr / (1 + step * group["lr_decay"])  # for the checks (the kernel computes it)
        P = _meta(p, written=True)
        G = _neg(_meta(g)) if group["maximize"] else _meta(g)
        if group["weight_decay"] != 0:
            G = _op(G, P, alpha=group["weight_decay"])
        S = _meta(ssum, "addcmul_", written=True)
        _inplace(S, G, G)
        _inplace(P, G, _sqrt(S), scalar=-clr)
        step_t._data[()] += 1
        if not p._data.size:
            return
        pf, wb = _param(p)
        sf = _flat_out(ssum, p, wb, state, "sum")
        OPT.adagrad_step(pf, _flat_in(g, p), sf, _count_of(step), lr,
                                     float(group["lr_decay"]), float(group["weight_decay"]),
                                     float(group["eps"]), bool(group["maximize"]))
        _writeback(wb)
        p._bump_version()


def _steps_to_tensors(opt):
    """After load_state_dict, as PyTorch's ``__setstate__``: a step saved as a number becomes
    a tensor (its ``float()`` error for anything else; KeyError for a state without one)."""
    for group in opt.param_groups:
        for p in group["params"]:
            p_state = opt.state.get(p, [])
            if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                p_state["step"] = _wrap(np.array(float(p_state["step"]), np.float32))
