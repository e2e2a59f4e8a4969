"""Where eager code reports to ``numgrad.compile``'s tracer: the one module it imports for that.

Eager code never imports ``numgrad._compile``. While a trace runs, the tracer's tape is
attached here (``attach``: ``numgrad._compile.tape.start`` and ``stop``); otherwise ``TAPE``
is None, and every function below does its eager work alone. Hot paths test
``_hook.TAPE is None`` themselves (one attribute read) before calling anything here.

What eager code reports, one function each:

* ``record(fn, *args)``: host work on tensor values (a cast, a copy, index preparation)
  and Python launchers that must replay as one step (BLAS products, the conv loop), run
  and recorded. Numba kernels called from Python need nothing: the tracer records them at
  Numba's dispatcher class while it is attached.
* ``record_draw(fn, generator, *args)``: a random draw, recorded as a step that reads the
  generator's state when it replays.
* ``constant(a)``, ``uninit(a)``: an array made from Python values and sizes (a replay may
  keep it), or allocated for a kernel to write. Eager code reaches these through
  ``numgrad._arrays`` (``constant``, ``sizes``, ``new``, ``empty``, ``full``, ...), the
  one place host arrays are made.
* ``host_read(what)``: Python reads tensor values (``item()``, ``bool()``, printing, ...).
* ``unreplayable(why)``: anything else a replay cannot repeat (seeding a generator, hooks).

The attached tape has the methods these call (``record``, ``record_draw``,
``mark_constant``, ``mark_uninit``, ``unreplayable``), and ``refs(base)`` and
``ran_backward`` for the engine; a CUDA trace hooks numgrad's device launches itself.
"""

TAPE = None  # the attached tracer's tape while a trace runs, else None


def attach(tape):
    """Make ``tape`` (None: no trace) the one eager code reports to."""
    global TAPE
    TAPE = tape


def record(fn, *args):
    """``fn(*args)``, recorded as one step while a trace runs (``fn`` may have no effect
    other than on its array arguments and result)."""
    tape = TAPE
    if tape is None:
        return fn(*args)
    return tape.record(fn, args)


def record_draw(fn, generator, *args):
    """``fn(generator, *args)``: random draws that advance ``generator``."""
    tape = TAPE
    if tape is None:
        return fn(generator, *args)
    return tape.record_draw(fn, generator, args)


def constant(a):
    """Register ``a`` (made from Python values and sizes only) as a constant of the trace;
    returns ``a``."""
    tape = TAPE
    if tape is not None:
        tape.mark_constant(a)
    return a


def uninit(a):
    """Register ``a`` (just allocated for a kernel to write) as memory whose content means
    nothing; returns ``a``."""
    tape = TAPE
    if tape is not None:
        tape.mark_uninit(a)
    return a


def host_read(what):
    """Python is reading tensor values (``what``, as "item()"): a trace cannot replay it."""
    tape = TAPE
    if tape is not None:
        tape.unreplayable(f"{what} reads a tensor's values in Python")


def unreplayable(why):
    """Something a replay cannot repeat happened (``why``, as "seeding a generator")."""
    tape = TAPE
    if tape is not None:
        tape.unreplayable(why)
