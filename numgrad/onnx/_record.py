"""Recording the ops one forward run calls, for the exporter.

While a ``Recorder`` is active, the public ops a model reaches (``numgrad.nn.functional``,
the declared ops of ``numgrad.ops.registry`` under ``numgrad.*`` and as Tensor methods, the
Tensor operators, the recurrent layers' ``forward``) are replaced by wrappers that note each
outermost call with its arguments and result; the calls an op makes inside itself are not
noted. Leaving the recorder puts the original functions back. The run itself happens inside
``numgrad.compile``'s kernel tape (``numgrad._compile.tape``), whose notes of Python reading
tensor values (``item()``, ``bool()``, ...) tell where a trace may not hold for other inputs.
"""

import functools
import threading

# Tensor operators -> (recorded name, whether the operands are swapped)
DUNDERS = {
    "__add__": ("add", False), "__radd__": ("add", True), "__iadd__": ("add_", False),
    "__sub__": ("sub", False), "__rsub__": ("sub", True), "__isub__": ("sub_", False),
    "__mul__": ("mul", False), "__rmul__": ("mul", True), "__imul__": ("mul_", False),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True),
    "__itruediv__": ("div_", False), "__matmul__": ("matmul", False),
    "__rmatmul__": ("matmul", True), "__pow__": ("pow", False), "__rpow__": ("pow", True),
    "__neg__": ("neg", False), "__getitem__": ("getitem", False),
    "__setitem__": ("setitem", False), "__eq__": ("eq", False), "__ne__": ("ne", False),
    "__lt__": ("lt", False), "__le__": ("le", False), "__gt__": ("gt", False),
    "__ge__": ("ge", False), "__invert__": ("bitwise_not", False),
    "__and__": ("bitwise_and", False), "__or__": ("bitwise_or", False),
    "__xor__": ("bitwise_xor", False), "__rand__": ("bitwise_and", True),
    "__ror__": ("bitwise_or", True), "__rxor__": ("bitwise_xor", True),
    "__abs__": ("abs", False), "__pos__": ("positive", False),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__mod__": ("remainder", False), "__rmod__": ("remainder", True),
}
# Tensor methods that are not declared ops
METHODS = ("float", "double", "half", "long", "int", "bool", "contiguous", "clone", "type_as",
           "to", "view", "view_as", "reshape", "masked_fill", "masked_fill_", "softmax",
           "log_softmax", "relu", "relu_", "sigmoid", "tanh", "exp", "sqrt", "mean", "sum",
           "flatten", "unflatten", "expand", "expand_as", "repeat", "chunk", "split",
           "transpose", "permute", "t", "unsqueeze", "squeeze", "matmul", "add", "sub", "mul",
           "div", "pow", "neg", "abs", "log", "rsqrt", "gelu", "narrow", "select", "byte",
           "char", "short", "bfloat16", "type", "cpu", "cuda", "detach", "detach_", "copy_",
           "fill_", "zero_", "exponential_", "normal_", "uniform_", "random_", "resize_",
           "new_tensor")
# numgrad.* functions that are not declared ops: results that may carry the inputs' values
# or sizes
FUNCTIONS = ("detach", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like",
             "randn_like", "randint_like", "tensor", "as_tensor", "asarray")
# functional helpers that are not ops
_NOT_OPS = {"Tensor", "Node", "Size", "LazyKernels", "attach", "edge", "meta_for", "dtype_of",
            "broadcast_shapes"}


class Call:
    __slots__ = ("name", "fn", "args", "kwargs", "result", "swapped")

    def __init__(self, name, fn, args, kwargs, result, swapped):
        self.name, self.fn, self.args, self.kwargs = name, fn, args, kwargs
        self.result, self.swapped = result, swapped


