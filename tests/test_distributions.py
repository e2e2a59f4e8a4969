"""``numgrad.distributions`` against ``torch.distributions``: draws for one seed, log_prob,
entropy, moments, gradients through log_prob/rsample/entropy, KL pairs, validation errors, and
a REINFORCE loop printing the same lines under both libraries."""

import io
import math
from contextlib import redirect_stdout

import numpy as np
import pytest
from conftest import raised, requires_torch, to_numpy, torch

import numgrad

pytestmark = requires_torch

LOC = [0.5, -1.0, 2.0]
SCALE = [1.0, 0.5, 2.0]
PROBS = [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]
LOGITS = [[0.1, -0.4, 1.2], [2.0, 0.0, -1.0]]
TRIL = [[1.5, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.2, 0.4, 1.1]]
COV = [[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]]


def _t(m, v):
    return m.tensor(v, dtype=m.float64, requires_grad=True)


# name -> (builder(m, params) -> distribution, parameter values)
CASES = {
    "normal": (lambda m, p: m.distributions.Normal(p[0], p[1]), [LOC, SCALE]),
    "uniform": (lambda m, p: m.distributions.Uniform(p[0], p[1]),
                [[-1.0, 0.0, 2.0], [1.0, 0.5, 5.0]]),
    "bernoulli_probs": (lambda m, p: m.distributions.Bernoulli(probs=p[0]), [[0.2, 0.5, 0.9]]),
    "bernoulli_logits": (lambda m, p: m.distributions.Bernoulli(logits=p[0]), [[0.3, -2.0]]),
    "categorical_probs": (lambda m, p: m.distributions.Categorical(probs=p[0]), [PROBS]),
    "categorical_logits": (lambda m, p: m.distributions.Categorical(logits=p[0]), [LOGITS]),
    "onehot": (lambda m, p: m.distributions.OneHotCategorical(logits=p[0]), [LOGITS]),
    "mvn_tril": (lambda m, p: m.distributions.MultivariateNormal(p[0], scale_tril=p[1]),
                 [LOC, TRIL]),
    "mvn_cov": (lambda m, p: m.distributions.MultivariateNormal(p[0], covariance_matrix=p[1]),
                [LOC, COV]),
    "mvn_precision": (lambda m, p: m.distributions.MultivariateNormal(
        p[0], precision_matrix=p[1]), [[[0.0, 1.0, 0.0], [1.0, 2.0, 3.0]], COV]),
}


def _run(m, name):
    """Everything one distribution gives for seed 0, and the gradients of it all."""
    build, values = CASES[name]
    params = [_t(m, v) for v in values]
    d = build(m, params)
    m.manual_seed(0)
    out = {"repr": repr(d), "batch": tuple(d.batch_shape), "event": tuple(d.event_shape),
           "sample": d.sample((4,)), "sample0": d.sample()}
    total = 0
    if d.has_rsample:
        out["rsample"] = d.rsample((2,))
        total = total + out["rsample"].sum()
    out["log_prob"] = d.log_prob(out["sample"])
    out["entropy"] = d.entropy()
    out["mean"], out["variance"] = d.mean, d.variance
    if not name.startswith("categorical"):
        out["stddev"] = d.stddev
    total = total + out["log_prob"].sum() + out["entropy"].sum()
    total.backward()
    for i, p in enumerate(params):
        out[f"grad{i}"] = p.grad
    if name.startswith("mvn"):
        out["cov"] = d.covariance_matrix
        out["tril"] = d.scale_tril
        out["precision"] = d.precision_matrix
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_distribution_matches_pytorch(name):
    ours, theirs = _run(numgrad, name), _run(torch, name)
    assert ours.keys() == theirs.keys()
    for key in ours:
        a, b = ours[key], theirs[key]
        if isinstance(a, (str, tuple)):
            assert a == b, key
            continue
        assert a is not None and b is not None, key
        assert str(a.dtype) == str(b.dtype), key
        if key.startswith("sample") and not name.startswith("mvn"):
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=key)
        else:
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-9, atol=1e-12,
                                       err_msg=key)


