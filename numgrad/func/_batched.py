"""A batched fast path for the per-sample-gradient recipe of ``torch.func``:

    vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)

with ``loss_fn(p, x, y) = loss(functional_call(model, p, (x.unsqueeze(0),)), target(y))``,
``model`` an ``nn.Sequential`` of ``Linear``, ``Conv2d``, ``Flatten``, ``ReLU``, ``Tanh``,
``Sigmoid``, ``GELU`` (or one such layer) and ``loss`` ``F.cross_entropy``/``F.mse_loss``.

Nothing is assumed about ``loss_fn``: it is run once, on one sample (a probe), while
``functional_call`` and the two losses record their calls and every host read of tensor
data (``bool``, ``item``, ``numpy``, ...) is noted. The fast path is taken only when the
probe shows exactly that recipe: one ``functional_call`` of a supported model (exact
classes, no hooks) on the sample's input unsqueezed (the same memory read the same way;
the probe's copies of the sample and the parameters unchanged), every parameter taken as
is from the differentiated dict, one supported loss on the model's output and the
sample's target unsqueezed, the loss returned as is, and no host read (so no
data-dependent Python branch). Anything else returns None and ``vmap`` loops over the
batch (so does an error in the batched pass: the loop then raises it as each sample's call
does).

The batched pass: the model runs once on the whole batch; with ``L = sum_i loss_i`` the
gradient of ``L`` with respect to each layer's output ``z`` holds, in row ``i``, the
gradient of sample ``i``'s loss alone (samples do not mix). Per-sample parameter gradients
are then ``dW_i = g_i^T a_i`` (Linear: outer products summed over any middle dims; Conv2d:
the same with ``a_i`` the unfolded (im2col) input) and ``db_i = g_i`` summed over positions.
"""

import inspect
import threading

from numgrad.func._pytree import flatten, unflatten

_LOCAL = threading.local()
_LOCK = threading.RLock()  # one probe at a time patches the host-read methods
_READS = ("__bool__", "item", "tolist", "numpy", "__float__", "__int__", "__index__",
          "__array__", "__contains__", "__repr__", "__str__", "__format__", "__dlpack__")
_BOOLS = ("equal", "allclose", "is_nonzero")  # numgrad functions answering a Python value


def recording():
    return getattr(_LOCAL, "record", None)


def note_functional_call(module, given, args, kwargs, out):
    rec = recording()
    if rec is not None:
        rec["calls"].append((module, given, args, kwargs, out))


def _supported():
    from numgrad import nn
    return {nn.Linear: "linear", nn.Conv2d: "conv2d", nn.Flatten: "flatten",
            nn.ReLU: "act", nn.Tanh: "act", nn.Sigmoid: "act", nn.GELU: "act"}


class _Probe:
    """Records functional_call calls, loss calls and host reads on this thread."""

    def __init__(self):
        self.rec = {"calls": [], "losses": [], "reads": 0}

    def __enter__(self):
        from numgrad import Tensor
        from numgrad.nn import functional as F
        me = threading.get_ident()
        rec = self.rec
        self.saved = []

        def reader(orig):
            def read(*a, **k):
                if threading.get_ident() == me:
                    rec["reads"] += 1
                return orig(*a, **k)
            return read

        def loss(name, orig):
            sig = inspect.signature(orig)

            def call(*a, **k):
                out = orig(*a, **k)
                if threading.get_ident() == me:
                    rec["losses"].append((name, sig.bind(*a, **k), out))
                return out
            return call
        for name in _READS:
            if name in Tensor.__dict__:
                self.saved.append((Tensor, name, Tensor.__dict__[name]))
                setattr(Tensor, name, reader(Tensor.__dict__[name]))
        import numgrad
        for name in _BOOLS:
            for owner in (numgrad, Tensor):
                orig = owner.__dict__.get(name) if owner is Tensor else getattr(
                    owner, name, None)
                if orig is not None:
                    self.saved.append((owner, name, orig))
                    setattr(owner, name, reader(orig))
        for name in ("cross_entropy", "mse_loss"):
            orig = getattr(F, name)
            self.saved.append((F, name, orig))
            setattr(F, name, loss(name, orig))
        self.outer = recording()
        _LOCAL.record = rec
        return rec

    def __exit__(self, *exc):
        _LOCAL.record = self.outer
        if self.outer is not None:  # a probe inside a probe: the outer one loops
            self.outer["reads"] += 1
        for owner, name, orig in reversed(self.saved):
            setattr(owner, name, orig)
        return False


def _ptr(t):
    import numpy as np
    d = t._data
    return d.__array_interface__["data"][0] if isinstance(d, np.ndarray) else None


