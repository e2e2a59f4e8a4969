"""``numgrad.distributions``: probability distributions with PyTorch's parameters, shapes,
validation messages and reprs; ``sample`` draws PyTorch's numbers for one seed, and
``log_prob``/``rsample``/``entropy`` are numgrad ops, so gradients flow through them."""

from numgrad.distributions import constraints
from numgrad.distributions.bernoulli import Bernoulli
from numgrad.distributions.categorical import Categorical, OneHotCategorical
from numgrad.distributions.distribution import Distribution
from numgrad.distributions.kl import kl_divergence, register_kl
from numgrad.distributions.multivariate_normal import MultivariateNormal
from numgrad.distributions.normal import Normal
from numgrad.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Uniform", "constraints", "kl_divergence", "register_kl"]