def test_float32_draws_and_rsample_gradients_match_pytorch():
    """The default dtype: Normal.rsample's eps and Categorical's multinomial draws as
    PyTorch's; d rsample / d(loc, scale) as PyTorch's."""
    def run(m):
        m.manual_seed(0)
        loc = m.tensor([0.0, 1.0], requires_grad=True)
        scale = m.tensor([1.0, 3.0], requires_grad=True)
        x = m.distributions.Normal(loc, scale).rsample((3,))
        (x * x).sum().backward()
        c = m.distributions.Categorical(logits=m.tensor([0.5, 0.1, -0.3, 2.0]))
        u = m.distributions.Uniform(0.0, 2.0).sample((3,))
        return [x, loc.grad, scale.grad, c.sample((6,)), c.sample(), u,
                m.distributions.Bernoulli(0.3).sample((5,))]
    for a, b in zip(run(numgrad), run(torch)):
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=2e-6, atol=1e-6)


def _kl_pairs(m):
    D = m.distributions
    t = m.tensor
    dt = m.float64
    return [
        (D.Normal(t([0.0, 1.0], dtype=dt), t([1.0, 2.0], dtype=dt)),
         D.Normal(t([0.5, -1.0], dtype=dt), t([0.7, 1.5], dtype=dt))),
        (D.Bernoulli(t([0.2, 0.0, 1.0], dtype=dt)), D.Bernoulli(t([0.5, 0.3, 0.4], dtype=dt))),
        (D.Categorical(t(PROBS, dtype=dt)), D.Categorical(logits=t(LOGITS, dtype=dt))),
        (D.Categorical(t([0.5, 0.5, 0.0], dtype=dt)), D.Categorical(t([0.0, 0.5, 0.5],
                                                                      dtype=dt))),
        (D.OneHotCategorical(t(PROBS, dtype=dt)), D.OneHotCategorical(logits=t(LOGITS,
                                                                               dtype=dt))),
        (D.Uniform(t([0.0, -1.0], dtype=dt), t([1.0, 1.0], dtype=dt)),
         D.Uniform(t([-1.0, 0.0], dtype=dt), t([2.0, 1.0], dtype=dt))),
        (D.Uniform(t([0.0], dtype=dt), t([1.0], dtype=dt)),
         D.Normal(t([0.3], dtype=dt), t([2.0], dtype=dt))),
        (D.Normal(t([0.0], dtype=dt), t([1.0], dtype=dt)),
         D.Uniform(t([0.0], dtype=dt), t([1.0], dtype=dt))),
        (D.MultivariateNormal(t(LOC, dtype=dt), covariance_matrix=t(COV, dtype=dt)),
         D.MultivariateNormal(t([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=dt),
                              scale_tril=t(TRIL, dtype=dt))),
    ]


def test_kl_divergence_pairs_match_pytorch():
    for (p, q), (tp, tq) in zip(_kl_pairs(numgrad), _kl_pairs(torch)):
        np.testing.assert_allclose(to_numpy(numgrad.distributions.kl_divergence(p, q)),
                                   to_numpy(torch.distributions.kl_divergence(tp, tq)),
                                   rtol=1e-10, err_msg=repr(p))
    D, TD = numgrad.distributions, torch.distributions
    assert (raised(D.kl_divergence, D.Uniform(0.0, 1.0), D.Bernoulli(0.5))
            == raised(TD.kl_divergence, TD.Uniform(0.0, 1.0), TD.Bernoulli(0.5)))


def _bad(m):
    D = m.distributions
    t = m.tensor
    return [
        lambda: D.Normal(0.0, -1.0),
        lambda: D.Normal(t([0.0, float("nan")]), t([1.0, 1.0])),
        lambda: D.Uniform(2.0, 1.0),
        lambda: D.Bernoulli(1.5),
        lambda: D.Bernoulli(),
        lambda: D.Categorical(t([0.5, 0.5]), t([0.0, 0.0])),
        lambda: D.Categorical(t([0.5, -0.5])),
        lambda: D.Categorical(t(1.0)),
        lambda: D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])),
        lambda: D.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 0.0], [1.0, -1.0]])),
        lambda: D.MultivariateNormal(t([0.0, 0.0])),
        lambda: D.MultivariateNormal(t(0.0), t([[1.0]])),
        lambda: D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]]),
                                     validate_args=False),
        lambda: D.Normal(0.0, 1.0).log_prob(1.0),
        lambda: D.Normal(t([0.0, 1.0]), 1.0).log_prob(t([1.0, 2.0, 3.0])),
        lambda: D.Categorical(t([0.5, 0.5])).log_prob(t(2)),
        lambda: D.Bernoulli(0.5).log_prob(t(0.5)),
        lambda: D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]])).log_prob(
            t([1.0, 2.0, 3.0])),
    ]


