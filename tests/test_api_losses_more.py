"""Losses vs PyTorch: BCE target gradients and weight refusals, and the extra losses and
distances of numgrad/nn/_losses_more.py (values, input and target gradients, nodes, errors)."""

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

R = np.random.default_rng(7)


def _pair(arrs, rg):
    """The same arrays as torch and numgrad tensors (float64), some requiring grad."""
    tt = [None if a is None else torch.tensor(a, requires_grad=r) for a, r in zip(arrs, rg)]
    nn_ = [None if a is None else ng.tensor(a, requires_grad=r) for a, r in zip(arrs, rg)]
    return tt, nn_


def _compare(fn_t, fn_n, arrs, rg, node=True):
    """Value, node name and every leaf's gradient of fn over the same inputs."""
    tt, nt = _pair(arrs, rg)
    lt, ln = fn_t(*tt), fn_n(*nt)
    np.testing.assert_allclose(ln.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    if not any(rg):
        return
    if node:
        assert type(ln.grad_fn).__name__ == type(lt.grad_fn).__name__
    gt = torch.linspace(0.5, 1.5, lt.numel(), dtype=lt.dtype).reshape(lt.shape)
    lt.backward(gt)
    ln.backward(ng.tensor(gt.numpy()))
    for a, b in zip(tt, nt):
        if a is not None and a.requires_grad:
            if a.grad is None:
                assert b.grad is None
            else:
                np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-9, atol=1e-12)


def _raises_like(fn_t, fn_n, targs, nargs):
    with pytest.raises(Exception) as et:
        fn_t(*targs)
    with pytest.raises(type(et.value)) as en:
        fn_n(*nargs)
    assert str(en.value) == str(et.value)


# ---- binary_cross_entropy(_with_logits): the target's gradient, weight refusals ----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rg", [(False, True), (True, True)])
def test_bce_with_logits_target_gradient(reduction, rg):
    x, t = R.standard_normal((2, 3)), R.uniform(0, 1, (2, 3))
    w, pw = R.uniform(0.5, 2, (3,)), R.uniform(0.5, 2, (2, 3))
    for lib_w in ((None, None), (w, None), (w, pw)):
        def f(lib):
            def run(a, b, c, d):
                return lib.nn.functional.binary_cross_entropy_with_logits(
                    a, b, weight=c, pos_weight=d, reduction=reduction)
            return run
        _compare(f(torch), f(ng), (x, t) + lib_w, rg + (False, False))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rg", [(False, True), (True, True)])
def test_bce_target_gradient(reduction, rg):
    p, t, w = R.uniform(0.05, 0.95, (2, 3)), R.uniform(0, 1, (2, 3)), R.uniform(0.5, 2, (3,))
    for ww in (None, w):
        def f(lib):
            def run(a, b, c):
                return lib.nn.functional.binary_cross_entropy(a, b, weight=c, reduction=reduction)
            return run
        _compare(f(torch), f(ng), (p, t, ww), rg + (False,))


def test_bce_target_gradcheck_and_double_backward():
    x = ng.tensor(R.standard_normal((2, 3)), requires_grad=True)
    p = ng.tensor(R.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    t = ng.tensor(R.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    pw, w = ng.tensor(R.uniform(0.5, 2, (3,))), ng.tensor(R.uniform(0.5, 2, (2, 3)))
    F = ng.nn.functional
    assert ng.autograd.gradcheck(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, pos_weight=pw), (x, t))
    assert ng.autograd.gradgradcheck(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, pos_weight=pw), (x, t))
    assert ng.autograd.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, w), (p, t))
    assert ng.autograd.gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b, w), (p, t))


