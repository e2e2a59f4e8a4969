"""``numgrad.backends.openmp``: numgrad's CPU kernels run on Numba's threads."""


def is_available():
    return True