@pytest.mark.parametrize("k", range(len(_bad(numgrad))))
def test_invalid_parameters_and_values_raise_pytorchs_errors(k):
    ours, theirs = raised(_bad(numgrad)[k]), raised(_bad(torch)[k])
    assert theirs is not None
    assert ours == theirs


def test_expand_and_enumerate_support():
    def run(m):
        D = m.distributions
        n = D.Normal(m.tensor([0.0]), m.tensor([1.0])).expand((2, 3))
        c = D.Categorical(logits=m.tensor([0.0, 1.0, 2.0])).expand((2,))
        b = D.Bernoulli(m.tensor([0.1, 0.9]))
        m.manual_seed(1)
        return [tuple(n.batch_shape), repr(n), tuple(c.batch_shape), c.sample().tolist(),
                b.enumerate_support().tolist(), c.enumerate_support().tolist(),
                n.sample().shape == (2, 3)]
    assert run(numgrad) == run(torch)


# REINFORCE on a 4-armed bandit: the same program under both libraries
REINFORCE = """
torch.manual_seed(0)
means = torch.tensor([0.1, 0.5, 0.9, 0.3])
policy = torch.nn.Linear(1, 4)
opt = torch.optim.Adam(policy.parameters(), lr=0.1)
state = torch.ones(1, 1)
baseline = 0.0
for episode in range(20):
    logits = policy(state)
    dist = torch.distributions.Categorical(logits=logits)
    actions = dist.sample((8,))
    rewards = torch.normal(means[actions], 0.1)
    advantage = rewards - baseline
    loss = -(dist.log_prob(actions) * advantage).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    baseline = 0.9 * baseline + 0.1 * rewards.mean().item()
    print(episode, actions.flatten().tolist(), f"{loss.item():.5f}",
          [f"{p:.4f}" for p in dist.probs.flatten().tolist()])
print(torch.distributions.Categorical(logits=policy(state)))
"""


def _program(library):
    buf = io.StringIO()
    with redirect_stdout(buf):
        exec(REINFORCE, {"torch": library, "math": math})  # noqa: S102  (our own program)
    return buf.getvalue().splitlines()


def test_reinforce_bandit_prints_pytorchs_lines():
    ours, theirs = _program(numgrad), _program(torch)
    assert len(ours) == 21
    assert ours == theirs


def test_mvn_gradients_match_finite_differences():
    """The Cholesky factor and triangular solves are op compositions: their gradients against
    float64 central differences (a symmetric perturbation of the covariance)."""
    D = numgrad.distributions
    x = numgrad.tensor([[0.3, -0.2, 1.0], [1.5, 0.0, -0.7]], dtype=numgrad.float64)

    def f(loc, half):
        cov = half + half.mT  # symmetric in the checked input
        mvn = D.MultivariateNormal(loc, covariance_matrix=cov, validate_args=False)
        return mvn.log_prob(x).sum() + mvn.entropy()

    half = numgrad.tensor(COV, dtype=numgrad.float64) * 0.5
    assert numgrad.autograd.gradcheck(
        f, (numgrad.tensor(LOC, dtype=numgrad.float64, requires_grad=True),
            half.requires_grad_(True)))


SIMULATED = """
import numgrad as ng
D = ng.distributions
def run(dev):
    ng.manual_seed(0)
    loc = ng.zeros(3, device=dev, requires_grad=True)
    n = D.Normal(loc, ng.ones(3, device=dev))
    x = n.rsample((2,))
    n.log_prob(x).sum().backward()
    c = D.Categorical(logits=ng.tensor([0.1, 0.2, 0.3], device=dev))
    b = D.Bernoulli(ng.full((2, 3), 0.4, device=dev))
    t = ng.zeros(2, 3, device=dev)
    m = D.MultivariateNormal(ng.zeros(2, device=dev), 2 * ng.eye(2, device=dev))
    out = [x, loc.grad, c.sample((4,)), b.sample(), t.bernoulli_(b.probs), t.exponential_(),
           m.log_prob(m.sample())]
    assert all(str(o.device) == dev for o in out), [o.device for o in out]
    return [o.detach().cpu().tolist() for o in out]
assert run("cuda:0") == run("cpu")
print("ok")
"""


def test_distributions_and_bernoulli_on_cuda_draw_the_cpus_numbers():
    from conftest import run_on_simulator

    run_on_simulator(SIMULATED)