@pytest.mark.parametrize("case", ["bcel_w", "bcel_pw", "bce_w", "nll_w", "ce_w"])
def test_non_differentiable_weights_refused(case):
    x, t = R.standard_normal((2, 3)), R.uniform(0, 1, (2, 3))
    idx = np.array([0, 2])

    def call(lib, grad_mode=True):
        F = lib.nn.functional
        w = lib.tensor(R.uniform(0.5, 2, (3,)), requires_grad=True)
        xt, tt = lib.tensor(x), lib.tensor(t)
        with lib.set_grad_enabled(grad_mode):
            if case == "bcel_w":
                return F.binary_cross_entropy_with_logits(xt, tt, weight=w)
            if case == "bcel_pw":
                return F.binary_cross_entropy_with_logits(xt, tt, pos_weight=w)
            if case == "bce_w":
                return F.binary_cross_entropy(lib.sigmoid(xt), tt, weight=w)
            if case == "nll_w":
                return F.nll_loss(xt, lib.tensor(idx), weight=w)
            return F.cross_entropy(xt, lib.tensor(idx), weight=w)
    _raises_like(call, call, (torch,), (ng,))
    call(ng, grad_mode=False)  # no_grad: accepted, as in PyTorch
    call(torch, grad_mode=False)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "cross_entropy"])
@pytest.mark.parametrize("rg", [(False, True), (True, True)])
def test_float_target_gradient_survey(name, rg):
    x = R.standard_normal((2, 3))
    t = R.uniform(0.1, 0.9, (2, 3))
    t = t / t.sum(1, keepdims=True)

    def f(lib):
        return lambda a, b: getattr(lib.nn.functional, name)(a, b)
    # smooth_l1 is a composite here (SmoothL1LossBackward0 in PyTorch), and numgrad names a
    # division by a number DivBackward0 (PyTorch: DivBackward1): values and gradients only
    _compare(f(torch), f(ng), (x, t), rg, node=name in ("mse_loss", "l1_loss"))


# ---- the extra losses and distances ----

def _sgn(*shape):
    return np.where(R.uniform(size=shape) < 0.5, -1.0, 1.0)


def _probs(*shape):
    p = R.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _fn(name, *, extra=(), **kw):
    """lib -> f(*tensors) calling lib.nn.functional.name(*tensors, *extra, **kw)."""
    def make(lib):
        return lambda *ts: getattr(lib.nn.functional, name)(*ts, *extra, **kw)
    return make


