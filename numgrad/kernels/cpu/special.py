"""Special functions for the elementwise formulas (``lgamma``, ``digamma``, ``polygamma``).

Each is a plain Python scalar function, overloaded (not inlined: numba-cuda cannot inline an
overload's body) so that every target compiles its body where a kernel calls it (the CPU's
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

from numba.extending import overload

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


def is_pole(x):
    """Whether x is 0, a negative integer or -inf (the poles of Gamma)."""
    return x <= 0 and x == ffloor(x)


def lgamma(x):
    """log |Gamma(x)|; inf at its poles (0, negative integers, -inf) and at +inf."""
    if is_pole(x) or x == math.inf:
        return like(x, math.inf)
    return like(x, math.lgamma(x))


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


def _compiled_body(fn):
    """The overload implementation of ``fn``: a copy of its own body (not the overloaded
    object itself, which numba-cuda would not bind)."""
    import types
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)


# every target compiles the bodies above wherever a kernel calls them (CPU @njit, CUDA)
@overload(is_pole)
def _is_pole(x):
    return _compiled_body(is_pole)


@overload(lgamma)
def _lgamma(x):
    return _compiled_body(lgamma)


@overload(digamma)
def _digamma(x):
    return _compiled_body(digamma)


@overload(trigamma)
def _trigamma(x):
    return _compiled_body(trigamma)


@overload(hurwitz_zeta)
def _hurwitz_zeta(s, q):
    return _compiled_body(hurwitz_zeta)


@overload(polygamma)
def _polygamma(n, x):
    return _compiled_body(polygamma)
