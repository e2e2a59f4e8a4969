"""``numgrad.autograd.functional``: jacobian, hessian, vjp, jvp, hvp and vhp with PyTorch's
signatures and return structures (a tensor for a tensor argument, tuples for tuples).

Everything is built from reverse mode: jvp and hvp use the double-vjp trick (the vjp is
linear in its cotangent, so differentiating it against a dummy cotangent gives J v).
"""

import numpy as np

from numgrad import _arrays
from numgrad.autograd import grad as _grad
from numgrad.autograd.grad_mode import enable_grad
from numgrad.tensor import Tensor, _wrap


def _as_tuple(x, arg_name, fn_name):
    if isinstance(x, Tensor):
        return False, (x,)
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                        f"of Tensors but the value at index 0 has type {type(x)}.")
    for i, v in enumerate(x):
        if not isinstance(v, Tensor):
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the value at index {i} has type {type(v)}.")
    return True, tuple(x)


def _prepare(inputs, create_graph):
    """Fresh leaves (or differentiable aliases under create_graph) that require grad."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(True))
    return tuple(out)


def _finish(tensors, create_graph):
    return tuple(t if t is None or create_graph else t.detach() for t in tensors)


def _fill_none(grads, like):
    return tuple(_wrap(_arrays.zeros(x._data, x._data.shape, x._data.dtype)) if g is None else g
                 for g, x in zip(grads, like))


def _unpack(is_tuple, values):
    return values if is_tuple else values[0]


def _check_v(v, outputs, fn_name, arg="v"):
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element.")
        o = outputs[0]._data
        return (_wrap(_arrays.ones(o, o.shape, o.dtype)),)
    _, vs = _as_tuple(v, arg, fn_name)
    if len(vs) != len(outputs):
        raise RuntimeError(
            f"{arg} is a tuple of invalid length: should be {len(outputs)} but got {len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if a.shape != b.shape:
            raise RuntimeError(
                f"Entry {i} in {arg} has invalid size: should be {b.shape} but got {a.shape}.")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "vjp")
        vs = _check_v(v, outputs, "vjp")
        diff = [o for o in outputs if o.requires_grad]
        grads = _grad(diff, inputs, [g for g, o in zip(vs, outputs) if o.requires_grad],
                      create_graph=create_graph, allow_unused=True) if diff else (None,) * len(
                          inputs)
    return (_unpack(out_tuple, _finish(outputs, create_graph)),
            _unpack(is_tuple, _finish(_fill_none(grads, inputs), create_graph)))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by the double-vjp trick."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph)
        if v is None:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single "
                                   "element.")
            x = inputs[0]._data
            vs = (_wrap(_arrays.ones(x, x.shape, x.dtype)),)
        else:
            vs = _check_v(v, inputs, "jvp")
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jvp")
        dummies = tuple(_wrap(_arrays.zeros(o._data, o._data.shape, o._data.dtype))
                        .requires_grad_(True) for o in outputs)
        diff = [(o, u) for o, u in zip(outputs, dummies) if o.requires_grad]
        if not diff:
            jv = _fill_none((None,) * len(outputs), outputs)
        else:
            g = _grad([o for o, _ in diff], inputs, [u for _, u in diff], create_graph=True,
                      allow_unused=True)
            pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None]
            jv = _grad([p[0] for p in pairs], dummies, [p[1] for p in pairs],
                       create_graph=create_graph, allow_unused=True) if pairs else (None,) * len(
                           outputs)
            jv = _fill_none(jv, outputs)
    return (_unpack(out_tuple, _finish(outputs, create_graph)),
            _unpack(out_tuple, _finish(jv, create_graph)))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """d func / d inputs: entry [i][j] has shape outputs[i].shape + inputs[j].shape."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jacobian")
        result = []
        for out in outputs:
            n = out._data.size
            rows = [[] for _ in inputs]
            for k in range(n):
                if out.requires_grad:
                    v = np.zeros(out._data.shape, out._data.dtype)
                    v.reshape(-1)[k] = 1
                    v = _arrays.to_device(v, out.device)
                    gs = _grad(out, inputs, _wrap(v), retain_graph=True,
                               create_graph=create_graph, allow_unused=True)
                else:
                    gs = (None,) * len(inputs)
                for j, (g, x) in enumerate(zip(gs, inputs)):
                    rows[j].append(g if g is not None else
                                   _wrap(_arrays.zeros(x._data, x._data.shape, x._data.dtype)))
            per_input = []
            for j, x in enumerate(inputs):
                from numgrad.ops.shape import reshape, stack
                if n:
                    jac = reshape(stack(rows[j], 0), out._data.shape + x._data.shape)
                else:
                    jac = _wrap(_arrays.zeros(x._data, out._data.shape + x._data.shape,
                                              x._data.dtype))
                per_input.append(jac if create_graph else jac.detach())
            result.append(_unpack(is_tuple, tuple(per_input)))
    return _unpack(out_tuple, tuple(result))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """Second derivatives of a scalar function: [i][j] has shape in_i.shape + in_j.shape."""
    is_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")

    def grad_of(*xs):
        out = func(*xs)
        if isinstance(out, tuple) or not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        gs = _grad(out, xs, create_graph=True, allow_unused=True)
        return _fill_none(gs, xs) if is_tuple else _fill_none(gs, xs)[0]

    return jacobian(grad_of, inputs_t if is_tuple else inputs_t[0], create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph)
        out = func(*inputs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a "
                               "single element.")
        vs = _check_v(v, inputs, "vhp") if v is not None else _check_v(None, inputs, "vhp")
        g = _grad(out, inputs, create_graph=True, allow_unused=True)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None and gi.requires_grad]
        res = _grad([p[0] for p in pairs], inputs, [p[1] for p in pairs],
                    create_graph=create_graph, allow_unused=True) if pairs else (None,) * len(
                        inputs)
    return (_finish((out,), create_graph)[0],
            _unpack(is_tuple, _finish(_fill_none(res, inputs), create_graph)))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function (the double-vjp trick on the gradient)."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph)
        out = func(*inputs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hvp should return a single Tensor with a "
                               "single element.")
        vs = _check_v(v, inputs, "hvp") if v is not None else _check_v(None, inputs, "hvp")
        g = _fill_none(_grad(out, inputs, create_graph=True, allow_unused=True), inputs)
        dummies = tuple(_wrap(_arrays.zeros(x._data, x._data.shape, x._data.dtype))
                        .requires_grad_(True) for x in inputs)
        pairs = [(gi, u) for gi, u in zip(g, dummies) if gi.requires_grad]
        if pairs:
            gv = _grad([p[0] for p in pairs], inputs, [p[1] for p in pairs], create_graph=True,
                       allow_unused=True)
            q = [(a, b) for a, b in zip(gv, vs) if a is not None]
            res = _grad([a for a, _ in q], dummies, [b for _, b in q],
                        create_graph=create_graph, allow_unused=True) if q else (None,) * len(
                            inputs)
        else:
            res = (None,) * len(inputs)
    return (_finish((out,), create_graph)[0],
            _unpack(is_tuple, _finish(_fill_none(res, inputs), create_graph)))
