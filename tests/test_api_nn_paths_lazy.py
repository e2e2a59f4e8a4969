"""``torch.nn.modules.<name>`` import paths, ``LazyBatchNorm1d/2d/3d`` and ``BatchNorm3d``,
and ``nn.DataParallel`` on one device (none here), against PyTorch."""

import importlib

import numpy as np
import pytest
from conftest import assert_close, raised, requires_torch, to_numpy, torch

import numgrad as ng

PATHS = ["linear", "dropout", "sparse", "rnn", "container", "normalization", "activation",
         "transformer", "conv", "pooling", "loss", "batchnorm", "module"]


@requires_torch
@pytest.mark.parametrize("name", PATHS)
def test_module_paths_hand_out_numgrads_classes(name):
    theirs = importlib.import_module(f"torch.nn.modules.{name}")
    ours = importlib.import_module(f"numgrad.nn.modules.{name}")
    have = [n for n in theirs.__all__ if hasattr(ng.nn, n)]
    assert have, name
    for n in have:
        assert getattr(ours, n) is getattr(ng.nn, n), n
        ns = {}
        exec(f"from numgrad.nn.modules.{name} import {n}", ns)  # noqa: S102
        assert ns[n] is getattr(ng.nn, n)
    if name != "module":  # numgrad's own module.py also lists its containers
        ns = {}
        exec(f"from numgrad.nn.modules.{name} import *", ns)  # noqa: S102
        assert sorted(k for k in ns if not k.startswith("__")) == sorted(have)
    missing = [n for n in theirs.__all__ if not hasattr(ng.nn, n)]
    for n in missing[:1]:
        with pytest.raises(ImportError):
            exec(f"from numgrad.nn.modules.{name} import {n}", {})  # noqa: S102


def test_path_of_unknown_name_raises_attribute_error():
    from numgrad.nn.modules import conv
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        conv.Nope  # noqa: B018
    from numgrad.nn.modules.loss import _Loss, _WeightedLoss  # noqa: F401  (own names stay)
    from numgrad.nn.parameter import UninitializedBuffer, UninitializedParameter
    assert UninitializedParameter is ng.nn.UninitializedParameter
    assert isinstance(ng.nn.LazyBatchNorm1d().running_mean, UninitializedBuffer)


def _state(bn):
    return (type(bn).__name__, repr(bn), list(bn.state_dict()),
            type(bn.weight).__name__ if bn.weight is not None else None,
            type(bn.running_mean).__name__ if bn.running_mean is not None else None)


LAZY = [("LazyBatchNorm1d", (4, 3), {}), ("LazyBatchNorm1d", (4, 3, 5), {"momentum": None}),
        ("LazyBatchNorm2d", (2, 3, 4, 4), {"eps": 1e-3}),
        ("LazyBatchNorm3d", (2, 3, 2, 3, 2), {"bias": False}),
        ("LazyBatchNorm2d", (2, 3, 4, 4), {"affine": False, "track_running_stats": False})]


@requires_torch
@pytest.mark.parametrize("case", LAZY, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAZY)])
def test_lazy_batchnorm_matches_pytorch(case):
    cls, shape, kw = case
    x = np.random.default_rng(0).standard_normal(shape)
    results = []
    for m in (torch, ng):
        bn = getattr(m.nn, cls)(**kw)
        before = (type(bn).__name__, repr(bn), bn.has_uninitialized_params(),
                  list(bn.state_dict()))
        t = m.tensor(x, dtype=m.float32, requires_grad=True)
        y = bn(t)
        y2 = bn(t * 2)  # the second call runs the plain BatchNorm
        (y * y2).sum().backward()
        results.append((before, _state(bn), y, y2, t.grad, bn.state_dict()))
    (tb, ts, *tv, tsd), (ob, os_, *ov, osd) = results
    assert ob == tb
    assert os_ == ts
    for a, b in zip(ov, tv):
        assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert list(osd) == list(tsd)
    for k in tsd:
        assert_close(osd[k], tsd[k], rtol=1e-5, atol=1e-6, msg=k)


@requires_torch
def test_lazy_batchnorm_errors_and_batchnorm3d():
    def cases(m):
        return [lambda: m.nn.LazyBatchNorm1d().weight.shape,
                lambda: m.nn.LazyBatchNorm2d()(m.randn(3, 4)),
                lambda: m.nn.BatchNorm3d(3)(m.randn(2, 3, 4)),
                lambda: m.nn.LazyBatchNorm3d()(m.randn(2, 3, 4, 4))]
    for ours, theirs in zip(cases(ng), cases(torch)):
        assert raised(ours) == raised(theirs)
    assert repr(ng.nn.BatchNorm3d(3, bias=False)) == repr(torch.nn.BatchNorm3d(3, bias=False))
    assert list(ng.nn.BatchNorm3d(3, bias=False).state_dict()) == \
        list(torch.nn.BatchNorm3d(3, bias=False).state_dict())


def _dp_run(m):
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.Tanh())
    dp = m.nn.DataParallel(net)
    x = m.randn(5, 3)
    y = dp(x)
    (y * y).sum().backward()
    return dp, net, y


@requires_torch
def test_data_parallel_is_a_pass_through_on_one_device():
    (odp, onet, oy), (tdp, tnet, ty) = _dp_run(ng), _dp_run(torch)
    assert repr(odp) == repr(tdp)
    assert odp.module is onet and odp.device_ids == tdp.device_ids == []
    assert list(odp.state_dict()) == list(tdp.state_dict())
    assert [n for n, _ in odp.named_parameters()] == [n for n, _ in tdp.named_parameters()]
    assert_close(oy, ty, rtol=1e-5, atol=1e-6)
    assert_close(onet[0].weight.grad, tnet[0].weight.grad, rtol=1e-4, atol=1e-6)
    assert ng.nn.parallel.DataParallel is ng.nn.DataParallel
    # a checkpoint of the wrapper loads into a fresh wrapper (keys prefixed "module.")
    fresh = ng.nn.DataParallel(ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.BatchNorm1d(4),
                                                ng.nn.Tanh()))
    fresh.load_state_dict({k: ng.tensor(to_numpy(v)) for k, v in tdp.state_dict().items()})
    np.testing.assert_array_equal(to_numpy(fresh.module[0].weight), to_numpy(tnet[0].weight))
    assert raised(ng.nn.parallel.data_parallel, onet, (ng.ones(2, 3),)) == \
        raised(torch.nn.parallel.data_parallel, tnet, (torch.ones(2, 3),))
