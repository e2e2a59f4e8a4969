"""``default_collate`` and ``default_convert``: how a DataLoader turns samples into batches.

``collate`` picks a function by the type of the batch's first element, as PyTorch does:
first an exact match in ``collate_fn_map``, then the first key the element is an instance of
(in the map's order), then mappings, namedtuples and sequences, recursively. Numbers become
tensors with the dtype PyTorch's ``torch.tensor`` gives the list (a Python float is the
default dtype, a NumPy scalar keeps its own, mixed entries are promoted), floats are float64.
"""

import collections.abc
import copy

import numpy as np

from numgrad import _dtype
from numgrad.tensor import Tensor

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _is_text_or_object(np_dtype):
    """Arrays of strings, bytes or objects are not collated into tensors."""
    return np_dtype.kind in "SaUO"


def _number_dtype(v):
    """The dtype ``torch.tensor`` gives the entry ``v`` of a list, or None when ``v`` is not
    a plain number (a NumPy scalar of a dtype numgrad lacks raises numgrad's error)."""
    if isinstance(v, (bool, np.bool_)):
        return _dtype.bool_
    if isinstance(v, np.number):
        d = _dtype.from_numpy_dtype(v.dtype)
        if d is None:
            from numgrad._factories import as_tensor
            as_tensor(np.asarray(v))  # raises numgrad's "can't convert" TypeError
        return d
    if isinstance(v, int):
        return _dtype.int64
    if isinstance(v, float):
        return _dtype.get_default_dtype()
    return None


def _type_name(v):
    cls = type(v)
    return f"numpy.{cls.__name__}" if cls.__module__ == "numpy" else cls.__name__


def _numbers(batch, dtype=None):
    """``torch.tensor(batch, dtype=dtype)`` for a flat list of numbers: the dtype inferred
    entry by entry and promoted (a Python float counts as the default dtype)."""
    from numgrad._factories import tensor
    kinds = [_number_dtype(v) for v in batch]
    if None in kinds:  # some entry is not a plain number
        if dtype is not None:
            for v, k in zip(batch, kinds):
                if k is None and not isinstance(v, (np.ndarray, Tensor)):
                    raise TypeError(f"must be real number, not {_type_name(v)}")
        return tensor(batch, dtype=dtype)  # 0-dim arrays and tensors, or numgrad's error
    if dtype is None:
        dtype = kinds[0]
        for k in kinds[1:]:
            dtype = _dtype.promote_types(dtype, k)
    if dtype.is_floating_point:
        values = [float(v) for v in batch]
    elif dtype is _dtype.bool_:
        values = [bool(v) for v in batch]
    else:
        values = [int(v) for v in batch]
        if any(not _INT64_MIN <= v <= _INT64_MAX for v in values):
            raise ValueError("Overflow when unpacking long long")
    return tensor(values, dtype=dtype)


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from numgrad.ops.shape import stack
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    from numgrad._factories import as_tensor
    elem = batch[0]
    if _is_text_or_object(elem.dtype):
        raise TypeError(_ERR.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _numbers(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return _numbers(batch, _dtype.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _numbers(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def _rebuild_mapping(elem, values):
    """A mapping like ``elem`` holding ``values`` (a plain dict when its type can't be built)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)
            out.update(values)
            return out
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem, values):
    """A sequence like ``elem`` holding ``values``: tuples become lists (as in PyTorch)."""
    if isinstance(elem, tuple):
        return values
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            out = copy.copy(elem)
            for i, v in enumerate(values):
                out[i] = v
            return out
        return type(elem)(values)
    except TypeError:
        return values


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples of one structure) into one batched structure."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is None:
            fn = next((f for t, f in collate_fn_map.items() if isinstance(elem, t)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {k: collate([d[k] for d in batch],
                                                  collate_fn_map=collate_fn_map)
                                       for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # each column is the tuple zip makes (strings come back as that tuple, as in PyTorch)
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return _rebuild_sequence(elem, columns)
    raise TypeError(_ERR.format(elem_type))


def default_collate(batch):
    """Batch a list of samples: tensors and arrays are stacked along a new first dim,
    numbers become tensors, strings and bytes stay a list, and mappings, namedtuples and
    sequences are collated field by field (tuples come back as lists)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """What a DataLoader without batching yields: NumPy arrays and scalars as tensors,
    inside mappings, namedtuples and sequences too (tuples as lists); the rest unchanged."""
    from numgrad._factories import as_tensor
    if isinstance(data, Tensor):
        return data
    cls = type(data)
    if cls.__module__ == "numpy" and cls.__name__ not in ("str_", "string_"):
        if isinstance(data, np.ndarray) and _is_text_or_object(data.dtype):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return cls(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