X23 = R.standard_normal((2, 3))
# (id, maker, arrays, requires_grad, node name or None (composite: values and gradients only))
LOSS_CASES = [
    ("kl_div_batchmean", _fn("kl_div", reduction="batchmean"), (np.log(_probs(2, 3)), _probs(2, 3)),
     (True, True), "DivBackward0"),
    ("kl_div_none", _fn("kl_div", reduction="none"), (X23, _probs(2, 3)), (True, True),
     "SubBackward0"),
    ("kl_div_log_target_sum", _fn("kl_div", reduction="sum", log_target=True),
     (X23, np.log(_probs(2, 3))), (True, True), "SumBackward0"),
    ("huber_mean", _fn("huber_loss", delta=0.7), (X23, R.standard_normal((2, 3))), (True, True),
     "HuberLossBackward0"),
    ("huber_none_target_only", _fn("huber_loss", reduction="none", delta=0.5),
     (X23, R.standard_normal((2, 3))), (False, True), "HuberLossBackward0"),
    ("huber_sum_broadcast", _fn("huber_loss", reduction="sum"),
     (X23, R.standard_normal((3,))), (True, True), "HuberLossBackward0"),
    ("huber_weight", lambda lib: lambda a, b, w: lib.nn.functional.huber_loss(a, b, weight=w),
     (X23, R.standard_normal((2, 3)), R.uniform(size=(2, 3))),
     (True, True, True), "MeanBackward0"),
    ("poisson_log", _fn("poisson_nll_loss"), (X23, R.uniform(0, 3, (2, 3))), (True, True),
     "MeanBackward0"),
    ("poisson_full", _fn("poisson_nll_loss", log_input=False, full=True, reduction="sum"),
     (R.uniform(0.5, 2, (2, 3)), R.uniform(0, 3, (2, 3))), (True, True), None),
    ("gaussian", _fn("gaussian_nll_loss"), (X23, R.standard_normal((2, 3)),
                                            R.uniform(0.5, 2, (2, 3))), (True, True, True),
     "MeanBackward0"),
    ("gaussian_homosc_full", _fn("gaussian_nll_loss", full=True, reduction="none"),
     (X23, R.standard_normal((2, 3)), np.array([0.5, 1e-9])), (True, True, True), None),
    ("soft_margin", _fn("soft_margin_loss"), (X23, _sgn(2, 3)), (True, False),
     "SoftMarginLossBackward0"),
    ("soft_margin_none", _fn("soft_margin_loss", reduction="none"), (X23, _sgn(2, 3)),
     (True, False), "SoftMarginLossBackward0"),
    ("cosine_similarity", _fn("cosine_similarity"), (X23, R.standard_normal((2, 3))),
     (True, True), "SumBackward1"),
    ("cosine_similarity_bcast", _fn("cosine_similarity", dim=-1),
     (X23, R.standard_normal((3,))), (True, True), "SumBackward1"),
    ("pairwise_distance", _fn("pairwise_distance"), (X23, R.standard_normal((2, 3))),
     (True, True), None),
    ("pairwise_distance_p1_keep", _fn("pairwise_distance", p=1.0, keepdim=True),
     (X23, R.standard_normal((2, 3))), (True, True), None),
    ("pdist", _fn("pdist"), (R.standard_normal((4, 3)),), (True,), None),
    ("pdist_p3", _fn("pdist", p=3), (R.standard_normal((3, 2)),), (True,), None),
    ("cosine_embedding", _fn("cosine_embedding_loss", margin=0.1),
     (X23, R.standard_normal((2, 3)), np.array([1.0, -1.0])), (True, True, False),
     "MeanBackward0"),
    ("cosine_embedding_0d", _fn("cosine_embedding_loss", reduction="none"),
     (X23[0], X23[1] * -1, np.array(-1.0)), (True, True, False), "AddBackward0"),
    ("margin_ranking", _fn("margin_ranking_loss", margin=0.2),
     (X23[0], X23[1], np.array([1.0, -1.0, 1.0])), (True, True, True), "MeanBackward0"),
    ("hinge_embedding", _fn("hinge_embedding_loss", margin=0.5),
     (X23, _sgn(2, 3)), (True, False), "MeanBackward0"),
    ("triplet", _fn("triplet_margin_loss", margin=2.0),
     (X23, R.standard_normal((2, 3)), R.standard_normal((2, 3))), (True, True, True),
     "MeanBackward0"),
    ("triplet_swap_p1", _fn("triplet_margin_loss", p=1, swap=True, reduction="none"),
     (X23, R.standard_normal((2, 3)), R.standard_normal((2, 3))), (True, True, True),
     "ClampMinBackward0"),
    ("triplet_distance", _fn("triplet_margin_with_distance_loss", margin=1.5, swap=True),
     (X23, R.standard_normal((2, 3)), R.standard_normal((2, 3))), (True, True, True),
     "MeanBackward0"),
    ("multilabel_soft_margin", _fn("multilabel_soft_margin_loss"),
     (X23, (R.uniform(size=(2, 3)) < 0.5) * 1.0, R.uniform(0.5, 2, (3,))), (True, False, False),
     "MeanBackward0"),
]


@pytest.mark.parametrize("case", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_loss_matches_torch(case):
    _, make, arrs, rg, node = case
    _compare(make(torch), make(ng), arrs, rg, node=False)
    if node is not None:
        _, nt = _pair(arrs, rg)
        assert type(make(ng)(*nt).grad_fn).__name__ == node


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin_loss(p, reduction):
    x = R.standard_normal((3, 4))
    w = R.uniform(0.5, 2, (4,))
    for t, ww in ((np.array([0, 3, 1]), None), (np.array([2, 2, 0]), w)):
        def make(lib, t=t):
            def run(a, b):
                return lib.nn.functional.multi_margin_loss(
                    a, lib.tensor(t), p=p, margin=0.8,
                    weight=None if b is None else lib.tensor(b), reduction=reduction)
            return run
        _compare(make(torch), make(ng), (x, ww), (True, False))
    # one row, 1D
    _compare(lambda a: torch.nn.functional.multi_margin_loss(a, torch.tensor(2)),
             lambda a: ng.nn.functional.multi_margin_loss(a, ng.tensor(2)),
             (x[0],), (True,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    x = R.standard_normal((3, 4))
    t = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 0]])
    _compare(lambda a: torch.nn.functional.multilabel_margin_loss(a, torch.tensor(t),
                                                                   reduction=reduction),
             lambda a: ng.nn.functional.multilabel_margin_loss(a, ng.tensor(t),
                                                                reduction=reduction),
             (x,), (True,))
    _compare(lambda a: torch.nn.functional.multilabel_margin_loss(a, torch.tensor(t[0])),
             lambda a: ng.nn.functional.multilabel_margin_loss(a, ng.tensor(t[0])),
             (x[0],), (True,))


