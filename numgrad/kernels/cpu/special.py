"""Special functions for the elementwise formulas (``lgamma``, ``digamma``, ``polygamma``).

Each is a plain Python scalar function, registered for compiled code on any target (the CPU's
``@njit`` loops, CUDA device functions); the Python body also serves the CUDA simulator, so
it never calls ``math`` outside its domain (Python raises where compiled code gives inf/nan).
Every constant goes through ``like`` so float32 inputs compute in float32, as PyTorch's.

The methods are the textbook ones: the reflection formula below 0 (below 1/2 for trigamma),
the recurrence ``psi(x + 1) = psi(x) + 1/x`` up to where the asymptotic series is accurate,
and the Euler-Maclaurin sum for Hurwitz's zeta. PyTorch's edge values are kept: its poles,
its nan at negative integers and at -inf, and its trigamma's short series (six steps, then
terms through x^-7).
"""

import math

from numba.extending import register_jitable

from numgrad.kernels.cpu._scalar import ffloor, ftrunc, like

# B_2k / (2k) for k = 1..7: psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k)
_PSI_SERIES = (1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760,
               1.0 / 12)


def _bernoulli_over_factorials(n):
    """B_2k / (2k)! for k = 1..n (exact fractions, rounded once)."""
    from fractions import Fraction
    b = [Fraction(1)]  # B_0 .. B_2n from sum_{j<m+1} C(m+1, j) B_j = 0
    for m in range(1, 2 * n + 1):
        b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
    return tuple(float(b[2 * k] / math.factorial(2 * k)) for k in range(1, n + 1))


_ZETA_TAIL = _bernoulli_over_factorials(12)


@register_jitable(inline="always")
def is_pole(x):
    """Whether x is 0, a negative integer or -inf (the poles of Gamma)."""
    return x <= 0 and x == ffloor(x)


@register_jitable(inline="always")
def lgamma(x):
    """log |Gamma(x)|; inf at its poles (0, negative integers, -inf) and at +inf."""
    if is_pole(x) or x == math.inf:
        return like(x, math.inf)
    return like(x, math.lgamma(x))


@register_jitable(inline="always")
def digamma(x):
    """psi(x) = Gamma'(x) / Gamma(x): -inf at +0, +inf at -0, nan at negative integers and
    -inf."""
    if x == 0:
        return like(x, -math.inf) if math.copysign(1.0, x) > 0 else like(x, math.inf)
    if is_pole(x):
        return like(x, math.nan)
    pi = like(x, math.pi)
    r = like(x, 0.0)
    if x < 0:
        # reflection: psi(x) = psi(1 - x) - pi / tan(pi x), tan taken on x's fraction
        # (x - trunc(x): exact, and tiny for a tiny x)
        r = -pi / math.tan(pi * (x - ftrunc(x)))
        x = like(x, 1.0) - x
    while x < 10:
        # recurrence: psi(x) = psi(x + 1) - 1/x
        r -= like(x, 1.0) / x
        x += like(x, 1.0)
    if x == math.inf:
        return x
    z = like(x, 1.0) / (x * x)
    s = like(x, 0.0)
    for k in range(len(_PSI_SERIES) - 1, -1, -1):
        s = (s + like(x, _PSI_SERIES[k])) * z
    return r + like(x, math.log(x)) - like(x, 0.5) / x - s


@register_jitable(inline="always")
def trigamma(x):
    """psi'(x): PyTorch's values (inf at 0, nan at +-inf's reflection)."""
    pi = like(x, math.pi)
    sign = like(x, 1.0)
    r = like(x, 0.0)
    if x < 0.5:
        if x == -math.inf:
            return like(x, math.nan)
        # reflection: psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)
        s = math.sin(pi * x)
        if s == 0:
            return like(x, math.inf)
        sign = -sign
        r -= pi * pi / like(x, s * s)
        x = like(x, 1.0) - x
    for _ in range(6):
        # recurrence: psi'(x) = psi'(x + 1) + 1/x^2
        r += like(x, 1.0) / (x * x)
        x += like(x, 1.0)
    if x == math.inf:
        return sign * r
    # psi'(x) ~ (1 + 1/(2x) + 1/(6x^2) - 1/(30x^4) + 1/(42x^6)) / x
    t = like(x, 1.0) / (x * x)
    series = like(x, 1.0) + like(x, 0.5) / x + t * (
        like(x, 1.0 / 6) - t * (like(x, 1.0 / 30) - t * like(x, 1.0 / 42)))
    return sign * (r + series / x)


@register_jitable(inline="always")
def hurwitz_zeta(s, q):
    """zeta(s, q) = sum_{k >= 0} (q + k)^-s for s > 1 (inf at q's poles, nan at +inf)."""
    if is_pole(q):
        return like(q, math.inf)
    if q == math.inf:
        return like(q, math.nan)
    total = like(q, 0.0)
    while q < 10:
        total += q ** -s
        q += like(q, 1.0)
    if q != q:
        return q
    # Euler-Maclaurin: the tail is q^(1-s)/(s-1) + q^-s/2 + sum_k B_2k/(2k)! (s)_(2k-1)
    # q^(-s-2k+1), (s)_m the rising factorial
    qs = q ** -s
    total += q ** (like(q, 1.0) - s) / (s - like(q, 1.0)) + like(q, 0.5) * qs
    rising = s
    term = qs / q
    for k in range(len(_ZETA_TAIL)):
        t = like(q, _ZETA_TAIL[k]) * rising * term
        total += t
        if math.fabs(t) <= like(q, 1e-17) * math.fabs(total):
            break
        rising *= (s + like(q, 2 * k + 1)) * (s + like(q, 2 * k + 2))
        term /= q * q
    return total


@register_jitable(inline="always")
def polygamma(n, x):
    """psi^(n)(x) for n >= 0: digamma, trigamma, then (-1)^(n+1) n! zeta(n + 1, x)."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    f = like(x, 1.0)
    for k in range(2, int(n) + 1):
        f *= like(x, k)
    if int(n) % 2 == 0:
        f = -f
    return f * hurwitz_zeta(like(x, n + 1), x)
