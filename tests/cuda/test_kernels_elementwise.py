"""CUDA elementwise kernels against the CPU kernels on the same inputs."""

import numpy as np
import pytest
from conftest import assert_close, to_cuda

from numgrad.kernels.cpu import elementwise as EW
from numgrad.kernels.cuda import elementwise as CE

UNARY = ["neg", "abs", "sign", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu",
         "reciprocal", "floor", "ceil", "trunc", "round", "erf", "gelu", "gelu_tanh",
         "isnan", "isfinite", "logical_not"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "lt", "ge",
          "logical_and", "tanh_bwd", "sigmoid_bwd", "relu_bwd", "abs_bwd", "sqdiff", "gelu_bwd"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_cpu(name, rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    if name in ("log", "sqrt"):
        x = np.abs(x) + 0.1
    k = getattr(EW, name)
    dt = np.bool_ if name in ("isnan", "isfinite", "logical_not") else np.float32
    assert_close(CE.unary(k, to_cuda(x), dt), EW.unary(k, x, dt))


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcast_matches_cpu(name, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = np.abs(rng.standard_normal((3, 1)).astype(np.float32)) + 0.5
    k = getattr(EW, name)
    dt = np.bool_ if name in ("eq", "lt", "ge", "logical_and") else np.float32
    assert_close(CE.binary(k, to_cuda(a), to_cuda(b), dt, (2, 3, 4)),
                 EW.binary(k, a, b, dt, (2, 3, 4)))


def test_erf_and_gelu_match_cpu_over_a_dense_range():
    """The GPU computes erf with libdevice's erff (the simulator with libm's), the CPU with
    its own float32 polynomial: the two agree to an ulp or so, special values exactly."""
    x = np.concatenate([np.linspace(-6, 6, 2001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40]]).astype(np.float32)
    g = np.linspace(0.5, 1.5, x.size).astype(np.float32)
    X = to_cuda(x)
    assert_close(CE.unary(EW.erf, X, np.float32), EW.unary(EW.erf, x, np.float32),
                 rtol=3e-7, atol=1e-37)
    # x (1 + erf(x/sqrt(2))) / 2: an ulp of erf near -1 is 6e-8 of 1 + erf
    assert_close(CE.unary(EW.gelu, X, np.float32), EW.unary(EW.gelu, x, np.float32),
                 rtol=3e-7, atol=2e-7)
    assert_close(CE.binary(EW.gelu_bwd, to_cuda(g), X, np.float32, x.shape),
                 EW.binary(EW.gelu_bwd, g, x, np.float32, x.shape), rtol=1e-6, atol=1e-7)


def test_scalar_parameters_cast_to_input_dtype(rng):
    x = rng.standard_normal(7).astype(np.float32)
    for name, p in (("pow_s", 2.5), ("mul_s", 3.0), ("clamp", -0.5)):
        k = getattr(EW, name)
        assert_close(CE.unary(k, to_cuda(np.abs(x)), np.float32, p, 0.5),
                     EW.unary(k, np.abs(x), np.float32, p, 0.5))
    i = np.arange(-3, 4, dtype=np.int64)
    assert_close(CE.unary(EW.pow_int_s, to_cuda(i), np.int64, 3), i ** 3)


def test_ternary_where_and_strided_views(rng):
    c = rng.standard_normal((4, 3)) > 0
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    assert_close(CE.ternary(EW.where, to_cuda(c), to_cuda(a), to_cuda(b), np.float32, (4, 3)),
                 np.where(c, a, b))
    A = to_cuda(a)
    assert_close(CE.unary(EW.exp, A.T[::2], np.float32), np.exp(a.T[::2]))


def test_copy_into_casts_and_broadcasts(rng):
    a = rng.standard_normal((1, 3)).astype(np.float32) * 5
    dst = to_cuda(np.zeros((2, 3), np.int64))
    CE.copy_into(to_cuda(a), dst)
    assert_close(dst, np.broadcast_to(a.astype(np.int64), (2, 3)))


def test_zero_dim_and_empty(rng):
    x = np.float32(2.0).reshape(())
    assert_close(CE.unary(EW.exp, to_cuda(x), np.float32), np.exp(x).reshape(()))
    e = np.zeros((0, 3), np.float32)
    assert CE.unary(EW.exp, to_cuda(e), np.float32).shape == (0, 3)


def test_cpu_operand_is_the_pytorch_device_error(rng):
    a = to_cuda(np.ones(3, np.float32))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                                           "found at least two devices, cuda:0 and cpu!"):
        CE.binary(EW.add, a, np.ones(3, np.float32), np.float32, (3,))
