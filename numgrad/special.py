"""``numgrad.special``: PyTorch's ``torch.special`` names for the functions numgrad computes
(each is the numgrad function itself, so it records the same node: ``expit`` records
``SigmoidBackward0``, ``gammaln`` ``LgammaBackward0``, as PyTorch's do).

Not yet (numgrad has no kernel for their math): airy_ai, the Bessel and modified Bessel
functions, i0/i0e/i1/i1e, entr, erfcx, erfinv, exp2, gammainc/gammaincc, log_ndtr, logit,
multigammaln, ndtr, ndtri, sinc, spherical_bessel_j0, xlog1py, xlogy, zeta and the orthogonal
polynomials (Chebyshev, Hermite, Laguerre, Legendre)."""

from numgrad.ops import elementwise as _ew
from numgrad.ops import reduction as _red
from numgrad.ops import unary as _un

erf = _un.erf
erfc = _un.erfc
expm1 = _un.expm1
log1p = _un.log1p
expit = _un.sigmoid
gammaln = _un.lgamma
digamma = _un.digamma
psi = _un.digamma
polygamma = _un.polygamma
logsumexp = _red.logsumexp


def round(input, *, decimals=0, out=None):  # noqa: A001  (PyTorch's name)
    """Round half to even, to ``decimals`` places."""
    return _ew.round(input, decimals=decimals, out=out)


def softmax(input, dim, *, dtype=None):
    """exp(x) / sum exp(x) along ``dim`` (``SoftmaxBackward0``)."""
    return _red.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """x - logsumexp(x) along ``dim`` (``LogSoftmaxBackward0``)."""
    return _red.log_softmax(input, dim, dtype)