def test_declared_losses_gradcheck_and_double_backward():
    F = ng.nn.functional
    x = ng.tensor(R.standard_normal((2, 3)), requires_grad=True)
    t = ng.tensor(R.standard_normal((2, 3)), requires_grad=True)
    y = ng.tensor(_sgn(2, 3))
    k = ng.tensor(np.array([0, 2]))
    lab = ng.tensor(np.array([[2, 0, -1], [1, -1, 0]]))
    assert ng.autograd.gradgradcheck(lambda a, b: F.huber_loss(a, b, delta=0.6), (x, t))
    assert ng.autograd.gradgradcheck(lambda a: F.soft_margin_loss(a, y), (x,))
    assert ng.autograd.gradcheck(lambda a: F.multi_margin_loss(a, k, p=2), (x,))
    assert ng.autograd.gradgradcheck(lambda a: F.multi_margin_loss(a, k, p=2), (x,))
    assert ng.autograd.gradcheck(lambda a: F.multilabel_margin_loss(a, lab), (x,))
    v = ng.tensor(R.uniform(0.5, 2, (2, 3)), requires_grad=True)
    assert ng.autograd.gradcheck(lambda a, b, c: F.gaussian_nll_loss(a, b, c), (x, t, v))
    assert ng.autograd.gradcheck(lambda a, b: F.cosine_embedding_loss(
        a, b, ng.tensor([1.0, -1.0]), margin=-0.9), (x, t))


def _F(lib):
    return lib.nn.functional


_X = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
ERROR_CASES = [
    lambda m: _F(m).multi_margin_loss(m.tensor(_X), m.tensor([0, 3])),
    lambda m: _F(m).multi_margin_loss(m.tensor(_X), m.tensor([0, 1, 2])),
    lambda m: _F(m).multi_margin_loss(m.tensor(_X), m.tensor([0, 1]), weight=m.tensor([1., 2])),
    lambda m: _F(m).multi_margin_loss(m.tensor(_X), m.tensor([0, 1]), p=3),
    lambda m: _F(m).multi_margin_loss(m.tensor(_X), m.tensor([0, 1]), weight=m.ones(1, 3)),
    lambda m: _F(m).multi_margin_loss(m.zeros(2, 0), m.tensor([0, 1])),
    lambda m: _F(m).multi_margin_loss(m.tensor(_X), m.tensor([0, 1]),
                                      weight=m.ones(3, requires_grad=True)),
    lambda m: _F(m).multilabel_margin_loss(m.tensor(_X), m.tensor([0, 1])),
    lambda m: _F(m).multilabel_margin_loss(m.tensor(_X), m.tensor([[0, 1, 3], [0, -1, 1]])),
    lambda m: _F(m).gaussian_nll_loss(m.tensor(_X), m.tensor(_X), m.tensor([[1., -1, 1]] * 2)),
    lambda m: _F(m).gaussian_nll_loss(m.tensor(_X), m.tensor(_X), -1.0),
    lambda m: _F(m).gaussian_nll_loss(m.tensor(_X), m.tensor(_X), m.ones(3, 2)),
    lambda m: _F(m).gaussian_nll_loss(m.tensor(_X), m.tensor(_X), m.ones(2, 3), reduction="x"),
    lambda m: _F(m).kl_div(m.tensor(_X), m.tensor(_X), reduction="x"),
    lambda m: _F(m).poisson_nll_loss(m.tensor(_X), m.tensor(_X), reduction="x"),
    lambda m: _F(m).huber_loss(m.tensor(_X), m.tensor(_X), reduction="x"),
    lambda m: _F(m).huber_loss(m.tensor(_X), m.tensor(_X), weight=m.ones(3)),
    lambda m: _F(m).huber_loss(m.tensor(_X), m.tensor(_X), weight=m.ones(2, 3), reduction="x"),
    lambda m: _F(m).soft_margin_loss(m.tensor(_X), m.tensor(_X, requires_grad=True)),
    lambda m: _F(m).margin_ranking_loss(m.tensor(_X), m.tensor(_X), m.ones(2)),
    lambda m: _F(m).cosine_embedding_loss(m.tensor(_X), m.tensor(_X), m.ones(2, 1)),
    lambda m: _F(m).cosine_embedding_loss(m.tensor(_X), m.tensor(_X), m.ones(())),
    lambda m: _F(m).triplet_margin_loss(m.tensor(_X), m.tensor(_X), m.ones(3)),
    lambda m: _F(m).triplet_margin_loss(m.tensor(_X), m.tensor(_X), m.ones(2, 3), margin=0),
    lambda m: _F(m).triplet_margin_with_distance_loss(m.tensor(_X), m.tensor(_X), m.ones(2, 3),
                                                      margin=0),
    lambda m: _F(m).triplet_margin_with_distance_loss(m.tensor(_X), m.tensor(_X), m.ones(2, 3),
                                                      reduction="q"),
    lambda m: _F(m).pdist(m.ones(3)),
    lambda m: _F(m).pdist(m.ones(3, 2), p=-1),
    lambda m: _F(m).pdist(m.ones(3, 2, dtype=m.int64)),
    lambda m: _F(m).cosine_similarity(m.ones(3, 2, dtype=m.int64), m.ones(3, 2, dtype=m.int64)),
    lambda m: _F(m).multilabel_soft_margin_loss(m.tensor(_X), m.tensor(_X), reduction="q"),
]

