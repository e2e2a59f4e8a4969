"""numgrad.utils.data against torch.utils.data: default_collate / default_convert over every
kind of sample, DataLoader options and their errors, IterableDataset and ChainDataset, and
worker processes (order, seeding, worker_init_fn, get_worker_info, errors, timeout, crash,
persistent workers, shutdown). Each test runs the same program under both libraries.

The numgrad worker tests use datasets from tests/data_loader_helpers.py, which a worker
started by forkserver or spawn can import; PyTorch's reference loaders fork (its default)."""

import collections
import gc
import math
import multiprocessing
import os
import re
import warnings

import data_loader_helpers as H
import numpy as np
import pytest
from conftest import requires_torch, torch
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng
import numgrad.utils.data as ngdata

Point = collections.namedtuple("Point", "x y")
many_workers = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def canon(x):
    """A structure that compares equal when two collate results agree in values, dtypes,
    shapes and container types."""
    if isinstance(x, ng.Tensor) or (torch is not None and isinstance(x, torch.Tensor)):
        return ("tensor", str(x.dtype), tuple(x.shape), x.tolist())
    if isinstance(x, collections.abc.Mapping):
        return (type(x).__name__, [(k, canon(v)) for k, v in x.items()])
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [canon(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [canon(v) for v in x])
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.tolist())
    return (type(x).__name__, x)


def outcome(fn, *args, **kwargs):
    """canon(fn(*args, **kwargs)), or the exception's class name and message."""
    try:
        return canon(fn(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 - the point is to compare them
        return (type(e).__name__, str(e))


# --------------------------------------------------------------------------- collate

COLLATE_CASES = {
    "ints": [1, 2, 3],
    "int_then_float": [1, 2.5, 3],
    "float_then_int": [1.5, 2, True],
    "bools": [True, False],
    "bool_then_int": [True, 2],
    "np_float32": [np.float32(1), np.float32(2)],
    "np_mixed_widths": [np.float32(1), np.float64(2)],
    "np_ints": [np.int32(1), np.int64(2)],
    "np_float32_then_float": [np.float32(1), 2.0],
    "int_then_np_float16": [1, np.float16(2.5)],
    "np_uint8_int8": [np.uint8(200), np.int8(-3)],
    "np_bool": [np.bool_(True), np.bool_(False)],
    "int_overflow": [1, 2**63],
    "float_with_huge_int": [1.5, 2**70],
    "float_then_str": [1.5, "a"],
    "float_then_none": [1.5, None],
    "int_then_none": [1, None],
    "complex": [1 + 2j, 3],
    "none": [None],
    "strings": ["a", "b"],
    "bytes": [b"x", b"y"],
    "np_str": [np.str_("a")],
    "datetime": [np.datetime64(1, "D")],
    "arrays": [np.array([1, 2], np.float32), np.array([3, 4], np.float32)],
    "arrays_promote": [np.array([1, 2], np.float32), np.array([1, 2], np.float64)],
    "array_0d": [np.array(1, np.int16), np.array(2, np.int16)],
    "array_strings": [np.array(["a"])],
    "array_objects": [np.array([1], object)],
    "array_shapes": [np.zeros(2), np.zeros(3)],
    "tensors": "tensors",
    "tensors_promote": "tensors_promote",
    "tensor_shapes": "tensor_shapes",
    "ragged_lists": [[1, 2], [3]],
    "ragged_tuples": [(1, 2), (3,)],
    "tuples": [(1, "a", [2.0, 3]), (4, "b", [5.0, 6])],
    "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
    "namedtuple_strings": [Point("a", b"b"), Point("c", b"d")],
    "dicts": [{"a": 1, "b": np.float32(2)}, {"a": 3, "b": np.float32(4)}],
    "dict_missing_key": [{"a": 1}, {"b": 2}],
    "dict_extra_key": [{"a": 1}, {"a": 2, "b": 3}],
    "ordered_dict": [collections.OrderedDict(a=1), collections.OrderedDict(a=2)],
    "default_dict": [collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)],
    "ranges": [range(3), range(3)],
    "empty": [],
}


def _tensor_case(m, name):
    t = m.tensor
    return {"tensors": [t([1.0, 2.0]), t([3.0, 4.0])],
            "tensors_promote": [t([1, 2], dtype=m.int32), t([1.0, 2.0])],
            "tensor_shapes": [m.zeros(2), m.zeros(2, 1)]}[name]


@requires_torch
@pytest.mark.parametrize("name", list(COLLATE_CASES))
def test_default_collate_matches_pytorch(name):
    case = COLLATE_CASES[name]
    out = []
    for m in (ng, torch):
        batch = _tensor_case(m, case) if isinstance(case, str) else case
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(outcome(m.utils.data.default_collate, batch))
    assert out[0] == out[1]


@requires_torch
def test_default_collate_follows_default_dtype():
    for m in (ng, torch):
        m.set_default_dtype(m.float64)
    try:
        out = [outcome(m.utils.data.default_collate, [1, 2.5]) for m in (ng, torch)]
    finally:
        for m in (ng, torch):
            m.set_default_dtype(m.float32)
    assert out[0] == out[1] == ("tensor", "torch.float64", (2,), [1.0, 2.5])


CONVERT_CASES = [np.float32(1), np.array([1, 2]), (np.array(1), 2), {"a": np.array([1.0])},
                 Point(np.array(0), 1), [np.array(["a"])], "abc", b"x", np.str_("s"),
                 [1, (2, 3)], np.int64(5), np.bool_(True), np.array(3.5), range(2), 7, None]


@requires_torch
@pytest.mark.parametrize("i", range(len(CONVERT_CASES)))
def test_default_convert_matches_pytorch(i):
    data = CONVERT_CASES[i]
    assert outcome(ngdata.default_convert, data) == \
        outcome(torch.utils.data.default_convert, data)


# nested sample structures: a schema is drawn first, then a batch of samples that follow it
NP_DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
             "bool"]
