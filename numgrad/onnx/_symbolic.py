"""The table from recorded numgrad ops to ONNX nodes.

Each entry ``TABLE[name](g, call)`` appends the nodes computing ``call``'s result to the
graph ``g`` (``_graph.Graph``) and returns the name of the value holding it (a list for ops
that return several tensors). Shapes a node needs are taken from the traced tensors; where a
size may be one of ``dynamic_axes`` (a reshape's target, an expand's sizes) the node copies
it from its input instead (a reshape's 0, an expand's 1).
"""

import inspect
import math

import numpy as np

from numgrad.onnx._graph import np_dtype
from numgrad.onnx.errors import UnsupportedOperatorError

TABLE = {}
INT64_MAX = np.iinfo(np.int64).max


def converts(*names):
    def deco(f):
        for n in names:
            TABLE[n] = f
        return f
    return deco


def unsupported(g, c, detail=None, since=None):
    return UnsupportedOperatorError(f"aten::{c.name}", g.opset, since, detail)


_SIGNATURES = {}


def bound(c):
    """``c``'s arguments by parameter name, defaults applied."""
    sig = _SIGNATURES.get(c.fn)
    if sig is None:
        sig = _SIGNATURES[c.fn] = inspect.signature(c.fn)
    ba = sig.bind(*c.args, **c.kwargs)
    ba.apply_defaults()
    return ba.arguments


def first(c):
    return c.args[0] if c.args else next(iter(c.kwargs.values()))


def sizes(v):
    """``*shape`` arguments: one sequence or several ints."""
    if len(v) == 1 and not isinstance(v[0], int):
        v = v[0]
    return [int(s) for s in v]


def dims(v, n):
    return [int(d) % n if n else 0 for d in (v if isinstance(v, (tuple, list)) else [v])]


def tup(v, k):
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)] * k


def out_dtype(c):
    r = c.result
    return np_dtype(r[0] if isinstance(r, (tuple, list)) else r)


# ---------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------

UNARY = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "exp": "Exp", "log": "Log",
         "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "erf": "Erf", "reciprocal": "Reciprocal",
         "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil", "sign": "Sign",
         "logical_not": "Not", "bitwise_not": "Not"}


def _unary(g, c):
    dt = out_dtype(c)
    op = UNARY[c.name.rstrip("_")]
    if c.name.startswith("bitwise_not") and dt != np.bool_:
        if g.opset < 18:
            raise unsupported(g, c, "an integer operand", since=18)
        op = "BitwiseNot"
    elif c.name.startswith("logical_not"):
        dt = np.bool_
    return g.node(op, [g.value(first(c), dt)])


for _n in UNARY:
    TABLE[_n] = _unary


@converts("rsqrt")
def _rsqrt(g, c):
    return g.node("Reciprocal", [g.node("Sqrt", [g.value(first(c), out_dtype(c))])])


@converts("silu")
def _silu(g, c):
    x = g.value(first(c), out_dtype(c))
    return g.node("Mul", [x, g.node("Sigmoid", [x])])


@converts("leaky_relu")
def _leaky_relu(g, c):
    a = bound(c)
    return g.node("LeakyRelu", [g.tensor(a["input"])], alpha=float(a["negative_slope"]))


@converts("softplus")
def _softplus(g, c):
    a = bound(c)
    if float(a.get("beta", 1)) != 1:
        raise unsupported(g, c, "beta other than 1")
    return g.node("Softplus", [g.tensor(a["input"])])


@converts("gelu")
def _gelu(g, c):
    a = bound(c)
    x, approximate = g.tensor(a["input"]), a["approximate"]
    if g.opset >= 20:
        return g.node("Gelu", [x], approximate=approximate)
    dt = out_dtype(c)
    if approximate == "tanh":  # x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [cube, g.const(0.044715, dt)])])
        t = g.node("Tanh", [g.node("Mul", [inner, g.const(math.sqrt(2 / math.pi), dt)])])
    else:  # x/2 (1 + erf(x / sqrt 2))
        t = g.node("Erf", [g.node("Div", [x, g.const(math.sqrt(2.0), dt)])])
    half = g.node("Mul", [x, g.const(0.5, dt)])
    return g.node("Mul", [half, g.node("Add", [t, g.const(1.0, dt)])])


BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
          "maximum": "Max", "minimum": "Min", "eq": "Equal", "lt": "Less", "gt": "Greater",
          "le": "LessOrEqual", "ge": "GreaterOrEqual", "logical_and": "And",
          "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "And", "bitwise_or": "Or",
          "bitwise_xor": "Xor", "ne": "Equal", "floor_divide": None, "remainder": None}
COMPARE = {"eq", "ne", "lt", "gt", "le", "ge"}
LOGICAL = {"logical_and", "logical_or", "logical_xor"}


def _second(c):
    """A binary op's other operand, by position or by name."""
    if len(c.args) > 1:
        return c.args[1]
    for k in ("other", "exponent", "mat2"):
        if k in c.kwargs:
            return c.kwargs[k]
    raise TypeError(f"{c.name}: no second operand")


