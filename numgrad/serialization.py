"""``numgrad.save`` / ``numgrad.load``: tensors, state dicts and nested containers in a zip
of ``.npy`` arrays plus a JSON description. Loading never unpickles (``allow_pickle=False``),
so a file cannot run code; damaged or truncated files raise a clear RuntimeError."""

import io
import json
import os
import zipfile
from collections import OrderedDict

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._version import __version__
from numgrad.tensor import Tensor, _wrap

FORMAT = "numgrad-save-1"


def _c_order(a):
    """``a`` in C order (np.ascontiguousarray would turn 0-d arrays into 1-d ones)."""
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _encode(obj, arrays, memo):
    if isinstance(obj, Tensor):
        if id(obj) in memo:
            return {"tensor": memo[id(obj)]}
        from numgrad.nn.parameter import Parameter
        k = len(arrays)
        arrays.append(_c_order(_arrays.host(obj.detach()._data)))
        memo[id(obj)] = k
        node = {"tensor": k, "requires_grad": obj.requires_grad,
                "parameter": isinstance(obj, Parameter)}
        if obj.is_cuda:
            node["device"] = "cuda:0"
        return node
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if isinstance(obj, _dtype.dtype):
        return {"dtype": obj.name}
    if isinstance(obj, dict):
        return {"dict": [[_encode(k, arrays, memo), _encode(v, arrays, memo)]
                         for k, v in obj.items()],
                "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        return {"list" if isinstance(obj, list) else "tuple":
                [_encode(v, arrays, memo) for v in obj]}
    if isinstance(obj, np.ndarray):
        k = len(arrays)
        arrays.append(_c_order(obj))
        return {"ndarray": k}
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return {"value": obj.item()}
    raise TypeError(f"numgrad.save cannot store objects of type {type(obj).__name__} (tensors, "
                    "numbers, strings, None, dtypes, lists, tuples and dicts are supported)")


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write ``obj`` to a path or binary file object."""
    arrays = []
    tree = _encode(obj, arrays, {})
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("format", FORMAT)
        z.writestr("data.json", json.dumps({"version": __version__, "tree": tree}))
        for k, a in enumerate(arrays):
            buf = io.BytesIO()
            np.save(buf, a, allow_pickle=False)
            z.writestr(f"arrays/{k}.npy", buf.getvalue())


def _target_device(saved, map_location):
    """Where a tensor saved on ``saved`` loads (PyTorch's map_location rules, minus callables)."""
    if isinstance(map_location, dict):
        map_location = map_location.get(saved, saved)
    dev = _device.device(map_location if map_location is not None else saved)
    if dev.type == "cuda" and not _device.cuda_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")
    return _device.get(dev)


def _decode(node, arrays, memo, map_location=None):
    if "tensor" in node:
        k = node["tensor"]
        if k in memo:
            return memo[k]
        dev = _target_device(node.get("device", "cpu"), map_location)
        t = _wrap(_arrays.to_device(arrays(k), dev))
        if node.get("parameter"):
            from numgrad.nn.parameter import Parameter
            t = Parameter(t, node.get("requires_grad", True))
        elif node.get("requires_grad"):
            t.requires_grad_(True)
        memo[k] = t
        return t
    if "value" in node:
        return node["value"]
    if "dtype" in node:
        return _dtype.get(node["dtype"])
    if "dict" in node:
        items = [(_decode_key(k, arrays, memo), _decode(v, arrays, memo, map_location))
                 for k, v in node["dict"]]
        return OrderedDict(items) if node.get("ordered") else dict(items)
    if "list" in node:
        return [_decode(v, arrays, memo, map_location) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, arrays, memo, map_location) for v in node["tuple"])
    if "ndarray" in node:
        return arrays(node["ndarray"])
    raise ValueError(f"unknown entry {sorted(node)}")


def _decode_key(node, arrays, memo):
    v = _decode(node, arrays, memo)
    return tuple(v) if isinstance(v, list) else v


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Read what ``save`` wrote. No code runs: arrays are loaded with allow_pickle=False."""
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    try:
        with zipfile.ZipFile(f, "r") as z:
            if z.read("format").decode() != FORMAT:
                raise ValueError("unknown format")
            meta = json.loads(z.read("data.json"))

            def arrays(k):
                with z.open(f"arrays/{int(k)}.npy") as fh:
                    return np.load(io.BytesIO(fh.read()), allow_pickle=False)

            return _decode(meta["tree"], arrays, {}, map_location)
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError, TypeError,
            json.JSONDecodeError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise RuntimeError(
            f"{name} is not a valid numgrad file, or it is truncated or corrupted "
            f"({type(e).__name__}: {e})") from e
