"""The float32 exp of ``kernels/cpu/_fastmath.py`` without its clamp and nan test
(``_exp32_normal``, erf's tail) gives ``_exp32``'s value bit for bit over the range it is
used on, and both are within 2 ulp of float64's exp there."""

import numpy as np
from numba import njit

from numgrad.kernels.cpu import _fastmath as fm


@njit(cache=False)
def _both(x, full, normal):
    for i in range(x.size):
        full[i] = fm._exp32(x[i])
        normal[i] = fm._exp32_normal(x[i])


def test_exp32_normal_equals_exp32_on_minus_87_to_88():
    lo, hi = np.float32(-87.0), np.float32(88.0)
    # every 997th float32 of [-87, 88] by bit pattern (both signs, all exponents), both ends
    neg = np.arange(0, int(lo.view(np.int32)) - int(np.float32(-0.0).view(np.int32)) + 1,
                    997, dtype=np.int64)
    x = np.concatenate([
        (np.int64(np.float32(-0.0).view(np.int32)) + neg).astype(np.int32).view(np.float32),
        np.arange(0, int(hi.view(np.int32)) + 1, 997, dtype=np.int32).view(np.float32),
        np.array([lo, hi, 0.0, -0.0], np.float32)])
    assert x.min() >= lo and x.max() <= hi
    full, normal = np.empty_like(x), np.empty_like(x)
    _both(x, full, normal)
    assert np.array_equal(full.view(np.int32), normal.view(np.int32))
    # and both are e^x: within 2 ulp of float64's exp where the result is a normal float32
    want = np.exp(x.astype(np.float64))
    ok = want >= np.finfo(np.float32).tiny
    assert ok.sum() > x.size // 2
    assert (np.abs(normal[ok] - want[ok]) <= 2.0 ** -22 * want[ok]).all()