def _binary(g, c):
    from numgrad.tensor import Tensor
    name = c.name.rstrip("_")
    x, y = c.args[0], _second(c)
    if c.swapped:
        x, y = y, x
    if c.kwargs.get("rounding_mode") is not None:
        raise unsupported(g, c, "rounding_mode")
    if name in LOGICAL:
        dt = np.bool_
    elif name in COMPARE:
        ts = [v for v in (x, y) if isinstance(v, Tensor)]
        dt = np.result_type(*[np_dtype(t) for t in ts])
    else:
        dt = out_dtype(c)
    if name == "pow" and not isinstance(y, Tensor):
        yv = g.const(y, dtype=dt)
    else:
        yv = g.value(y, dt)
    alpha = c.kwargs.get("alpha", c.args[2] if len(c.args) > 2 and not c.swapped else 1)
    if alpha != 1:
        yv = g.node("Mul", [yv, g.const(alpha, dt)])
    xv = g.value(x, dt)
    if name == "floor_divide":
        return _floor_divide(g, xv, yv, dt)
    if name == "remainder":  # x - floor(x / y) y: the sign of the divisor, as Python's %
        if np.issubdtype(dt, np.integer):
            return g.node("Mod", [xv, yv], fmod=0)
        return g.node("Sub", [xv, g.node("Mul", [_floor_divide(g, xv, yv, dt), yv])])
    op = BINARY[name]
    if name.startswith("bitwise_") and dt != np.bool_:
        if g.opset < 18:
            raise unsupported(g, c, "integer operands", since=18)
        op = "Bitwise" + op
    out = g.node(op, [xv, yv])
    return g.node("Not", [out]) if name == "ne" else out


def _floor_divide(g, xv, yv, dt):
    """floor(x / y) in ``dt`` (integers: computed in float64, exact below 2**53)."""
    if np.issubdtype(dt, np.integer):
        to = g.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(np.float64))
        q = g.node("Div", [g.node("Cast", [xv], to=to), g.node("Cast", [yv], to=to)])
        back = g.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        return g.node("Cast", [g.node("Floor", [q])], to=back)
    return g.node("Floor", [g.node("Div", [xv, yv])])


@converts("positive")
def _positive(g, c):
    return g.tensor(first(c))


for _n in BINARY:
    TABLE[_n] = _binary


@converts("rsub")
def _rsub(g, c):
    a = bound(c)
    dt = out_dtype(c)
    y = g.value(a["other"], dt)
    if a.get("alpha", 1) != 1:
        y = g.node("Mul", [y, g.const(a["alpha"], dt)])
    return g.node("Sub", [y, g.value(a["input"], dt)])


@converts("where")
def _where(g, c):
    a = bound(c)
    if "self" in a:  # x.where(condition, y)
        cond, x, y = a["condition"], a["self"], a["y"]
    else:
        cond, x, y = a["condition"], a["input"], a["other"]
    if x is None or y is None:
        raise unsupported(g, c, "where(condition) with one argument")
    dt = out_dtype(c)
    return g.node("Where", [g.value(cond, np.bool_), g.value(x, dt), g.value(y, dt)])


@converts("masked_fill")
def _masked_fill(g, c):
    x, mask, value = (list(c.args) + [c.kwargs.get("mask"), c.kwargs.get("value")])[:3]
    dt = out_dtype(c)
    return g.node("Where", [g.value(mask, np.bool_), g.value(value, dt), g.tensor(x)])


@converts("matmul", "mm", "bmm")
def _matmul(g, c):
    x, y = c.args[0], _second(c)
    if c.swapped:
        x, y = y, x
    return g.node("MatMul", [g.tensor(x), g.tensor(y)])


@converts("linear")
def _linear(g, c):
    a = bound(c)
    x, w, b = a["input"], a["weight"], a["bias"]
    if x.dim() == 2 and w.dim() == 2:
        return g.node("Gemm", [g.tensor(x), g.tensor(w)] + ([g.tensor(b)] if b is not None
                                                            else []), transB=1)
    y = g.node("MatMul", [g.tensor(x), g.node("Transpose", [g.tensor(w)])])
    return y if b is None else g.node("Add", [y, g.tensor(b)])


@converts("addmm")
def _addmm(g, c):
    a = bound(c)
    return g.node("Gemm", [g.tensor(a["mat1"]), g.tensor(a["mat2"]), g.tensor(a["input"])],
                  alpha=float(a.get("alpha", 1)), beta=float(a.get("beta", 1)))


# ---------------------------------------------------------------------------------------
# layers
# ---------------------------------------------------------------------------------------


@converts("conv1d", "conv2d")
def _conv(g, c):
    a = bound(c)
    x, w, b = a["input"], a["weight"], a["bias"]
    k = w.dim() - 2
    ks = list(w.shape[2:])
    dil = tup(a["dilation"], k)
    pad = a["padding"]
    if pad == "valid":
        pads = [0] * (2 * k)
    elif pad == "same":
        total = [d * (s - 1) for d, s in zip(dil, ks)]
        pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        p = tup(pad, k)
        pads = p + p
    ins = [g.tensor(x), g.tensor(w)] + ([g.tensor(b)] if b is not None else [])
    return g.node("Conv", ins, kernel_shape=ks, strides=tup(a["stride"], k), pads=pads,
                  dilations=dil, group=int(a["groups"]))


@converts("conv_transpose1d", "conv_transpose2d")
def _conv_transpose(g, c):
    a = bound(c)
    x, w, b = a["input"], a["weight"], a["bias"]
    k = w.dim() - 2
    p = tup(a["padding"], k)
    ins = [g.tensor(x), g.tensor(w)] + ([g.tensor(b)] if b is not None else [])
    return g.node("ConvTranspose", ins, kernel_shape=list(w.shape[2:]),
                  strides=tup(a["stride"], k), pads=p + p, dilations=tup(a["dilation"], k),
                  output_padding=tup(a["output_padding"], k), group=int(a["groups"]))