def _is_unsqueezed(t, t0):
    """Whether tensor ``t`` holds exactly ``t0.unsqueeze(0)``: the same memory read the same
    way (a view of the sample; its data is unchanged, the caller checks the version)."""
    from numgrad import Tensor
    if not isinstance(t, Tensor) or t.dtype != t0.dtype or _ptr(t) is None:
        return False
    if tuple(t.shape) != (1, *t0.shape) or _ptr(t) != _ptr(t0):
        return False
    return all(n == 1 or s == s0 for n, s, s0 in zip(t0.shape, t.stride()[1:], t0.stride()))


def _layers(module):
    from numgrad import nn
    from numgrad.nn.modules.module import Module
    kinds = _supported()
    if type(module) is nn.Sequential:
        named = [(f"{k}.", m) for k, m in module._modules.items()]
    else:
        named = [("", module)]
    layers = [m for _, m in named]
    for m in [module, *layers]:
        if (m is None or m._forward_hooks or m._forward_pre_hooks or "forward" in m.__dict__
                or type(m).__call__ is not Module.__call__):
            return None
    if not layers or any(type(m) not in kinds for m in layers):
        return None
    for m in layers:
        if type(m) is nn.Conv2d and (m.groups != 1 or m.padding_mode != "zeros"
                                     or isinstance(m.padding, str)):
            return None
        if type(m) is nn.Flatten and not (m.start_dim >= 1 and (
                m.end_dim == -1 or m.end_dim >= m.start_dim)):
            return None
    return named


def _dims_ok(layers, ndim):
    """Every Conv2d sees a batched 4-d input and every Flatten keeps dim 0 (so the batched
    model treats the batch as the per-sample calls treat their batch of one)."""
    from numgrad import nn
    for _, m in layers:
        if type(m) is nn.Conv2d:
            if ndim != 4:
                return False
        elif type(m) is nn.Flatten:
            end = m.end_dim % ndim if -ndim <= m.end_dim < ndim else None
            if end is None or not 1 <= m.start_dim <= end:
                return False
            ndim -= end - m.start_dim
    return True


def _check(rec, out, lifted, x0, y0):
    """(layers, loss name, loss arguments) when the probe shows the supported recipe."""
    if rec["reads"] or len(rec["calls"]) != 1 or len(rec["losses"]) != 1:
        return None
    module, given, args, kwargs, fc_out = rec["calls"][0]
    name, bound, loss_out = rec["losses"][0]
    if out is not loss_out or kwargs or not isinstance(args, tuple) or len(args) != 1:
        return None
    layers = _layers(module)
    if layers is None:
        return None
    from numgrad.func._functional_call import _all_named_tensors
    named = _all_named_tensors(module)
    if set(given) != set(lifted) or {n for n, _ in named} != set(lifted):
        return None
    if any(given[n] is not lifted[n] for n in lifted):
        return None
    a = args[0]
    if not _is_unsqueezed(a, x0) or not _dims_ok(layers, a.dim()):
        return None
    b = bound.arguments
    if b.get("input") is not fc_out:
        return None
    target = b.get("target")
    if name == "cross_entropy":
        if (b.get("weight") is not None or b.get("size_average") is not None
                or b.get("reduce") is not None or b.get("reduction", "mean") not in
                ("mean", "sum") or fc_out.dim() != 2 or y0.is_floating_point()
                or y0.dim() != 0 or not _is_unsqueezed(target, y0)):
            return None
    else:
        if (b.get("weight") is not None or b.get("size_average") is not None
                or b.get("reduce") is not None or b.get("reduction", "mean") not in
                ("mean", "sum") or not y0.is_floating_point()
                or not _is_unsqueezed(target, y0)
                or tuple(target.shape) != tuple(fc_out.shape)):
            return None
    return layers, name, b


def _forward(layers, params, x):
    """The model on the whole batch, keeping each parametrized layer's (input, output)."""
    from numgrad import nn
    from numgrad.nn import functional as F
    kept = []
    for p, m in layers:
        if type(m) is nn.Linear:
            z = F.linear(x, params[p + "weight"], params.get(p + "bias"))
            kept.append((m, p, x, z))
            x = z
        elif type(m) is nn.Conv2d:
            z = F.conv2d(x, params[p + "weight"], params.get(p + "bias"), m.stride,
                         m.padding, m.dilation, 1)
            kept.append((m, p, x, z))
            x = z
        else:
            x = m(x)
    return x, kept


