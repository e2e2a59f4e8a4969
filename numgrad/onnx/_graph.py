"""The ONNX graph under construction: names of values, nodes, initializers."""

import numpy as np

from numgrad.onnx.errors import OnnxExporterError


def array_of(t):
    """A tensor's values as a NumPy array (a copy on the host)."""
    return np.array(t.detach().cpu().numpy(), copy=True)


class Graph:
    def __init__(self, onnx, opset, params, export_params):
        self.onnx = onnx
        self.opset = opset
        self.params = params  # id(tensor) -> (state_dict name, tensor)
        self.export_params = export_params
        self.nodes, self.initializers, self.param_inputs = [], [], []
        self.values = {}  # id(tensor) -> the ONNX value holding it now
        self._keep = []  # the tensors ``values`` names stay alive (ids are reused)
        self._count = {}

    def fresh(self, base, prefix="/"):
        n = self._count.get(base, 0)
        self._count[base] = n + 1
        return f"{prefix}{base}_{n}" if n else f"{prefix}{base}"

    def node(self, op, inputs, n_out=1, **attrs):
        """Append an ``op`` node reading ``inputs`` (names; "" for an absent optional input);
        returns its output's name (a list of them for ``n_out`` > 1)."""
        name = self.fresh(op)
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=None, base="Constant"):
        """A constant (an initializer) holding ``value``."""
        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(f"onnx::{base}", "")
        self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def ints(self, values):
        return self.const(np.asarray(list(values), dtype=np.int64))

    def bind(self, t, name):
        self.values[id(t)] = name
        self._keep.append(t)
        return name

    def tensor(self, t):
        """The value holding tensor ``t``: an op's result, a model input, a parameter or
        buffer (an initializer named by its ``state_dict`` name, or a graph input without
        ``export_params``), or else a constant (a tensor the forward made from Python values
        only: one computed from the inputs by an op the exporter cannot see is an error)."""
        name = self.values.get(id(t))
        if name is not None:
            return name
        p = self.params.get(id(t))
        if p is not None:
            name, arr = p[0], array_of(p[1])
            if self.export_params:
                self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
            else:
                self.param_inputs.append((name, arr))
            return self.bind(t, name)
        if t.grad_fn is not None:
            raise OnnxExporterError(
                f"a tensor of shape {list(t.shape)} ({type(t.grad_fn).__name__}) was computed "
                "from the model's inputs or parameters by an operation the ONNX exporter did "
                "not record; use numgrad ops and numgrad.nn.functional in forward")
        return self.bind(t, self.const(array_of(t)))

    def value(self, x, dtype):
        """A tensor's value, or a Python number as a 0-d constant of ``dtype``."""
        from numgrad.tensor import Tensor
        if isinstance(x, Tensor):
            return self.cast(self.tensor(x), x, dtype)
        return self.const(x, dtype=dtype)

    def cast(self, name, t, dtype):
        """``name`` (holding tensor ``t``) cast to NumPy ``dtype`` where it differs."""
        have = np_dtype(t)
        if dtype is None or have == np.dtype(dtype):
            return name
        to = self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        return self.node("Cast", [name], to=to)


def np_dtype(t):
    """A tensor's dtype as NumPy's."""
    return np.dtype(str(t.dtype).replace("torch.", "").replace("numgrad.", ""))