MIXED = ["int", "float", "bool", "float32", "float64", "float16", "int64", "int32", "int8",
         "uint8"]

leaf_schema = st.one_of(
    st.tuples(st.just("python"), st.sampled_from(["int", "float", "bool", "str", "bytes"])),
    st.tuples(st.just("mixed"), st.just(None)),
    st.tuples(st.just("npscalar"), st.sampled_from(NP_DTYPES)),
    # float16 arrays are left out: numgrad stores float16 but does not stack it (it raises)
    st.tuples(st.sampled_from(["array", "tensor"]),
              st.tuples(st.sampled_from([d for d in NP_DTYPES if d != "float16"]),
                        st.lists(st.integers(0, 3), max_size=2).map(tuple))),
)
schema_strategy = st.recursive(leaf_schema, lambda inner: st.one_of(
    st.tuples(st.sampled_from(["tuple", "list"]), st.lists(inner, min_size=1, max_size=3)),
    st.tuples(st.just("dict"), st.dictionaries(st.sampled_from("abc"), inner, min_size=1,
                                               max_size=3)),
    st.tuples(st.just("point"), st.tuples(inner, inner)),
), max_leaves=5)


def _number(kind, v):
    if kind == "int":
        return v
    if kind == "float":
        return v + 0.5
    if kind == "bool":
        return bool(v % 2)
    return np.dtype(kind).type(v)


def _sample(schema, data):
    """One sample following ``schema``, as (numgrad's, PyTorch's): equal except that tensor
    leaves are each library's tensors of the same values."""
    kind, arg = schema
    if kind == "python":
        v = data.draw(st.integers(0, 50))
        value = {"int": v, "float": v / 4, "bool": bool(v % 2), "str": str(v),
                 "bytes": bytes([v])}[arg]
        return value, value
    if kind == "mixed":
        value = _number(data.draw(st.sampled_from(MIXED)), data.draw(st.integers(0, 50)))
        return value, value
    if kind == "npscalar":
        value = _number(arg, data.draw(st.integers(0, 50)))
        return value, value
    if kind in ("array", "tensor"):
        dtype, shape = arg
        size = math.prod(shape)
        values = data.draw(st.lists(st.integers(0, 50), min_size=size, max_size=size))
        arr = np.array(values).astype(dtype).reshape(shape)
        if kind == "array":
            return arr, arr.copy()
        return ng.tensor(arr), torch.tensor(arr)
    if kind == "point":
        a, b = (_sample(s, data) for s in arg)
        return Point(a[0], b[0]), Point(a[1], b[1])
    if kind == "dict":
        parts = {k: _sample(s, data) for k, s in arg.items()}
        return {k: p[0] for k, p in parts.items()}, {k: p[1] for k, p in parts.items()}
    parts = [_sample(s, data) for s in arg]
    cls = tuple if kind == "tuple" else list
    return cls(p[0] for p in parts), cls(p[1] for p in parts)


