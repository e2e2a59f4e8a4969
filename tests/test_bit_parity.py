"""Backward formulas that give PyTorch's gradients bit for bit, given the same saved values.

Programs such as makemore's manual-backprop lecture compare hand-derived gradients with
autograd's by ``torch.all(a == b)``: the comparison prints the same answers under numgrad
only where numgrad rounds each backward formula as PyTorch's CPU kernels do.
"""

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad
from numgrad.ops import unary


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, backward", [("tanh", unary.tanh_backward),
                                            ("sigmoid", unary.sigmoid_backward)])
def test_backward_of_pytorchs_saved_result_is_bit_identical(name, backward, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(100_003).astype(dtype)  # odd: vector bodies and tails
    g = rng.standard_normal(100_003).astype(dtype)
    x = torch.tensor(a, requires_grad=True)
    y = getattr(torch, name)(x)
    y.backward(torch.tensor(g))
    ours = backward(numgrad.tensor(g), numgrad.tensor(y.detach().numpy())).numpy()
    np.testing.assert_array_equal(ours, x.grad.numpy())