def _per_sample(m, a, g):
    """{name: per-sample gradient} of one layer from its input ``a`` and the output
    gradient ``g`` (row i: sample i's)."""
    from numgrad import nn
    from numgrad.nn import functional as F
    B = a.shape[0]
    if type(m) is nn.Linear:
        # dW_i = sum_l g_il (x) a_il, db_i = sum_l g_il
        g3 = g.reshape(B, -1, g.shape[-1])
        a3 = a.reshape(B, -1, a.shape[-1])
        out = {"weight": g3.transpose(1, 2).bmm(a3)}
        if m.bias is not None:
            out["bias"] = g3.sum(1)
        return out
    # conv: dW_i = g_i (Cout x L) @ unfold(a_i)^T (L x Cin*kh*kw), db_i = sum over L of g_i
    cols = F.unfold(a, m.kernel_size, dilation=m.dilation, padding=m.padding,
                    stride=m.stride)
    g3 = g.reshape(B, g.shape[1], -1)
    out = {"weight": g3.bmm(cols.transpose(1, 2)).reshape(B, *m.weight.shape)}
    if m.bias is not None:
        out["bias"] = g3.sum(2)
    return out


def per_sample_grads(grad_info, in_dims, randomness, args, kwargs, flat, dims, size):
    """vmap(grad(loss_fn))(*args) in one batched pass, or None when the call is not the
    supported recipe (then the caller loops)."""
    import numgrad
    from numgrad import Tensor
    from numgrad.autograd.grad_mode import enable_grad
    from numgrad.func._vmap import no_randomness
    loss_fn, argnums, has_aux = grad_info
    # (params, x, y) or the tutorial's (params, buffers, x, y) with no buffers
    if (argnums != 0 or has_aux or kwargs or randomness != "error" or size < 1
            or len(args) not in (3, 4) or not isinstance(args[0], dict)
            or (len(args) == 4 and (type(args[1]) is not dict or args[1]))):
        return None
    params, x, y = args[0], args[-2], args[-1]
    middle = args[1:-2]
    p_leaves, p_spec = flatten(params)
    n = len(p_leaves)
    if (len(flat) != n + 2 or any(d is not None for d in dims[:n]) or dims[n] != 0
            or dims[n + 1] != 0 or not isinstance(x, Tensor) or not isinstance(y, Tensor)):
        return None
    tensors = [*p_leaves, x, y]
    if any(not isinstance(t, Tensor) or t.requires_grad or t.device.type != "cpu"
           for t in tensors):
        return None
    if x.dtype not in (numgrad.float32, numgrad.float64) or any(
            t.dtype != x.dtype for t in p_leaves) or (y.is_floating_point()
                                                      and y.dtype != x.dtype):
        return None
    if not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in params.items()):
        return None
    # the probe: the last sample, on copies (an in-place change it makes must not reach
    # the caller's tensors, which the loop then passes again); none of them may change
    i = size - 1
    lifted = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    x0, y0 = x.select(0, i).clone(), y.select(0, i).clone()
    probed = [x0, y0, *lifted.values()]
    versions = [t._version for t in probed]
    try:
        with _LOCK, _Probe() as rec, enable_grad(), no_randomness(randomness):
            out = loss_fn(lifted, *middle, x0, y0)
    except Exception:
        return None
    if [t._version for t in probed] != versions:
        return None
    found = _check(rec, out, lifted, x0, y0)
    if found is None:
        return None
    layers, name, b = found
    if name == "cross_entropy" and bool((y == b.get("ignore_index", -100)).any()):
        return None  # an ignored sample's mean is 0/0: the loop gives PyTorch's nan
    try:
        result = _batched(layers, name, b, params, x, y)
    except Exception:
        return None  # bad input: the loop raises PyTorch's error
    return unflatten(flatten({k: result[k] for k in params})[0], p_spec)


def _batched(layers, name, b, params, x, y):
    import numgrad
    from numgrad.autograd.grad_mode import enable_grad
    from numgrad.nn import functional as F
    with enable_grad():
        ps = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        outb, kept = _forward(layers, ps, x.detach())
        if name == "cross_entropy":
            # a batch of one: 'mean' and 'sum' are both the sample's loss
            total = F.cross_entropy(outb, y, reduction="sum",
                                    ignore_index=b.get("ignore_index", -100),
                                    label_smoothing=b.get("label_smoothing", 0.0))
        else:
            total = F.mse_loss(outb, y.reshape(outb.shape), reduction="sum")
            if b.get("reduction", "mean") == "mean":
                # sample i's mean is its sum over its n = numel / B elements
                total = total / outb[0].numel()
        gs = numgrad.autograd.grad(total, [z for *_, z in kept])
    result = {}
    for (m, p, a, _), g in zip(kept, gs):
        for k, v in _per_sample(m, a.detach(), g.detach()).items():
            result[p + k] = v.contiguous()
    return result