@requires_torch
@settings(max_examples=60, deadline=None)
@given(schema=schema_strategy, size=st.integers(1, 4), data=st.data())
def test_default_collate_nested_matches_pytorch(schema, size, data):
    samples = [_sample(schema, data) for _ in range(size)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = outcome(ngdata.default_collate, [s[0] for s in samples])
        theirs = outcome(torch.utils.data.default_collate, [s[1] for s in samples])
    assert ours == theirs


# --------------------------------------------------------------------------- options

OPTION_ERRORS = [
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(num_workers=1, prefetch_factor=-1),
    dict(persistent_workers=True),
    dict(multiprocessing_context="spawn"),
    dict(num_workers=1, multiprocessing_context="bogus"),
    dict(num_workers=1, multiprocessing_context=5),
    dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_size=None, drop_last=True),
]


@requires_torch
@many_workers
@pytest.mark.parametrize("kwargs", OPTION_ERRORS)
def test_loader_option_errors_match_pytorch(kwargs):
    out = [outcome(m.utils.data.DataLoader, list(range(4)), **kwargs) for m in (ng, torch)]
    assert out[0] == out[1] and out[0][0] in ("ValueError", "TypeError")


@requires_torch
@many_workers
def test_loader_attributes_match_pytorch():
    for kwargs in (dict(num_workers=0), dict(num_workers=2), dict(num_workers=2, prefetch_factor=5),
                   dict(num_workers=1, multiprocessing_context="spawn", in_order=False)):
        loaders = [m.utils.data.DataLoader(list(range(5)), batch_size=2, **kwargs)
                   for m in (ng, torch)]
        for attr in ("num_workers", "prefetch_factor", "persistent_workers", "timeout",
                     "in_order", "batch_size", "drop_last"):
            assert getattr(loaders[0], attr) == getattr(loaders[1], attr), attr
        ctx = [getattr(ld.multiprocessing_context, "get_start_method", lambda: None)()
               for ld in loaders]
        assert ctx[0] == ctx[1]
        assert len(loaders[0]) == len(loaders[1])
        # fixed once built
        out = [outcome(setattr, ld, "batch_size", 3) for ld in loaders]
        assert out[0] == out[1] and out[0][0] == "ValueError"


@requires_torch
def test_worker_count_warning_matches_pytorch():
    n = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()) + 1
    messages = []
    for m in (ng, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.utils.data.DataLoader(list(range(4)), num_workers=n)
        messages.append([str(w.message) for w in caught if "worker processes" in str(w.message)])
    assert messages[0] == messages[1] and len(messages[0]) == 1


@requires_torch
@many_workers
# PyTorch's iterator, failing in __init__, then fails again in its own __del__
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("kwargs", [dict(timeout=1), dict(num_workers=1, prefetch_factor=0)])
def test_iterator_assertions_match_pytorch(kwargs):
    """A timeout without workers, no prefetching with them: PyTorch's AssertionError when
    the pass starts (not a pass that silently yields nothing)."""
    out = [outcome(lambda m: next(iter(m.utils.data.DataLoader([1, 2], **kwargs))), m)
           for m in (ng, torch)]
    assert out[0] == out[1] and out[0][0] == "AssertionError"


def test_get_worker_info_is_none_in_the_main_process():
    assert ngdata.get_worker_info() is None
    assert ngdata.get_worker_info is ngdata.dataloader.get_worker_info


# --------------------------------------------------------------------------- iterable


def _torch_range():
    class TorchRange(torch.utils.data.IterableDataset):  # H.Range, on PyTorch's base class
        def __init__(self, start, end):
            super().__init__()
            self.start, self.end = start, end

        __iter__ = H.Range.__iter__
        __len__ = H.Range.__len__
    return TorchRange


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(batch_size=None), dict(batch_size=2),
                                    dict(batch_size=2, drop_last=True)])
