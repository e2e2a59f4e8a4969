"""``numgrad.onnx``: export a model to ONNX, as ``torch.onnx.export`` does.

The forward runs once on the example ``args`` while the ops it calls are recorded
(``_record.py``); each recorded op becomes ONNX nodes (the table in ``_symbolic.py``), built
with the ``onnx`` package (the ``onnx`` extra: ``pip install numgrad[onnx]``), which only
``export`` needs: ``import numgrad.onnx`` works without it.
"""

import enum
import inspect
import warnings

from numgrad.onnx import errors
from numgrad.onnx.errors import (
    OnnxExporterError,
    OnnxExporterWarning,
    UnsupportedOperatorError,
)

__all__ = ["export", "TrainingMode", "OperatorExportTypes", "errors", "OnnxExporterError",
           "OnnxExporterWarning", "UnsupportedOperatorError", "is_in_onnx_export"]

DEFAULT_OPSET = 20  # torch.onnx's default
MIN_OPSET = 14
MAX_OPSET = 23
_EXPORTING = [False]


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def is_in_onnx_export():
    """Whether an export is tracing a forward now."""
    return _EXPORTING[0]


def _import_onnx():
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(
            "numgrad.onnx.export needs the 'onnx' package: install the onnx extra with "
            "`pip install numgrad[onnx]` (or `pip install onnx`)") from exc
    return onnx


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=False,
           training=TrainingMode.EVAL, input_names=None, output_names=None,
           operator_export_type=OperatorExportTypes.ONNX, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=False,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True,
           dynamo=False):
    """Export ``model`` (a ``numgrad.nn.Module`` or a function of tensors) to the ONNX file
    ``f`` (a path or a binary file object), tracing one run of ``model(*args, **kwargs)``
    (a trailing dict in ``args`` holds keyword arguments, as in PyTorch).

    Parameters and buffers become initializers named by their ``state_dict`` names (graph
    inputs with ``export_params=False``); ``dynamic_axes`` (``{name: [axis, ...]}`` or
    ``{name: {axis: "symbol"}}``) makes those dims of inputs and outputs symbolic. Values the
    forward computes in Python from tensor values are constants of the graph (a warning says
    where). An op with no ONNX form raises ``UnsupportedOperatorError`` naming it. Returns
    ``None``, or the ``onnx.ModelProto`` when ``f`` is ``None``."""
    onnx = _import_onnx()
    from numgrad.tensor import Tensor

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset}. Supported versions are "
                         f"{MIN_OPSET} to {MAX_OPSET}")
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ValueError("numgrad.onnx.export supports operator_export_type="
                         "OperatorExportTypes.ONNX only")
    if isinstance(args, Tensor):
        args = (args,)
    elif not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    kwargs = dict(kwargs or {})

    modes = _set_mode(model, training)
    try:  # (the converters of recorded layers read the layers' mode)
        inputs, default_names, out, calls, breaks = _trace(model, args, kwargs)
        for why in breaks:
            warnings.warn(f"the forward {why}: the exported graph holds what it read as "
                          "constants and may not be right for other inputs",
                          OnnxExporterWarning, stacklevel=2)
        proto = _build(onnx, model, default_names, inputs, out, calls, opset, export_params,
                       keep_initializers_as_inputs, input_names, output_names, dynamic_axes)
    finally:
        for m, mode in modes:
            m.training = mode
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is None:
        return proto
    onnx.save_model(proto, f)
    return None


def _set_mode(model, training):
    from numgrad.nn import Module
    if not isinstance(model, Module) or training == TrainingMode.PRESERVE:
        return []
    modes = [(m, m.training) for m in model.modules()]
    model.train(training == TrainingMode.TRAINING)
    return modes


def _trace(model, args, kwargs):
    """Run the forward once, recording its ops; floating inputs are traced as tensors that
    require grad, so that a tensor the recording missed is recognized by its ``grad_fn``."""
    from numgrad import _hook
    from numgrad._compile import tape as _tape
    from numgrad.autograd import grad_mode
    from numgrad.onnx._record import Recorder
    from numgrad.tensor import Tensor

    inputs, names = [], []

    def leaf(a, name):  # the graph inputs: the tensors of the arguments, nested ones too
        if isinstance(a, Tensor):
            # a copy (the forward may write into its input), not a leaf, requiring grad
            t = a.detach().requires_grad_(True).clone() if a.is_floating_point() else \
                a.detach().clone()
            inputs.append(t)
            names.append(name)
            return t
        if isinstance(a, (tuple, list)):
            return type(a)(leaf(v, None) for v in a)
        return a

    params = _positional_names(model)
    traced = [leaf(a, params[i] if i < len(params) else None) for i, a in enumerate(args)]
    kwargs = {k: leaf(v, k) for k, v in kwargs.items()}
    own_tape = _hook.TAPE is None
    tape = _tape.start() if own_tape else None
    _EXPORTING[0] = True
    try:
        with grad_mode.enable_grad(), Recorder(model, tape) as rec:
            out = model(*traced, **kwargs)
    finally:
        _EXPORTING[0] = False
        if own_tape:
            _tape.stop()
    names = [n if n is not None and names.count(n) == 1 else f"input_{i}"
             for i, n in enumerate(names)]
    return inputs, names, out, rec.calls, list(tape.breaks) if tape is not None else []


