"""float32 erf (the vectorizable polynomial of ``kernels/cpu/_fastmath.py``) against float64
erf over a dense sweep of float32 inputs and at the special values; exact GELU forward and
backward against PyTorch and against float64 finite differences."""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import assert_close, requires_torch, to_numpy, torch

import numgrad as ng

F = ng.nn.functional
_F32 = np.finfo(np.float32)


def _erf64(x):
    """float64 erf (libm's, through Numba) of a float64 array."""
    from numba import njit

    @njit(cache=False)
    def erf_all(x, out):
        for i in range(x.size):
            out[i] = math.erf(x[i])

    out = np.empty_like(x)
    erf_all(x, out)
    return out


def _sweep():
    """Every 101st float32 in [0, 6] by bit pattern (10.8M values: every exponent, both branches
    of the polynomial and the switch between them), as float32."""
    top = int(np.float32(6.0).view(np.int32))
    return np.arange(0, top + 1, 101, dtype=np.int32).view(np.float32)


def _ulps(got, ref):
    """|got - ref| in units in the last place of ref rounded to float32 (ref float64)."""
    r32 = np.abs(ref.astype(np.float32))
    ulp = np.nextafter(r32, np.float32(np.inf)).astype(np.float64) - r32.astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / ulp


def test_float32_erf_over_a_dense_sweep_is_within_1_07_ulp_and_odd():
    x = _sweep()
    ref = _erf64(x.astype(np.float64))
    got = ng.erf(ng.tensor(x)).numpy()
    assert got.dtype == np.float32
    err = _ulps(got, ref)
    assert err.max() <= 1.07, (err.max(), x[np.argmax(err)])
    # never more than one float32 step from float64 erf rounded to float32
    steps = np.abs(got.view(np.int32).astype(np.int64)
                   - ref.astype(np.float32).view(np.int32).astype(np.int64))
    assert steps.max() <= 1
    # erf(-x) = -erf(x) bit for bit (the sign of -0 included)
    neg = ng.erf(ng.tensor(-x)).numpy()
    np.testing.assert_array_equal(neg.view(np.int32), (-got).view(np.int32))


def test_float32_erf_strided_input_takes_the_same_formula():
    x = np.linspace(-5, 5, 2 * 40_001, dtype=np.float32).reshape(2, -1)
    flat = ng.erf(ng.tensor(x)).numpy()
    strided = ng.erf(ng.tensor(x).t()).numpy()  # the 4-D (strided) loop
    np.testing.assert_array_equal(strided, flat.T)


def test_float32_erf_special_values():
    tiny = [_F32.smallest_subnormal, 1e-44, 1e-40, 1e-39, _F32.tiny, 1e-30, 1e-8, 3e-4]
    huge = [3.9, 3.92, 3.95, 4.0, 4.5, 10.0, 1e10, float(_F32.max)]
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan]
                 + tiny + [-v for v in tiny] + huge + [-v for v in huge], np.float32)
    got = ng.erf(ng.tensor(x)).numpy()
    ref = _erf64(x.astype(np.float64)).astype(np.float32)
    assert np.signbit(got[1]) and not np.signbit(got[0])  # erf(+-0) = +-0
    assert got[0] == 0 and got[1] == 0
    assert got[2] == 1 and got[3] == -1 and np.isnan(got[4])
    # tiny: 2/sqrt(pi) x, rounded once (subnormal results included); huge: exactly +-1 where
    # the float64 erf rounds to +-1
    steps = np.abs(got[5:].view(np.int32).astype(np.int64)
                   - ref[5:].view(np.int32).astype(np.int64))
    assert steps.max() <= 1, list(zip(x[5:], got[5:], ref[5:]))
    big = np.abs(x) >= 4
    np.testing.assert_array_equal(got[big], np.sign(x[big]))


def test_float64_erf_is_libm_erf():
    x = np.concatenate([np.linspace(-6, 6, 10_001), [0.0, -0.0, 1e-300, np.inf, -np.inf]])
    got = ng.erf(ng.tensor(x)).numpy()
    np.testing.assert_array_equal(got, _erf64(x))
    assert np.signbit(got[-4])


def test_erf_and_gelu_kernels_vectorize():
    """The float32 loops are SIMD code in float32 with no libm erf call left in them (compiled
    fresh in a process without the disk cache, so that Numba can show the LLVM IR)."""
    code = textwrap.dedent("""
        import numpy as np
        from numgrad.kernels.cpu import elementwise as E
        x = np.linspace(-3, 3, 64, dtype=np.float32)
        for k in (E.erf, E.gelu, E.gelu_bwd):
            if k.arity == 1:
                E.unary(k, x, np.float32)
            else:
                E.binary(k, x, x, np.float32, x.shape)
            ir = k.flat.inspect_llvm(k.flat.signatures[0])
            assert "@erff(" not in ir and "@erf(" not in ir, k.name + " calls libm's erf"
            assert " x float>" in ir, k.name + " did not vectorize"
            assert "fpext float" not in ir, k.name + " widens float32 to double"
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "NUMGRAD_CACHE_DIR": "off"}, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


# GELU(x) = x Phi(x) on float32: dense values of x, where Phi goes from 0 to 1, and the ends.
# Not +inf: PyTorch's vectorized float32 CPU loop gives gelu(inf) = nan (its scalar tail and
# float64 give inf, as numgrad does).
_GELU_X = np.concatenate([np.linspace(-12, 12, 120_001),
                          [0.0, -0.0, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30]])


@requires_torch
def test_float32_gelu_forward_and_backward_match_pytorch():
    x = _GELU_X.astype(np.float32)
    g = np.random.default_rng(0).uniform(0.5, 1.5, x.shape).astype(np.float32)
    ours = ng.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    out = F.gelu(ours)
    tout = torch.nn.functional.gelu(theirs)
    out.backward(ng.tensor(g))
    tout.backward(torch.tensor(g))
    assert out.dtype == ng.float32 and ours.grad.dtype == ng.float32
    # the float32 tolerances of tests/test_ops.py: its NumPy comparison's for the forward,
    # as PyTorch's vectorized float32 GELU is up to 1.1e-6 from the exact value (x = 3.478;
    # numgrad's: 4.5e-7, the rounding of gelu(5.075)); its PyTorch comparison's for the grad
    assert_close(out, tout, rtol=2e-5, atol=2e-6, msg="forward")
    assert_close(ours.grad, theirs.grad, rtol=1e-5, atol=1e-6, msg="backward")


def _gelu64(x):
    with ng.no_grad():
        return to_numpy(F.gelu(ng.tensor(x, dtype=ng.float64)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_backward_matches_float64_finite_differences(dtype):
    # exactly representable float32 points, so both dtypes differentiate at the same x
    x = np.linspace(-8, 8, 4001).astype(np.float32).astype(np.float64)
    h = 1e-6
    expected = (_gelu64(x + h) - _gelu64(x - h)) / (2 * h)
    t = ng.tensor(x, dtype=getattr(ng, dtype), requires_grad=True)
    F.gelu(t).sum().backward()
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-6, "atol": 1e-7}
    assert_close(np.asarray(to_numpy(t.grad), np.float64), expected, **tol)
    # and the float32 forward against float64, in float32 steps of the result
    if dtype == "float32":
        with ng.no_grad():
            y32 = F.gelu(ng.tensor(x, dtype=ng.float32)).numpy().astype(np.float64)
        y64 = _gelu64(x)
        assert_close(y32, y64, rtol=2e-6, atol=2e-7)
