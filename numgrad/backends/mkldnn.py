"""``numgrad.backends.mkldnn``: oneDNN, which numgrad does not use."""

enabled = True


def is_available():
    return False