ERROR_CASES += [  # dtype rules
    lambda m: _F(m).huber_loss(m.ones(2, 3, dtype=m.int64), m.zeros(2, 3, dtype=m.int64)),
    lambda m: _F(m).huber_loss(m.ones(2, 3, dtype=m.int64), m.zeros(2, 3)),
    lambda m: _F(m).soft_margin_loss(m.ones(2, 3, dtype=m.int64), m.zeros(2, 3)),
    lambda m: _F(m).multi_margin_loss(m.ones(2, 3, dtype=m.int64), m.tensor([0, 1])),
    lambda m: _F(m).multi_margin_loss(m.ones(2, 3), m.tensor([0.0, 1.0])),
    lambda m: _F(m).multi_margin_loss(m.ones(2, 3), m.tensor([0, 1]),
                                      weight=m.ones(3, dtype=m.float64)),
    lambda m: _F(m).multilabel_margin_loss(m.ones(2, 3, dtype=m.int64), m.zeros(2, 3)),
    lambda m: _F(m).multilabel_margin_loss(m.ones(2, 3), m.zeros(2, 3)),
]


@pytest.mark.parametrize("i", range(len(ERROR_CASES)))
def test_errors_match_torch(i):
    _raises_like(ERROR_CASES[i], ERROR_CASES[i], (torch,), (ng,))


def test_warnings_match_torch():
    import warnings
    msgs = []
    for lib in (torch, ng):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _F(lib).kl_div(lib.tensor(_X), lib.tensor(_X))
            _F(lib).huber_loss(lib.tensor(_X), lib.ones(3))
        msgs.append([(i.category, str(i.message)) for i in w])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 2


