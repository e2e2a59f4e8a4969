"""The one rule for running a CPU loop serial or threaded (plain Python: the op layer imports
it without loading Numba).

A loop nest with ``prange`` is compiled twice (``numgrad.kernels._jit.serial_and_parallel``
or ``specialize(..., {"parallel": True})``): a serial copy, and a threaded copy whose start
and join cost a few microseconds. ``pick`` chooses between the two by the elements of work,
from the threshold of the loop's kind below. Every CPU launcher, and every op that calls a
loop directly, chooses through it.

Thresholds, in elements of work, by kind of loop, each with the reason it sits where it does.
A loop pays for the threads (their start, join and shared cache) once its serial time is
well above their cost, which is why the kind of loop sets the count:
"""

# elementwise flat and broadcasting loops: one arithmetic op per element, memory bound (a
# float32 add of 128K elements takes about 33 us serial on the 2-core AMD EPYC VM)
ELEMENTWISE = 1 << 17
# rows, windows and norms (softmax, layer and batch norm, pooling, im2col): several ops or a
# whole window per element, so half the elements carry as much work (a float32 softmax over
# 64K elements in rows of 256 takes about 70 us serial there)
ROWS = 1 << 16


def pick(serial, threaded, work, least=ROWS, parallel=None):
    """``threaded`` from ``least`` elements of ``work`` on, else ``serial``; ``parallel``
    (True or False) overrides the rule (tests run both copies on small data)."""
    if parallel is None:
        return threaded if work >= least else serial
    return threaded if parallel else serial
