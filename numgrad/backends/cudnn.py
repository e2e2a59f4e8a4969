"""``numgrad.backends.cudnn``: numgrad does not use cuDNN; the flags keep what scripts set."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