class Recorder:
    """A context manager: ``calls`` lists the ops the forward called, in order."""

    def __init__(self, model=None, tape=None):
        self.model = model
        self.tape = tape  # host reads inside a recorded op are its own business: dropped
        self.calls = []
        self.depth = 0
        self.thread = threading.get_ident()
        self._saved = []  # (owner, attribute, original, whether the owner's own)
        self._done = set()

    def _wrap(self, name, fn, swapped=False):
        rec = self

        @functools.wraps(fn)
        def recorded(*args, **kwargs):
            if rec.depth or threading.get_ident() != rec.thread:
                return fn(*args, **kwargs)
            tape = rec.tape
            noted = len(tape.breaks) if tape is not None else 0
            rec.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                rec.depth -= 1
                if tape is not None:
                    del tape.breaks[noted:]
            args = tuple(list(a) if isinstance(a, list) else a for a in args)  # (a copy)
            rec.calls.append(Call(name, fn, args, kwargs, out, swapped))
            return out

        return recorded

    def _patch(self, owner, attr, name, swapped=False):
        key = (id(owner), attr)
        if key in self._done:
            return
        self._done.add(key)
        fn = getattr(owner, attr, None)
        if fn is None or isinstance(fn, type) or not callable(fn):
            return
        own = attr in vars(owner)
        self._saved.append((owner, attr, vars(owner).get(attr), own))
        setattr(owner, attr, self._wrap(name, fn, swapped))

    def __enter__(self):
        import numgrad
        from numgrad.nn import functional as F
        from numgrad.nn.modules import rnn
        from numgrad.ops.registry import REGISTRY
        from numgrad.tensor import Tensor
        try:
            for attr in dir(F):
                if not attr.startswith("_") and attr not in _NOT_OPS and \
                        not attr.endswith("Backward0"):
                    self._patch(F, attr, attr)
            names = {}
            for od in REGISTRY.values():
                for n in (od.name, *od.aliases):
                    names[n] = od.name
            for attr in dir(F):
                if attr in vars(numgrad) and not attr.startswith("_"):
                    names.setdefault(attr, attr)
            for attr, name in names.items():
                self._patch(numgrad, attr, name)
            for attr in list(vars(numgrad)):  # the in-place forms: numgrad.relu_(x)
                if attr.endswith("_") and not attr.startswith("_") and attr[:-1] in names:
                    self._patch(numgrad, attr, names[attr[:-1]] + "_")
            for attr in FUNCTIONS:
                self._patch(numgrad, attr, attr)
            for attr, name in list(names.items()) + [(m, m) for m in METHODS]:
                if attr in vars(Tensor) or hasattr(Tensor, attr):
                    self._patch(Tensor, attr, name)
                    if attr + "_" in vars(Tensor) and attr + "_" not in names:
                        self._patch(Tensor, attr + "_", name + "_")
            for attr, (name, swapped) in DUNDERS.items():
                self._patch(Tensor, attr, name, swapped)
            for attr, name in (("T", "T"), ("mT", "mT"), ("data", "detach")):
                prop = vars(Tensor)[attr]
                self._saved.append((Tensor, attr, prop, True))
                setattr(Tensor, attr, property(self._wrap(name, prop.fget), prop.fset,
                                               prop.fdel, prop.__doc__))
            self._patch_held(F)
            for cls, name in ((rnn.LSTM, "lstm"), (rnn.GRU, "gru"), (rnn.RNN, "rnn"),
                              (rnn.LSTMCell, "lstm_cell"), (rnn.GRUCell, "gru_cell"),
                              (rnn.RNNCell, "rnn_cell")):
                self._patch(cls, "forward", name)
        except BaseException:
            self._restore()
            raise
        return self

    def _patch_held(self, F):
        """Functionals held elsewhere: a layer class's ``staticmethod(F.max_pool2d)``, a
        layer's ``self.activation = F.relu``."""
        import numgrad.nn as nn
        held = {}
        for owner, attr, original, _own in self._saved:
            if owner is F and original is not None:
                held[id(original)] = (attr, getattr(F, attr))
        for cls in vars(nn).values():
            if isinstance(cls, type) and issubclass(cls, nn.Module):
                for attr, v in list(vars(cls).items()):
                    if isinstance(v, staticmethod) and id(v.__func__) in held:
                        self._saved.append((cls, attr, v, True))
                        setattr(cls, attr, staticmethod(held[id(v.__func__)][1]))
        if isinstance(self.model, nn.Module):
            for m in self.model.modules():
                for attr, v in list(vars(m).items()):
                    if callable(v) and id(v) in held:
                        self._saved.append((m, attr, v, True))
                        setattr(m, attr, held[id(v)][1])

    def _restore(self):
        while self._saved:
            owner, attr, original, own = self._saved.pop()
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)

    def __exit__(self, *exc):
        self._restore()
        return False
