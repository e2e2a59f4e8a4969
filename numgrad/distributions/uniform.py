"""``Uniform(low, high)``: the half-open interval [low, high)."""

import math
import numbers

import numgrad
from numgrad._shape import Size
from numgrad.distributions import constraints
from numgrad.distributions.distribution import Distribution
from numgrad.distributions.utils import broadcast_all

__all__ = ["Uniform"]

_EMPTY = Size()  # the default sample_shape


class Uniform(Distribution):
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        scalars = isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
        super().__init__(Size() if scalars else self.low.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = Size(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    # x = low + u (high - low): d/dlow = 1 - u, d/dhigh = u
    def rsample(self, sample_shape=_EMPTY):
        shape = self._extended_shape(sample_shape)
        u = numgrad.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = self.low.le(value).type_as(self.low).mul(self.high.gt(value).type_as(self.low))
        return numgrad.log(inside) - numgrad.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return numgrad.log(self.high - self.low)
