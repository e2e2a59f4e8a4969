"""Scalar helpers shared by the kernel modules."""

from numba.extending import overload


def like(x, c):
    """``c`` converted to the Numba type of ``x`` (keeps float32 math in float32)."""
    raise NotImplementedError("like() is only usable inside jitted code")


@overload(like, inline="always")
def _like(x, c):
    ty = x

    def impl(x, c):
        return ty(c)

    return impl
