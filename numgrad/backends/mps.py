"""``numgrad.backends.mps``: Apple's Metal backend, which numgrad does not have."""


def is_available():
    return False


def is_built():
    return False