@converts("interpolate", "upsample", "upsample_nearest", "upsample_bilinear")
def _interpolate(g, c):
    a = bound(c)
    x = a["input"]
    mode = {"upsample_nearest": "nearest", "upsample_bilinear": "bilinear"}.get(
        c.name, a.get("mode", "nearest"))
    align = True if c.name == "upsample_bilinear" else bool(a.get("align_corners"))
    if a.get("antialias") or mode == "area":
        raise unsupported(g, c, "antialias" if a.get("antialias") else "mode 'area'")
    k = x.dim() - 2
    attrs = {}
    if mode in ("nearest", "nearest-exact"):
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric"
                     if mode == "nearest" else "half_pixel",
                     nearest_mode="floor" if mode == "nearest" else "round_prefer_ceil")
    elif mode in ("linear", "bilinear", "trilinear", "bicubic"):
        attrs = dict(mode="cubic" if mode == "bicubic" else "linear",
                     coordinate_transformation_mode="align_corners" if align
                     else "half_pixel")
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    else:
        raise unsupported(g, c, f"mode '{mode}'")
    sf = a.get("scale_factor")
    if sf is not None and not a.get("recompute_scale_factor"):
        scales = g.const([1.0, 1.0] + [float(v) for v in tup_f(sf, k)], np.float32)
        return g.node("Resize", [g.tensor(x), "", scales], **attrs)
    lead = g.node("Slice", [g.node("Shape", [g.tensor(x)]), g.ints([0]), g.ints([2])])
    sizes = g.node("Concat", [lead, g.ints(c.result.shape[2:])], axis=0)
    return g.node("Resize", [g.tensor(x), "", "", sizes], **attrs)


def tup_f(v, k):
    return [float(x) for x in v] if isinstance(v, (tuple, list)) else [float(v)] * k


def _pool_args(a, k):
    ks = tup(a["kernel_size"], k)
    stride = a["stride"]
    st = ks if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else tup(stride, k)
    p = tup(a["padding"], k)
    return ks, st, p + p


@converts("max_pool1d", "max_pool2d")
def _max_pool(g, c):
    a = bound(c)
    if a.get("return_indices"):
        raise unsupported(g, c, "return_indices=True")
    k = 1 if c.name == "max_pool1d" else 2
    ks, st, pads = _pool_args(a, k)
    return g.node("MaxPool", [g.tensor(a["input"])], kernel_shape=ks, strides=st, pads=pads,
                  dilations=tup(a["dilation"], k), ceil_mode=int(bool(a["ceil_mode"])))


@converts("avg_pool1d", "avg_pool2d")
def _avg_pool(g, c):
    a = bound(c)
    if a.get("divisor_override") is not None:
        raise unsupported(g, c, "divisor_override")
    k = 1 if c.name == "avg_pool1d" else 2
    ks, st, pads = _pool_args(a, k)
    return g.node("AveragePool", [g.tensor(a["input"])], kernel_shape=ks, strides=st,
                  pads=pads, ceil_mode=int(bool(a["ceil_mode"])),
                  count_include_pad=int(bool(a["count_include_pad"])))


@converts("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
          "adaptive_max_pool2d")
