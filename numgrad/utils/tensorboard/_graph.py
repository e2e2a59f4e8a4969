"""A TensorBoard GraphDef of one forward call, read from the autograd graph it records.

PyTorch traces the model with TorchScript; numgrad has none, so the forward runs once with
float inputs made to require grad, and the nodes autograd records become the graph: one node
per op (named after its forward op: ``AddmmBackward0`` -> ``Addmm``), one per parameter (its
module path, ``Net/fc1/weight``), the inputs and outputs as ``IO Node``s.
"""

import re

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def _shape_attr(shape):
    dims = [TensorShapeProto.Dim(size=int(n)) for n in shape]
    return {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=[
        TensorShapeProto(dim=dims)]))}


def _flatten(out):
    from numgrad.tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flatten(o)]
    return []


def _input_names(model, n):
    import inspect
    try:
        fn = getattr(model, "forward", model)
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input.{i}" for i in range(n)]


def graph_def(model, input_to_model=None, verbose=False):
    import numgrad
    from numgrad.autograd.graph import AccumulateGrad
    from numgrad.tensor import Tensor

    if not callable(model):
        raise TypeError(f"add_graph needs a module or a function, got {type(model).__name__}")
    if input_to_model is None:
        inputs = ()
    elif isinstance(input_to_model, Tensor):
        inputs = (input_to_model,)
    else:
        inputs = tuple(input_to_model)
    # float inputs require grad so that autograd records where they enter the graph
    traced = tuple(t.detach().requires_grad_(True)
                   if isinstance(t, Tensor) and t.is_floating_point() else t for t in inputs)
    with numgrad.enable_grad():
        outputs = _flatten(model(*traced))

    from numgrad.nn import Module
    scope = type(model).__name__
    if not isinstance(model, Module):
        scope = getattr(model, "__name__", scope)
    scope = re.sub(r"[^A-Za-z0-9_.\-]", "", scope) or "model"  # TensorBoard's name characters
    nodes = []
    leaf_names = {}  # id(tensor) -> node name
    for name, t in zip(_input_names(model, len(traced)), traced):
        if isinstance(t, Tensor):
            node_name = f"input/{name}"
            nodes.append(NodeDef(name=node_name, op="IO Node", attr=_shape_attr(t.shape)))
            leaf_names[id(t)] = node_name
    named = model.named_parameters() if hasattr(model, "named_parameters") else ()
    for name, p in named:
        leaf_names.setdefault(id(p), f"{scope}/{name.replace('.', '/')}")

    # autograd nodes in forward order: a depth-first post-order from the outputs
    order, done = [], set()
    for root in (t.grad_fn for t in outputs if t.grad_fn is not None):
        stack = [(root, False)]
        while stack:
            fn, expanded = stack.pop()
            if expanded:
                order.append(fn)
                continue
            if id(fn) in done:
                continue
            done.add(id(fn))
            stack.append((fn, True))
            for nxt, _ in reversed(getattr(fn, "next_functions", ())):
                if nxt is not None and id(nxt) not in done:
                    stack.append((nxt, False))

    names = {}  # id(autograd node) -> graph node name
    ops = []
    counts = {}
    for fn in order:
        if isinstance(fn, AccumulateGrad):
            t = fn.variable
            name = leaf_names.get(id(t))
            if name is None:
                name = leaf_names[id(t)] = f"{scope}/tensor.{len(leaf_names)}"
            if not name.startswith("input/"):
                nodes.append(NodeDef(name=name, op="Parameter", attr=_shape_attr(t.shape)))
        else:
            op = re.sub(r"Backward\d*$", "", type(fn).__name__) or type(fn).__name__
            k = counts.get(op, 0)
            counts[op] = k + 1
            name = f"{scope}/{op}_{k}"
            ops.append((fn, name, op))
        names[id(fn)] = name
    for fn, name, op in ops:
        ins = [names[id(n)] for n, _ in fn.next_functions if n is not None]
        nodes.append(NodeDef(name=name, op=op, input=ins))
    for i, t in enumerate(outputs):
        if t.grad_fn is not None:
            ins = [names[id(t.grad_fn)]]
        else:  # an input or a parameter returned as it is
            known = {node.name for node in nodes}
            ins = [leaf_names[id(t)]] if leaf_names.get(id(t)) in known else []
        nodes.append(NodeDef(name=f"output/output.{i}", op="IO Node", input=ins,
                             attr=_shape_attr(t.shape)))
    if verbose:
        for node in nodes:
            print(f"{node.name} = {node.op}({', '.join(node.input)})")
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