MODULE_CASES = [
    ("KLDivLoss", dict(reduction="batchmean"), (np.log(_probs(2, 3)), _probs(2, 3))),
    ("HuberLoss", dict(delta=0.5), (X23, R.standard_normal((2, 3)))),
    ("PoissonNLLLoss", dict(full=True), (X23, R.uniform(0, 3, (2, 3)))),
    ("GaussianNLLLoss", dict(full=True), (X23, X23 * 0.5, R.uniform(0.5, 2, (2, 3)))),
    ("SoftMarginLoss", dict(reduction="sum"), (X23, _sgn(2, 3))),
    ("CosineEmbeddingLoss", dict(margin=0.2), (X23, X23[::-1].copy(), np.array([1.0, -1.0]))),
    ("MarginRankingLoss", dict(margin=0.3), (X23[0], X23[1], np.array([1.0, -1.0, -1.0]))),
    ("HingeEmbeddingLoss", dict(size_average=False), (X23, _sgn(2, 3))),
    ("TripletMarginLoss", dict(p=1.0, swap=True), (X23, X23 + 0.3, X23[::-1].copy())),
    ("TripletMarginWithDistanceLoss", dict(margin=0.5), (X23, X23 + 0.3, X23[::-1].copy())),
    ("MultiLabelSoftMarginLoss", dict(reduction="none"), (X23, (X23 > 0) * 1.0)),
    ("CosineSimilarity", dict(dim=0), (X23, R.standard_normal((2, 3)))),
    ("PairwiseDistance", dict(p=3.0, keepdim=True), (X23, R.standard_normal((2, 3)))),
]