def _adaptive_pool(g, c):
    a = bound(c)
    if a.get("return_indices"):
        raise unsupported(g, c, "return_indices=True")
    x = a["input"]
    k = 1 if c.name.endswith("1d") else 2
    have = list(x.shape[-k:])
    size = a["output_size"]
    want = [h if o is None else int(o) for o, h in zip(size, have)] \
        if isinstance(size, (tuple, list)) else [int(size)] * k
    is_max = "max" in c.name
    if x.dim() == k + 1:
        raise unsupported(g, c, "unbatched input")
    if all(o == 1 for o in want):
        return g.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [g.tensor(x)])
    if any(o == 0 or h % o for o, h in zip(want, have)):
        raise unsupported(g, c, f"output size {want} that does not divide the input size {have}")
    ks = [h // o for o, h in zip(want, have)]
    return g.node("MaxPool" if is_max else "AveragePool", [g.tensor(x)], kernel_shape=ks,
                  strides=ks)


@converts("batch_norm")
def _batch_norm(g, c):
    a = bound(c)
    if a["training"] or a["running_mean"] is None:
        raise unsupported(g, c, "batch statistics (training mode); call model.eval() or use "
                          "training=TrainingMode.EVAL")
    x = a["input"]
    dt, n = np_dtype(x), x.shape[1]
    w = g.tensor(a["weight"]) if a["weight"] is not None else g.const(np.ones(n, dt))
    b = g.tensor(a["bias"]) if a["bias"] is not None else g.const(np.zeros(n, dt))
    return g.node("BatchNormalization", [g.tensor(x), w, b, g.tensor(a["running_mean"]),
                                         g.tensor(a["running_var"])], epsilon=float(a["eps"]))


@converts("layer_norm")
def _layer_norm(g, c):
    a = bound(c)
    x = a["input"]
    shape = tup(a["normalized_shape"], 1)
    dt = np_dtype(x)
    if g.opset < 17:  # no LayerNormalization yet: the same from its parts
        v = _normalized(g, g.tensor(x), list(range(x.dim() - len(shape), x.dim())),
                        float(a["eps"]), dt)
        if a["weight"] is not None:
            v = g.node("Mul", [v, g.tensor(a["weight"])])
        return v if a["bias"] is None else g.node("Add", [v, g.tensor(a["bias"])])
    w = g.tensor(a["weight"]) if a["weight"] is not None else g.const(np.ones(shape, dt))
    ins = [g.tensor(x), w] + ([g.tensor(a["bias"])] if a["bias"] is not None else [])
    return g.node("LayerNormalization", ins, axis=-len(shape), epsilon=float(a["eps"]))


@converts("pad")
def _pad(g, c):
    a = bound(c)
    x, widths, mode = a["input"], [int(w) for w in a["pad"]], a["mode"]
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                 "circular": "wrap"}.get(mode)
    if onnx_mode is None:
        raise unsupported(g, c, f"mode '{mode}'")
    if mode == "circular" and g.opset < 19:
        raise unsupported(g, c, "mode 'circular'", since=19)
    n = x.dim()
    begin, end = [0] * n, [0] * n
    for i in range(len(widths) // 2):  # PyTorch's pairs start at the last dim
        begin[n - 1 - i], end[n - 1 - i] = widths[2 * i], widths[2 * i + 1]
    ins = [g.tensor(x), g.ints(begin + end)]
    if mode == "constant":
        ins.append(g.const(0 if a["value"] is None else a["value"], np_dtype(x)))
    return g.node("Pad", ins, mode=onnx_mode)


def _normalized(g, v, axes, eps, dt):
    """(v - mean) / sqrt(var + eps) over ``axes`` (biased variance)."""
    def mean(u):
        return g.node("ReduceMean", [u, g.ints(axes)], keepdims=1) if g.opset >= 18 else \
            g.node("ReduceMean", [u], axes=axes, keepdims=1)
    centred = g.node("Sub", [v, mean(v)])
    var = mean(g.node("Mul", [centred, centred]))
    return g.node("Div", [centred, g.node("Sqrt", [g.node("Add", [var,
                                                                  g.const(eps, dt)])])])


@converts("group_norm")
def _group_norm(g, c):
    a = bound(c)
    x = a["input"]
    dt, n = np_dtype(x), x.dim()
    groups, ch = int(a["num_groups"]), x.shape[1]
    v = g.node("Reshape", [g.tensor(x), g.ints([0, groups, -1])])
    v = _normalized(g, v, [2], float(a["eps"]), dt)
    v = g.node("Reshape", [v, g.node("Shape", [g.tensor(x)])])
    per_channel = [ch] + [1] * (n - 2)  # (C, 1, 1...) broadcasts over (N, C, ...)
    if a["weight"] is not None:
        v = g.node("Mul", [v, g.node("Reshape", [g.tensor(a["weight"]), g.ints(per_channel)])])
    if a["bias"] is not None:
        v = g.node("Add", [v, g.node("Reshape", [g.tensor(a["bias"]), g.ints(per_channel)])])
    return v


@converts("instance_norm")
def _instance_norm(g, c):
    a = bound(c)
    x = a["input"]
    dt, n, ch = np_dtype(x), x.dim(), x.shape[1]
    if not a["use_input_stats"]:  # running statistics, as batch_norm in eval mode
        w = g.tensor(a["weight"]) if a["weight"] is not None else g.const(np.ones(ch, dt))
        b = g.tensor(a["bias"]) if a["bias"] is not None else g.const(np.zeros(ch, dt))
        return g.node("BatchNormalization", [g.tensor(x), w, b, g.tensor(a["running_mean"]),
                                             g.tensor(a["running_var"])],
                      epsilon=float(a["eps"]))
    v = _normalized(g, g.tensor(x), list(range(2, n)), float(a["eps"]), dt)
    per_channel = [ch] + [1] * (n - 2)
    if a["weight"] is not None:
        v = g.node("Mul", [v, g.node("Reshape", [g.tensor(a["weight"]), g.ints(per_channel)])])
    if a["bias"] is not None:
        v = g.node("Add", [v, g.node("Reshape", [g.tensor(a["bias"]), g.ints(per_channel)])])
    return v


@converts("rms_norm")
def _rms_norm(g, c):
    a = bound(c)
    x = a["input"]
    dt = np_dtype(x)
    k = len(tup(a["normalized_shape"], 1))
    axes = list(range(x.dim() - k, x.dim()))
    eps = a["eps"] if a["eps"] is not None else float(np.finfo(dt).eps)
    v = g.tensor(x)
    sq = g.node("Mul", [v, v])
    ms = g.node("ReduceMean", [sq, g.ints(axes)], keepdims=1) if g.opset >= 18 else \
        g.node("ReduceMean", [sq], axes=axes, keepdims=1)
    v = g.node("Div", [v, g.node("Sqrt", [g.node("Add", [ms, g.const(eps, dt)])])])
    return v if a["weight"] is None else g.node("Mul", [v, g.tensor(a["weight"])])


@converts("pixel_shuffle")
def _pixel_shuffle(g, c):
    a = bound(c)
    if a["input"].dim() != 4:
        raise unsupported(g, c, "input that is not 4-D")
    return g.node("DepthToSpace", [g.tensor(a["input"])], blocksize=int(a["upscale_factor"]),
                  mode="CRD")


@converts("softmax", "log_softmax")
def _softmax(g, c):
    a = bound(c)
    x = a["input"]
    dim = a["dim"]
    if dim is None:  # PyTorch's implicit choice of dim
        dim = 0 if x.dim() in (0, 1, 3) else 1
    xv = g.value(x, out_dtype(c))
    return g.node("Softmax" if c.name == "softmax" else "LogSoftmax", [xv], axis=int(dim))


@converts("dropout", "dropout1d", "dropout2d", "alpha_dropout")
def _dropout(g, c):
    a = bound(c)
    if a["training"] and a["p"] > 0:
        raise unsupported(g, c, "dropout in training mode; call model.eval() or use "
                          "training=TrainingMode.EVAL")
    return g.tensor(a["input"])


@converts("embedding")
def _embedding(g, c):
    a = bound(c)
    if a["max_norm"] is not None:
        raise unsupported(g, c, "max_norm (it renormalizes the weight in place)")
    return g.node("Gather", [g.tensor(a["weight"]), g.tensor(a["input"])], axis=0)


# ---------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------


def reshape(g, x, target):
    """``x`` reshaped to ``target`` (PyTorch's sizes, -1 allowed), copying the sizes of a
    leading run of dims that keep their size (ONNX's 0) and inferring one other (-1), so the
    graph holds for other sizes of those dims (a dynamic batch)."""
    have, t = list(x.shape), list(target)
    if 0 in t:  # an empty result: the sizes as they are (0 is a size, not "copy")
        t = [int(v) for v in x.reshape(*t).shape] if -1 in t else t
        return g.node("Reshape", [g.tensor(x), g.ints(t)], allowzero=1)
    i = 0
    while i < min(len(have), len(t)) and t[i] == have[i] and t[i] > 0:
        t[i] = 0
        i += 1
    if -1 not in t and i < len(t) and 0 not in target:
        t[i] = -1
    return g.node("Reshape", [g.tensor(x), g.ints(t)])


@converts("reshape", "view")
def _reshape(g, c):
    x, shape = c.args[0], sizes(c.args[1:] or (c.kwargs.get("shape"),))
    return reshape(g, x, shape)


@converts("view_as", "reshape_as", "unflatten")
def _reshape_result(g, c):
    return reshape(g, first(c), list(c.result.shape))


@converts("flatten")
def _flatten(g, c):
    a = bound(c)
    x = a["input"]
    n = x.dim()
    start, end = (int(a["start_dim"]) % n, int(a["end_dim"]) % n) if n else (0, 0)
    if start == 1 and end == n - 1:
        return g.node("Flatten", [g.tensor(x)], axis=1)
    if start == end:
        return g.tensor(x)
    return reshape(g, x, list(c.result.shape))


@converts("permute")
def _permute(g, c):
    x = c.args[0]
    perm = dims(sizes(c.args[1:] or (c.kwargs["dims"],)), x.dim())
    return g.node("Transpose", [g.tensor(x)], perm=perm)


@converts("transpose", "t", "swapaxes")
def _transpose(g, c):
    x = c.args[0]
    n = x.dim()
    if n < 2:
        return g.tensor(x)
    d0, d1 = (0, 1) if c.name == "t" else dims(
        [*c.args[1:3], *[c.kwargs[k] for k in ("dim0", "dim1") if k in c.kwargs]], n)
    perm = list(range(n))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return g.node("Transpose", [g.tensor(x)], perm=perm)


@converts("T", "mT")
def _reversed_dims(g, c):
    x = first(c)
    n = x.dim()
    perm = list(range(n))[::-1] if c.name == "T" else list(range(n - 2)) + [n - 1, n - 2]
    if n < 2:
        return g.tensor(x)
    return g.node("Transpose", [g.tensor(x)], perm=perm)


@converts("unsqueeze")
def _unsqueeze(g, c):
    a = bound(c)
    return g.node("Unsqueeze", [g.tensor(a["input"]), g.ints([int(a["dim"])])])


@converts("squeeze")
def _squeeze(g, c):
    a = bound(c)
    x = a["input"]
    n = x.dim()
    d = a["dim"]
    axes = [i for i in (range(n) if d is None else dims(d, n)) if x.shape[i] == 1]
    if not axes:
        return g.tensor(x)
    return g.node("Squeeze", [g.tensor(x), g.ints(axes)])


@converts("contiguous", "clone", "detach", "cpu", "cuda")
def _identity(g, c):
    return g.tensor(first(c))


@converts("to", "float", "double", "half", "long", "int", "bool", "type_as", "type", "byte",
          "char", "short", "bfloat16")
def _cast(g, c):
    x = first(c)
    try:
        dt = out_dtype(c)
    except TypeError:
        raise unsupported(g, c, f"dtype {c.result.dtype}") from None
    return g.cast(g.tensor(x), x, dt)


@converts("tensor", "as_tensor", "asarray", "new_tensor")
def _tensor(g, c):
    from numgrad.onnx._graph import array_of
    from numgrad.tensor import Tensor
    data = c.args[1] if c.name == "new_tensor" else first(c)
    if isinstance(data, Tensor):  # a copy (or the tensor itself) in the result's dtype
        return g.cast(g.tensor(data), data, out_dtype(c))
    return g.const(array_of(c.result))  # made from Python values


@converts("zeros_like", "ones_like", "full_like", "empty_like")
def _like(g, c):
    a = bound(c)
    value = {"zeros_like": 0, "ones_like": 1, "empty_like": 0}.get(c.name)
    if value is None:
        value = a["fill_value"]
    dt = out_dtype(c)
    fill = g.onnx.numpy_helper.from_array(np.asarray([value], dtype=dt), "value")
    return g.node("ConstantOfShape", [g.node("Shape", [g.tensor(first(c))])], value=fill)


@converts("expand", "expand_as", "broadcast_to")
def _expand(g, c):
    x = c.args[0]
    want = list(c.result.shape)
    have = [1] * (len(want) - x.dim()) + list(x.shape)
    shape = [1 if w == h else w for w, h in zip(want, have)]  # 1 keeps the input's size
    return g.node("Expand", [g.tensor(x), g.ints(shape)])


@converts("repeat")
def _repeat(g, c):
    x = c.args[0]
    reps = sizes(c.args[1:] or (c.kwargs["repeats"],))
    v = g.tensor(x)
    if len(reps) > x.dim():
        v = g.node("Unsqueeze", [v, g.ints(range(len(reps) - x.dim()))])
    return g.node("Tile", [v, g.ints(reps)])


@converts("cat", "concat", "concatenate")
def _cat(g, c):
    a = bound(c)
    dt = out_dtype(c)
    ts = [t for t in a["tensors"] if not (t.dim() == 1 and t.shape[0] == 0)]
    return g.node("Concat", [g.value(t, dt) for t in ts], axis=int(a["dim"]))


@converts("stack")
def _stack(g, c):
    a = bound(c)
    dt = out_dtype(c)
    d = int(a["dim"])
    ins = [g.node("Unsqueeze", [g.value(t, dt), g.ints([d])]) for t in a["tensors"]]
    return g.node("Concat", ins, axis=d)


@converts("split", "chunk", "unbind")
def _split(g, c):
    x = c.args[0]
    d = c.kwargs.get("dim", c.args[2] if len(c.args) > 2 else
                     (c.args[1] if c.name == "unbind" and len(c.args) > 1 else 0))
    d = int(d) % x.dim()
    parts = list(c.result)
    if len(parts) == 1:
        return [g.tensor(x)]
    lens = [1] * len(parts) if c.name == "unbind" else [p.shape[d] for p in parts]
    outs = g.node("Split", [g.tensor(x), g.ints(lens)], n_out=len(parts), axis=d)
    if c.name == "unbind":
        outs = [g.node("Squeeze", [o, g.ints([d])]) for o in outs]
    return outs


@converts("narrow")
def _narrow(g, c):
    a = bound(c)
    x, d, start, length = a["input"], a["dim"], a["start"], a["length"]
    d = int(d) % x.dim()
    start = int(start) % x.shape[d] if int(start) < 0 else int(start)
    return g.node("Slice", [g.tensor(x), g.ints([start]), g.ints([int(start) + int(length)]),
                            g.ints([d])])


@converts("select")
def _select(g, c):
    x, d, i = c.args[:3]
    return g.node("Gather", [g.tensor(x), g.const(int(i), np.int64)], axis=int(d) % x.dim())


@converts("getitem")
def _getitem(g, c):
    from numgrad.tensor import Tensor
    x, idx = c.args
    idx = list(idx) if isinstance(idx, tuple) else [idx]
    advanced = [i for i in idx if isinstance(i, (Tensor, list, np.ndarray))]
    if len(advanced) > 1 or any(_bool_index(i) for i in advanced):
        raise unsupported(g, c, "indexing with several tensors or lists, or with masks")
    n_used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    v, d = g.tensor(x), 0
    for i in idx:
        if i is Ellipsis:
            d += x.dim() - n_used
        elif i is None:
            v = g.node("Unsqueeze", [v, g.ints([d])])
            d += 1
        elif isinstance(i, slice):
            step = 1 if i.step is None else int(i.step)
            if (i.start, i.stop, step) != (None, None, 1):
                start = 0 if i.start is None else int(i.start)
                stop = INT64_MAX if i.stop is None else int(i.stop)
                v = g.node("Slice", [v, g.ints([start]), g.ints([stop]), g.ints([d]),
                                     g.ints([step])])
            d += 1
        elif isinstance(i, Tensor):  # one integer tensor: its shape replaces the dim
            v = g.node("Gather", [v, g.tensor(i)], axis=d)
            d += i.dim()
        elif isinstance(i, (list, np.ndarray)):
            idx_arr = np.asarray(i, dtype=np.int64)
            v = g.node("Gather", [v, g.const(idx_arr)], axis=d)
            d += idx_arr.ndim
        else:
            v = g.node("Gather", [v, g.const(int(i), np.int64)], axis=d)
    return v


def _bool_index(i):
    from numgrad.tensor import Tensor
    if isinstance(i, Tensor):
        return np_dtype(i) == np.bool_ or not np.issubdtype(np_dtype(i), np.integer)
    arr = np.asarray(i)
    return arr.dtype == np.bool_ or (arr.size and not np.issubdtype(arr.dtype, np.integer))


def _reduce(g, c, op):
    a = bound(c)
    x = a["input"]
    dt = out_dtype(c)
    v = g.value(x, dt)
    numpy_names = a.get("numpy_names") or {}  # axis=, keepdims=
    d = numpy_names.get("axis", a.get("dim"))
    keep = int(bool(numpy_names.get("keepdims", a.get("keepdim", False))))
    axes = list(range(x.dim())) if d is None or (isinstance(d, (tuple, list)) and not d) \
        else dims(d, x.dim())
    if not axes:
        return v
    if g.opset >= 18 or op == "ReduceSum":
        return g.node(op, [v, g.ints(axes)], keepdims=keep)
    return g.node(op, [v], axes=axes, keepdims=keep)


@converts("mean")
def _mean(g, c):
    return _reduce(g, c, "ReduceMean")


@converts("sum")
def _sum(g, c):
    return _reduce(g, c, "ReduceSum")


@converts("amax")
def _amax(g, c):
    return _reduce(g, c, "ReduceMax")


@converts("amin")
def _amin(g, c):
    return _reduce(g, c, "ReduceMin")


@converts("max", "min")
def _max(g, c):
    from numgrad.tensor import Tensor
    a = bound(c)
    x, d = a["input"], a["dim"]
    if isinstance(d, Tensor):  # max(a, b): elementwise
        dt = out_dtype(c)
        return g.node("Max" if c.name == "max" else "Min", [g.value(x, dt), g.value(d, dt)])
    op = "ReduceMax" if c.name == "max" else "ReduceMin"
    v = g.tensor(x)
    if d is None:
        axes = list(range(x.dim()))
        if not axes:
            return v
        return g.node(op, [v, g.ints(axes)], keepdims=0) if g.opset >= 18 else \
            g.node(op, [v], axes=axes, keepdims=0)
    d, keep = int(d) % max(x.dim(), 1), int(bool(a["keepdim"]))
    if x.dim() == 0:
        return [v, g.const(0, np.int64)]
    values = g.node(op, [v, g.ints([d])], keepdims=keep) if g.opset >= 18 else \
        g.node(op, [v], axes=[d], keepdims=keep)
    arg = g.node("ArgMax" if c.name == "max" else "ArgMin", [v], axis=d, keepdims=keep)
    return [values, arg]


@converts("argmax", "argmin")
def _argmax(g, c):
    a = bound(c)
    x, d = a["input"], a["dim"]
    v = g.tensor(x)
    if d is None:
        v, d = g.node("Reshape", [v, g.ints([-1])]), 0
        keep = 0
    else:
        d, keep = int(d) % max(x.dim(), 1), int(bool(a["keepdim"]))
    return g.node("ArgMax" if c.name == "argmax" else "ArgMin", [v], axis=d, keepdims=keep)


@converts("clamp", "clamp_min", "clamp_max")
def _clamp(g, c):
    from numgrad.tensor import Tensor
    a = bound(c)
    dt = out_dtype(c)
    lo = a.get("min") if c.name != "clamp_max" else None
    hi = a.get("max") if c.name != "clamp_min" else None
    v = g.value(a["input"], dt)
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        for bound_, op in ((lo, "Max"), (hi, "Min")):
            if bound_ is not None:
                v = g.node(op, [v, g.value(bound_, dt)])
        return v
    return g.node("Clip", [v, "" if lo is None else g.const(lo, dt),
                           "" if hi is None else g.const(hi, dt)])


@converts("tril", "triu")
def _tril(g, c):
    x = c.args[0]
    k = c.kwargs.get("diagonal", c.args[1] if len(c.args) > 1 else 0)
    return g.node("Trilu", [g.tensor(x), g.const(int(k), np.int64)],
                  upper=int(c.name == "triu"))


# ---------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------


def _scores(g, q, k, rank, scale, dt):
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    s = g.node("MatMul", [q, g.node("Transpose", [k], perm=perm)])
    return g.node("Mul", [s, g.const(scale, dt)])


def _masked(g, s, mask, is_causal, dt, L, S, true_keeps=True):
    """softmax(s + the mask) over the last dim: a boolean mask keeps the True places
    (``scaled_dot_product_attention``) or masks them out (``true_keeps=False``:
    ``MultiheadAttention``); a float mask is added."""
    if is_causal:
        bias = np.where(np.tril(np.ones((L, S), bool)), 0, -np.inf).astype(dt)
        s = g.node("Add", [s, g.const(bias)])
    if mask is not None:
        if np_dtype(mask) == np.bool_:
            keep, drop = g.const(0.0, dt), g.const(-np.inf, dt)
            m = g.node("Where", [g.tensor(mask)] + ([keep, drop] if true_keeps else
                                                    [drop, keep]))
        else:
            m = g.value(mask, dt)
        s = g.node("Add", [s, m])
    return g.node("Softmax", [s], axis=-1)


@converts("scaled_dot_product_attention")
def _sdpa(g, c):
    a = bound(c)
    q, k, v = a["query"], a["key"], a["value"]
    if a["dropout_p"] > 0:
        raise unsupported(g, c, "dropout_p > 0")
    if a["enable_gqa"] and q.shape[-3] != k.shape[-3]:
        raise unsupported(g, c, "grouped-query attention")
    dt = out_dtype(c)
    scale = a["scale"] if a["scale"] is not None else 1 / math.sqrt(q.shape[-1])
    s = _scores(g, g.tensor(q), g.tensor(k), q.dim(), float(scale), dt)
    w = _masked(g, s, a["attn_mask"], a["is_causal"], dt, q.shape[-2], k.shape[-2])
    return g.node("MatMul", [w, g.tensor(v)])


@converts("multi_head_attention_forward")
def _mha(g, c):
    a = bound(c)
    q, k, v = a["query"], a["key"], a["value"]
    for what, bad in (("unbatched input", q.dim() != 3),
                      ("bias_k/bias_v", a["bias_k"] is not None or a["bias_v"] is not None),
                      ("add_zero_attn", a["add_zero_attn"]),
                      ("key_padding_mask", a["key_padding_mask"] is not None),
                      ("static_k/static_v", a["static_k"] is not None
                       or a["static_v"] is not None),
                      ("dropout in training mode", a["training"] and a["dropout_p"] > 0),
                      ("a 3-D attn_mask", a["attn_mask"] is not None
                       and a["attn_mask"].dim() != 2)):
        if bad:
            raise unsupported(g, c, what)
    dt = out_dtype(c)
    E, H = q.shape[2], int(a["num_heads"])
    hd = E // H
    if a["use_separate_proj_weight"]:
        ws = [g.tensor(a[f"{n}_proj_weight"]) for n in "qkv"]
    else:
        ws = g.node("Split", [g.tensor(a["in_proj_weight"]), g.ints([E, E, E])], n_out=3,
                    axis=0)
    bs = g.node("Split", [g.tensor(a["in_proj_bias"]), g.ints([E, E, E])], n_out=3, axis=0) \
        if a["in_proj_bias"] is not None else [None] * 3
    heads = []
    for x, w, b in zip((q, k, v), ws, bs):  # (T, N, E) -> (N H, T, hd)
        y = g.node("MatMul", [g.tensor(x), g.node("Transpose", [w])])
        if b is not None:
            y = g.node("Add", [y, b])
        y = g.node("Reshape", [y, g.ints([0, -1, hd])])
        heads.append(g.node("Transpose", [y], perm=[1, 0, 2]))
    s = _scores(g, heads[0], heads[1], 3, 1 / math.sqrt(hd), dt)
    is_causal = a["is_causal"] and a["attn_mask"] is None
    w = _masked(g, s, a["attn_mask"], is_causal, dt, q.shape[0], k.shape[0], False)
    o = g.node("Transpose", [g.node("MatMul", [w, heads[2]])], perm=[1, 0, 2])
    o = g.node("Reshape", [o, g.ints([0, -1, E])])
    o = g.node("MatMul", [o, g.node("Transpose", [g.tensor(a["out_proj_weight"])])])
    if a["out_proj_bias"] is not None:
        o = g.node("Add", [o, g.tensor(a["out_proj_bias"])])
    if not a["need_weights"]:
        return [o, None]
    w = g.node("Reshape", [w, g.ints([-1, H, q.shape[0], k.shape[0]])])
    if a["average_attn_weights"]:
        w = g.node("ReduceMean", [w, g.ints([1])], keepdims=0) if g.opset >= 18 else \
            g.node("ReduceMean", [w], axes=[1], keepdims=0)
    return [o, w]


# ---------------------------------------------------------------------------------------
# recurrent layers (their ``forward`` is recorded as one op)
# ---------------------------------------------------------------------------------------

# ONNX's gate order from PyTorch's: LSTM (i, f, g, o) -> (i, o, f, c); GRU (r, z, n) ->
# (z, r, h)
_GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}