def _flat(x, out):
    from numgrad.tensor import Tensor
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _flat(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _flat(v, out)
    return out


def _slots(x, out):
    """The tensors (and Nones) of an op's result, nested tuples flattened: the order of the
    names a converter returns."""
    if isinstance(x, (tuple, list)):
        for v in x:
            _slots(v, out)
    else:
        out.append(x)
    return out


def _needed(calls, outputs):
    """The calls the outputs depend on (the others are left out of the graph)."""
    want = {id(t) for t in outputs}
    keep = []
    for c in reversed(calls):
        res = _flat(c.result, [])
        if c.result is None and c.args and _is_tensor(c.args[0]):
            res = [c.args[0]]  # ``x[i] = v``: a write into its first argument
        if any(id(t) in want for t in res) or _in_place(c):  # (a write may reach a view)
            keep.append(c)
            want.difference_update(id(t) for t in res)
            want.update(id(t) for t in _flat([c.args, c.kwargs], []))
    keep.reverse()
    return keep


def _is_tensor(x):
    from numgrad.tensor import Tensor
    return isinstance(x, Tensor)


def _in_place(c):
    """Whether call ``c`` writes into its first argument."""
    if not c.args or not _is_tensor(c.args[0]):
        return False
    if c.result is not None and c.result is not c.args[0]:
        return False
    if c.name.endswith("_") or c.name == "setitem":
        return True
    from numgrad.onnx._symbolic import bound
    try:
        return bool(bound(c).get("inplace", False))
    except TypeError:
        return False


def _check_unaliased(g, c):
    """An in-place op must not change values other tensors of the graph see (through
    views): the graph would give them the old values."""
    import numpy as np

    from numgrad._compile.tape import root
    t = c.args[0]
    if not isinstance(t._data, np.ndarray):
        return
    r = root(t._data)
    for other in g._keep:
        if other is not t and isinstance(other._data, np.ndarray) and root(other._data) is r:
            raise UnsupportedOperatorError(
                f"aten::{c.name}", g.opset, None,
                "an in-place op on a tensor that shares its memory with another (a view)")


def _positional_names(model):
    """The names of the forward's positional parameters (the inputs' default names)."""
    try:
        fn = model.forward if hasattr(model, "forward") else model
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _dims(name, shape, dynamic_axes):
    axes = dynamic_axes.get(name)
    dims = list(shape)
    if axes is None:
        return dims
    if isinstance(axes, dict):
        for ax, sym in axes.items():
            dims[int(ax)] = str(sym)
    else:
        for i, ax in enumerate(axes):
            dims[int(ax)] = f"{name}_dynamic_axes_{i + 1}"
    return dims


def _build(onnx, model, defaults, inputs, out, calls, opset, export_params, keep_inits,
           input_names, output_names, dynamic_axes):
    from numgrad.nn import Module
    from numgrad.onnx._graph import Graph, np_dtype
    from numgrad.onnx._symbolic import TABLE

    helper = onnx.helper
    params = {}
    if isinstance(model, Module):
        for name, t in model.state_dict(keep_vars=True).items():
            params.setdefault(id(t), (name, t))
    g = Graph(onnx, opset, params, export_params)
    outputs = _flat(out, [])
    if not outputs:
        raise OnnxExporterError("the model returned no tensors to export")
    in_names = list(input_names or []) + defaults[len(input_names or []):]
    out_names = list(output_names or []) + \
        [("output" if len(outputs) == 1 else f"output_{i}")
         for i in range(len(output_names or []), len(outputs))]
    dynamic_axes = dict(dynamic_axes or {})
    for key in dynamic_axes:
        if key not in in_names[:len(inputs)] and key not in out_names[:len(outputs)]:
            warnings.warn(f"Provided key {key} for dynamic axes is not a valid input/output "
                          "name", OnnxExporterWarning, stacklevel=3)
    for t, name in zip(inputs, in_names):
        g.bind(t, name)

    for c in _needed(calls, outputs):
        conv = TABLE.get(c.name)
        if conv is None and c.name.endswith("_"):
            conv = TABLE.get(c.name[:-1])
        if conv is None:
            raise UnsupportedOperatorError(f"aten::{c.name}", opset)
        if _in_place(c):
            _check_unaliased(g, c)
        names = conv(g, c)
        if isinstance(c.result, (tuple, list)):
            for t, n in zip(_slots(c.result, []), names):
                if t is not None and n is not None:
                    g.bind(t, n)
        else:
            g.bind(c.result, names)

    dyn_inputs = any(k in dynamic_axes for k in in_names[:len(inputs)])
    graph_outputs = []
    for i, (t, name) in enumerate(zip(outputs, out_names)):
        g.nodes.append(helper.make_node("Identity", [g.tensor(t)], [name],
                                        name=f"/output_{i}"))
        shape = _dims(name, t.shape, dynamic_axes)
        if dyn_inputs and name not in dynamic_axes:
            shape = [None] * len(shape)  # sizes that may follow the dynamic inputs'
        graph_outputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np_dtype(t)), shape))
    graph_inputs = [helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(np_dtype(t)), _dims(name, t.shape, dynamic_axes))
        for t, name in zip(inputs, in_names)]
    for name, arr in g.param_inputs:
        graph_inputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
    if keep_inits:
        graph_inputs += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                         for i in g.initializers]
    graph = helper.make_graph(g.nodes, type(model).__name__ if isinstance(model, Module)
                              else getattr(model, "__name__", "main_graph"),
                              graph_inputs, graph_outputs, initializer=g.initializers)
    import numgrad
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="numgrad",
                              producer_version=numgrad.__version__)
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    onnx.checker.check_model(proto)
    return proto