@pytest.mark.parametrize("case", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_modules_match_torch(case):
    name, kw, arrs = case
    rg = (True,) + (False,) * (len(arrs) - 1)
    with pytest.warns(UserWarning) if "size_average" in kw else _nothing():
        mt, mn = getattr(torch.nn, name)(**kw), getattr(ng.nn, name)(**kw)
    assert getattr(mn, "reduction", None) == getattr(mt, "reduction", None)
    _compare(mt, mn, arrs, rg, node=False)


def test_margin_modules_integer_targets_match_torch():
    x, t = R.standard_normal((3, 4)), np.array([2, 0, 1])
    lab = np.array([[1, -1, 0, 0], [0, 3, -1, 0], [2, 1, 0, 3]])
    w = R.uniform(0.5, 2, (4,))
    for name, kw, tgt in (("MultiMarginLoss", dict(p=2, margin=0.5), t),
                          ("MultiLabelMarginLoss", {}, lab)):
        mt = getattr(torch.nn, name)(**kw, **({"weight": torch.tensor(w)} if kw else {}))
        mn = getattr(ng.nn, name)(**kw, **({"weight": ng.tensor(w)} if kw else {}))
        _compare(lambda a, m=mt, t=tgt: m(a, torch.tensor(t)),
                 lambda a, m=mn, t=tgt: m(a, ng.tensor(t)), (x,), (True,), node=True)
    for cls, kw in (("TripletMarginLoss", {"margin": 0}), ("MultiMarginLoss", {"p": 3}),
                    ("MultiMarginLoss", {"weight": np.ones((1, 4))}),
                    ("TripletMarginWithDistanceLoss", {"margin": -1.0})):
        def make(lib, cls=cls, kw=kw):
            kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            return getattr(lib.nn, cls)(**kw)
        _raises_like(make, make, (torch,), (ng,))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


EDGE_CASES = [
    lambda m: _F(m).huber_loss(m.zeros(0, 3, requires_grad=True), m.zeros(0, 3)),
    lambda m: _F(m).huber_loss(m.ones(2, 3), m.zeros(2, 3, dtype=m.float64) + 0.3),
    lambda m: _F(m).soft_margin_loss(m.zeros(3, dtype=m.float64, requires_grad=True),
                                     m.tensor([1, -1, 1])),
    lambda m: _F(m).multi_margin_loss(m.ones((), requires_grad=True), m.tensor(0)),
    lambda m: _F(m).multi_margin_loss(m.zeros(0, 3, requires_grad=True),
                                      m.zeros(0, dtype=m.int64), reduction="none"),
    lambda m: _F(m).multilabel_margin_loss(m.tensor([0.3, -0.2, 0.9], requires_grad=True),
                                           m.tensor([2, -1, 0])),
    lambda m: _F(m).kl_div(m.zeros(0, 3, requires_grad=True), m.zeros(0, 3),
                           reduction="batchmean"),
    lambda m: _F(m).kl_div(m.zeros(3, requires_grad=True), m.tensor([0.0, 0.5, 0.5]),
                           reduction="sum"),
    lambda m: _F(m).pdist(m.ones(1, 3, requires_grad=True)),
    lambda m: _F(m).pdist(m.tensor([[0.0, 1], [0, 2], [1, 2]], requires_grad=True), p=0),
    lambda m: _F(m).pdist(m.tensor([[0.0, 1], [0, 3], [1, 2]], requires_grad=True),
                          p=float("inf")),
    lambda m: _F(m).cosine_similarity(m.zeros(2, 3, requires_grad=True), m.ones(2, 3)),
    lambda m: _F(m).pairwise_distance(m.tensor(1.0, requires_grad=True), m.tensor(0.0)),
    lambda m: _F(m).pairwise_distance(m.ones(2, 3, requires_grad=True), m.zeros(3)),
    lambda m: _F(m).gaussian_nll_loss(m.zeros(2, 3, requires_grad=True), m.ones(2, 3), 0.5),
    lambda m: _F(m).gaussian_nll_loss(m.zeros(2, 3, requires_grad=True), m.ones(2, 3),
                                      m.ones(2)),
    lambda m: _F(m).cosine_embedding_loss(m.zeros(0, 3, requires_grad=True), m.zeros(0, 3),
                                          m.zeros(0)),
    lambda m: _F(m).margin_ranking_loss(m.zeros((), requires_grad=True), m.tensor(1.0),
                                        m.tensor(-1.0)),
    lambda m: _F(m).triplet_margin_loss(m.ones(3, requires_grad=True), m.zeros(3),
                                        m.ones(3) * 2),
    lambda m: _F(m).multilabel_soft_margin_loss(m.zeros(3, requires_grad=True), m.ones(3)),
]


@pytest.mark.parametrize("i", range(len(EDGE_CASES)))
def test_edge_sizes_and_dtypes_match_torch(i):
    import warnings
    outs = []
    for lib in (torch, ng):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = EDGE_CASES[i](lib)
        if out.requires_grad:
            out.sum().backward()
        outs.append(out)
    a, b = outs
    assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1]
    assert tuple(b.shape) == tuple(a.shape)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_declared_losses_property_vs_torch():
    """Any shape, delta, margin and p: huber, soft margin and multi margin equal PyTorch's
    values and gradients (input and target)."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    @hypothesis.settings(max_examples=20, deadline=None, derandomize=True)
    @hypothesis.given(n=st.integers(1, 4), c=st.integers(1, 5), seed=st.integers(0, 2**16),
                      delta=st.floats(0.05, 3.0), margin=st.floats(-1.0, 2.0),
                      p=st.sampled_from([1, 2]),
                      reduction=st.sampled_from(["mean", "sum", "none"]))
    def check(n, c, seed, delta, margin, p, reduction):
        rng = np.random.default_rng(seed)
        x, t = rng.standard_normal((n, c)), rng.standard_normal((n, c))
        y = np.where(rng.uniform(size=(n, c)) < 0.5, -1.0, 1.0)
        k = rng.integers(0, c, n)

        def f(lib):
            def run(a, b):
                F = lib.nn.functional
                return (F.huber_loss(a, b, reduction=reduction, delta=delta).sum()
                        + F.soft_margin_loss(a, lib.tensor(y), reduction=reduction).sum()
                        + F.multi_margin_loss(a, lib.tensor(k), p=p, margin=margin,
                                              reduction=reduction).sum())
            return run
        _compare(f(torch), f(ng), (x, t), (True, True), node=False)
    check()


@pytest.mark.parametrize("p", [2.0, 1.5, float("inf"), 0.0])  # p = 0: zero gradients
def test_pdist_records_one_node_as_torch(p):
    arr = np.random.default_rng(2).standard_normal((4, 3))
    res = []
    for lib in (torch, ng):
        x = lib.tensor(arr, requires_grad=True)
        y = _F(lib).pdist(x, p)
        (y * lib.arange(6.0)).sum().backward()
        res.append((y.grad_fn.name(), [type(f).__name__ for f, _ in y.grad_fn.next_functions],
                    x.grad.numpy()))
    assert res[1][:2] == res[0][:2]
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-10)