def _gates(g, w, order, hidden):
    """Parameter ``w`` (gates stacked along dim 0) with its gates in ONNX's order."""
    v = g.tensor(w)
    if order == list(range(len(order))):
        return v
    parts = g.node("Split", [v, g.ints([hidden] * len(order))], n_out=len(order), axis=0)
    return g.node("Concat", [parts[i] for i in order], axis=0)


def _stack0(g, values):
    return g.node("Concat", [g.node("Unsqueeze", [a, g.ints([0])]) for a in values], axis=0)


@converts("lstm", "gru", "rnn")
def _rnn(g, c):
    from numgrad.tensor import Tensor
    m, x = c.args[0], c.args[1]
    hx = c.args[2] if len(c.args) > 2 else c.kwargs.get("hx")
    if not isinstance(x, Tensor):
        raise unsupported(g, c, "packed sequences")
    if x.dim() != 3:
        raise unsupported(g, c, "unbatched input")
    if getattr(m, "proj_size", 0):
        raise unsupported(g, c, "proj_size")
    if m.training and m.dropout and m.num_layers > 1:
        raise unsupported(g, c, "dropout between layers in training mode")
    mode, hidden = m.mode, m.hidden_size
    nd = 2 if m.bidirectional else 1
    order = _GATE_ORDER[mode]
    lstm = mode == "LSTM"
    v = g.tensor(x)
    if m.batch_first:
        v = g.node("Transpose", [v], perm=[1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        h0, c0 = (g.tensor(hx[0]), g.tensor(hx[1])) if lstm else (g.tensor(hx), None)
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if nd == 2 else "forward"}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1  # PyTorch's n = tanh(W x + b + r (U h + b_h))
    elif mode != "LSTM":
        attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * nd
    hs, cs = [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(nd):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            ws.append(_gates(g, getattr(m, "weight_ih" + sfx), order, hidden))
            rs.append(_gates(g, getattr(m, "weight_hh" + sfx), order, hidden))
            if m.bias:
                bs.append(g.node("Concat", [_gates(g, getattr(m, "bias_ih" + sfx), order,
                                                   hidden),
                                            _gates(g, getattr(m, "bias_hh" + sfx), order,
                                                   hidden)], axis=0))
        ins = [v, _stack0(g, ws), _stack0(g, rs), _stack0(g, bs) if bs else "", ""]
        for s0 in (h0, c0) if lstm else (h0,):
            ins.append("" if s0 is None else g.node(
                "Slice", [s0, g.ints([layer * nd]), g.ints([(layer + 1) * nd]), g.ints([0])]))
        outs = g.node(mode if mode in ("LSTM", "GRU") else "RNN", ins, n_out=3 if lstm else 2,
                      **attrs)
        y = g.node("Transpose", [outs[0]], perm=[0, 2, 1, 3])  # (T, N, dirs, H)
        v = g.node("Reshape", [y, g.ints([0, 0, -1])])
        hs.append(outs[1])
        if lstm:
            cs.append(outs[2])
    if m.batch_first:
        v = g.node("Transpose", [v], perm=[1, 0, 2])
    h_n = g.node("Concat", hs, axis=0) if len(hs) > 1 else hs[0]
    if not lstm:
        return [v, h_n]
    return [v, h_n, g.node("Concat", cs, axis=0) if len(cs) > 1 else cs[0]]


@converts("lstm_cell", "gru_cell", "rnn_cell")
def _rnn_cell(g, c):
    """One step of a cell: the sequence op over a sequence of length 1."""
    from numgrad.tensor import Tensor
    m, x = c.args[0], c.args[1]
    hx = c.args[2] if len(c.args) > 2 else c.kwargs.get("hx")
    if not isinstance(x, Tensor) or x.dim() != 2:
        raise unsupported(g, c, "unbatched input")
    hidden = m.hidden_size
    lstm = c.name == "lstm_cell"
    mode = "LSTM" if lstm else "GRU" if c.name == "gru_cell" else \
        ("RNN_TANH" if getattr(m, "nonlinearity", "tanh") == "tanh" else "RNN_RELU")
    order = _GATE_ORDER[mode]

    def one(t):  # (N, K) -> (1, N, K): a sequence of one step, or one direction
        return g.node("Unsqueeze", [g.tensor(t), g.ints([0])])

    w = g.node("Unsqueeze", [_gates(g, m.weight_ih, order, hidden), g.ints([0])])
    r = g.node("Unsqueeze", [_gates(g, m.weight_hh, order, hidden), g.ints([0])])
    b = ""
    if m.bias:
        b = g.node("Unsqueeze", [g.node("Concat", [_gates(g, m.bias_ih, order, hidden),
                                                   _gates(g, m.bias_hh, order, hidden)],
                                        axis=0), g.ints([0])])
    states = ([one(hx[0]), one(hx[1])] if lstm else [one(hx)]) if hx is not None else \
        (["", ""] if lstm else [""])
    attrs = {"hidden_size": hidden}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1
    elif mode != "LSTM":
        attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"]
    outs = g.node("LSTM" if lstm else "GRU" if mode == "GRU" else "RNN",
                  [one(x), w, r, b, ""] + states, n_out=3 if lstm else 2, **attrs)
    h = g.node("Squeeze", [outs[1], g.ints([0])])
    return [h, g.node("Squeeze", [outs[2], g.ints([0])])] if lstm else h