def test_iterable_and_chain_datasets_match_pytorch(kwargs, monkeypatch):
    def run(m, make):
        chain = make(0, 3) + make(10, 15)
        assert isinstance(chain, m.utils.data.ChainDataset)
        loader = m.utils.data.DataLoader(chain, **kwargs)
        return [canon(b) for b in loader], len(loader), len(chain)
    ours = run(ng, H.Range)
    # H.Range's __iter__ asks numgrad's get_worker_info; under PyTorch it asks PyTorch's
    monkeypatch.setattr(H.ngdata, "get_worker_info", torch.utils.data.get_worker_info)
    assert ours == run(torch, _torch_range())


@requires_torch
def test_iterable_dataset_errors_match_pytorch():
    TorchRange = _torch_range()
    for kwargs in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        out = [outcome(m.utils.data.DataLoader, make(0, 3), **kwargs)
               for m, make in ((ng, H.Range), (torch, TorchRange))]
        assert out[0][0] == out[1][0] == "ValueError"
        assert re.sub(r"\[0\]+|\[\[0\]\]", "", out[0][1]) == \
            re.sub(r"\[0\]+|\[\[0\]\]", "", out[1][1])
    out = [outcome(m.utils.data.ConcatDataset, [make(0, 3)])
           for m, make in ((ng, H.Range), (torch, TorchRange))]
    assert out[0] == out[1] == ("AssertionError", "ConcatDataset does not support "
                                                  "IterableDataset")
    out = [outcome(lambda d: list(iter(d)), m.utils.data.ChainDataset([[1, 2]]))
           for m in (ng, torch)]
    assert out[0] == out[1] == ("AssertionError", "ChainDataset only supports IterableDataset")


# --------------------------------------------------------------------------- workers


def _assert_exited(workers):
    """Every worker process has ended, none killed by a signal."""
    for w in workers:
        w.join(timeout=10)
        assert not w.is_alive()
        assert w.exitcode == 0, w.exitcode


@requires_torch
@many_workers
def test_workers_match_pytorch_order_seeds_and_init():
    """Shuffled, batched, two workers, worker_init_fn, persistent over two epochs: the same
    batches in the same order, the same worker ids and seeds, the same numbers from numgrad's
    (PyTorch's), Python's and NumPy's generators inside the workers."""
    results = []
    for m in (ng, torch):
        m.manual_seed(7)
        loader = m.utils.data.DataLoader(H.Probe(10, m.__name__), batch_size=3, shuffle=True,
                                         num_workers=2, worker_init_fn=H.record_init,
                                         persistent_workers=True)
        epochs = [[canon(b) for b in loader] for _ in range(2)]
        broken = [canon(next(iter(loader)))]  # an epoch left after one batch
        epochs.append(broken + [canon(b) for b in loader])  # then a whole one
        results.append((epochs, len(loader)))
        if m is ng:
            workers = list(loader._iterator._workers)
            del loader
            gc.collect()
            _assert_exited(workers)
    assert results[0] == results[1]
    (first, second, third), n = results[0]
    assert n == 4 and len(first) == 4 and len(third) == 5
    assert first != second  # each epoch reshuffles
    got = [i for b in first for i in dict(b[1])["index"][3]]
    assert sorted(got) == list(range(10))


@requires_torch
@many_workers
def test_tensor_dataset_through_workers_matches_pytorch():
    """Tensors come back from the workers by pickling, in sampler order (in_order=True) even
    when a later batch is ready first; in_order=False yields the same batches."""
    results = {}
    for m in (ng, torch):
        x = m.arange(30.0).reshape(15, 2)
        y = m.arange(15)
        ds = m.utils.data.TensorDataset(x, y)
        for workers, in_order in ((0, True), (2, True), (2, False)):
            loader = m.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers,
                                             generator=m.Generator().manual_seed(3),
                                             in_order=in_order)
            results[m.__name__, workers, in_order] = [canon(b) for b in loader]
    base = results["numgrad", 0, True]
    assert results["torch", 0, True] == base
    assert results["numgrad", 2, True] == base == results["torch", 2, True]
    assert sorted(map(repr, results["numgrad", 2, False])) == sorted(map(repr, base))


