"""``numgrad.autograd``: ``backward``, ``grad``, ``Function``, grad-mode switches."""

import numpy as np

from numgrad import _arrays
from numgrad.autograd import engine as _engine
from numgrad.autograd import function, graph, profiler  # noqa: F401
from numgrad.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from numgrad.autograd.engine import execute
from numgrad.autograd.function import Function, FunctionCtx, once_differentiable
from numgrad.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from numgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from numgrad.tensor import Tensor, _grad_accumulator, _wrap


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs):
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if not out._requires_grad:
                grads.append(None)
                continue
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype.kind != "f":
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype!r}")
            grads.append(_wrap(_arrays.ones(out._data, out._data.shape, out._data.dtype)))
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if g._data.shape != out._data.shape:
            from numgrad._shape import Size
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g._data.shape)} and "
                f"output[{i}] has a shape of {Size(out._data.shape)}.")
        if g._data.dtype != out._data.dtype:
            g = g.to(out.dtype)
        grads.append(g)
    return grads


def _root(t, i):
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        return (_grad_accumulator(t), 0)
    raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' ``.grad``."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grad_tensors = (None,) * len(tensors) if grad_tensors is None else _as_tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(
            f"grad_tensors should have the same length as tensors: {len(grad_tensors)} vs "
            f"{len(tensors)}")
    if retain_graph is None:
        retain_graph = create_graph
    roots = [_root(t, i) for i, t in enumerate(tensors)]
    grads = _make_grads(tensors, grad_tensors)
    accumulate = True
    capture = targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        accumulate = set()
        capture = {}
        targets = set()
        for k, t in enumerate(inputs):
            if t._grad_fn is None:
                node = _grad_accumulator(t)
                accumulate.add(node)
                targets.add(node)
            else:
                capture.setdefault(t._grad_fn, {}).setdefault(t._output_nr, []).append(k)
                targets.add(t._grad_fn)
        if not capture:
            capture = None
    pairs = [(r, g) for r, g in zip(roots, grads) if g is not None]
    captured = execute([p[0] for p in pairs], [p[1] for p in pairs], retain_graph,
                       create_graph, capture=capture, targets=targets, accumulate=accumulate)
    if capture is not None:
        # non-leaf inputs of backward(inputs=...) accumulate into their .grad
        for k, t in enumerate(inputs):
            g = captured[k] if k < len(captured) else None
            if t._grad_fn is not None and g is not None:
                t._grad = g.detach().clone() if t._grad is None else t._grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """d(outputs)/d(inputs) as a tuple; leaves' ``.grad`` is left alone."""
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    if not inputs_t:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but "
            "got: allow_unused=False.")
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(grad_outputs)} for "
            f"{len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs_t:
        if not isinstance(t, Tensor):
            raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                               f"{type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots = [_root(t, i) for i, t in enumerate(outputs)]
    grads = _make_grads(outputs, grad_outputs)
    capture = {}
    targets = set()
    for k, t in enumerate(inputs_t):
        node = t._grad_fn if t._grad_fn is not None else _grad_accumulator(t)
        capture.setdefault(node, {}).setdefault(t._output_nr if t._grad_fn else 0, []).append(k)
        targets.add(node)
    pairs = [(r, g) for r, g in zip(roots, grads) if g is not None]
    captured = execute([p[0] for p in pairs], [p[1] for p in pairs], retain_graph,
                       create_graph, capture=capture, targets=targets, accumulate=False)
    result = []
    for k, t in enumerate(inputs_t):
        g = captured[k]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {k} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = _wrap(_arrays.zeros(t._data, t._data.shape, t._data.dtype))
        elif not create_graph and g._requires_grad:
            g = g.detach()
        result.append(g)
    return tuple(result)


class Variable(Tensor):
    """Deprecated alias kept for old tutorials: ``Variable(t)`` returns ``t``."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if requires_grad and data.is_leaf:
            data.requires_grad_(True)
        return data


Variable._execution_engine = _engine.EXECUTION_ENGINE  # queue_callback, as in PyTorch

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "Variable", "gradcheck",
           "gradgradcheck", "GradcheckError", "inference_mode", "is_inference_mode_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


def __getattr__(name):
    # ``torch.autograd.functional`` works right after ``import torch``; so does ours
    if name in ("functional", "forward_ad"):
        import importlib
        return importlib.import_module(f"numgrad.autograd.{name}")
    raise AttributeError(f"module 'numgrad.autograd' has no attribute '{name}'")