@requires_torch
def test_worker_error_is_reraised_like_pytorch():
    """A dataset error inside a worker comes back as the same class, the message saying
    which worker and carrying the original traceback; the next batch still loads. numgrad
    starts this one with spawn."""
    out = []
    for m, ctx in ((ng, "spawn"), (torch, None)):
        loader = m.utils.data.DataLoader(H.Faulty(6, bad=3), batch_size=2, num_workers=1,
                                         multiprocessing_context=ctx)
        it = iter(loader)
        first = canon(next(it))
        with pytest.raises(ValueError) as err:
            next(it)
        rest = [canon(b) for b in it]
        lines = str(err.value).splitlines()
        out.append((first, rest, lines[:2], lines[-1]))
        if m is ng:
            _assert_exited(it._workers)
    assert out[0] == out[1]
    assert out[0][2] == ["Caught ValueError in DataLoader worker process 0.",
                         "Original Traceback (most recent call last):"]
    assert out[0][3] == "ValueError: bad index 3"


@requires_torch
def test_worker_init_fn_error_is_reraised_like_pytorch():
    out = []
    for m in (ng, torch):
        loader = m.utils.data.DataLoader(H.Faulty(2, bad=-1), num_workers=1,
                                         worker_init_fn=H.failing_init)
        with pytest.raises(KeyError) as err:
            next(iter(loader))
        lines = str(err.value).splitlines()
        out.append((lines[:2], lines[-1]))
    assert out[0] == out[1]
    assert out[0][0][0] == "Caught KeyError in DataLoader worker process 0."
    assert out[0][1] == "KeyError: 'no config for worker 0'"


@requires_torch
@many_workers
def test_iterable_dataset_workers_shard_like_pytorch(monkeypatch):
    """PyTorch's documented example: each worker iterates its own copy and takes its share
    by get_worker_info; results interleave worker by worker."""
    loader = ngdata.DataLoader(H.Range(3, 7), num_workers=2, batch_size=None)
    ours = [canon(b) for b in loader]
    monkeypatch.setattr(H.ngdata, "get_worker_info", torch.utils.data.get_worker_info)
    theirs = [canon(b) for b in torch.utils.data.DataLoader(_torch_range()(3, 7),
                                                            num_workers=2, batch_size=None)]
    assert ours == theirs
    assert [b[1] for b in ours] == [3, 5, 4, 6]


@requires_torch
def test_timeout_and_crash_match_pytorch():
    """timeout: PyTorch's RuntimeError; a worker that dies: 'exited unexpectedly'. Neither
    leaves a process behind once the iterator is gone."""
    for make, timeout, pattern in (
            (lambda: H.Slow(2, bad=0, delay=2), 0.5,
             r"^DataLoader timed out after 0\.5 seconds$"),
            (lambda: H.Crashing(2, bad=0), 0,
             r"^DataLoader worker \(pid(\(s\))? \d+\) exited unexpectedly")):
        for m in (ng, torch):
            it = iter(m.utils.data.DataLoader(make(), batch_size=1, num_workers=1,
                                              timeout=timeout))
            with pytest.raises(RuntimeError, match=pattern):
                next(it)
            if m is ng:
                workers = list(it._workers)
                del it
                gc.collect()
                for w in workers:
                    w.join(timeout=10)
                    assert not w.is_alive()


def test_unpicklable_collate_fn_fails_cleanly():
    before = set(multiprocessing.active_children())
    loader = ngdata.DataLoader(list(range(4)), num_workers=1, collate_fn=lambda b: b)
    with pytest.warns(UserWarning, match="Got pickle error"):
        with pytest.raises(Exception, match="pickle|lambda"):
            iter(loader)
    gc.collect()
    assert not [p for p in multiprocessing.active_children() if p not in before]
