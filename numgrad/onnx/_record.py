"""Recording the ops one forward run calls, for the exporter.

While a ``Recorder`` is active it is a client of ``numgrad._intercept``, whose wrappers over
numgrad's op entry points (``numgrad.nn.functional``, the declared ops under ``numgrad.*``
and as Tensor methods, the Tensor operators, the recurrent layers' ``forward``) note each
outermost call with its arguments and result; the calls an op makes inside itself are not
noted. Leaving the recorder puts the original functions back. The run itself happens inside
``numgrad.compile``'s kernel tape (``numgrad._compile.tape``), whose notes of Python reading
tensor values (``item()``, ``bool()``, ...) tell where a trace may not hold for other inputs.
"""

import functools

from numgrad import _intercept


class Call:
    __slots__ = ("name", "fn", "args", "kwargs", "result", "swapped")

    def __init__(self, name, fn, args, kwargs, result, swapped):
        self.name, self.fn, self.args, self.kwargs = name, fn, args, kwargs
        self.result, self.swapped = result, swapped


class Recorder:
    """A context manager: ``calls`` lists the ops the forward called, in order (on the thread
    that entered it)."""

    def __init__(self, model=None, tape=None):
        self.model = model
        self.tape = tape  # host reads inside a recorded op are its own business: dropped
        self.calls = []
        self.depth = 0
        from numgrad.nn import Module
        self._client = _intercept.Client(
            self._wrap, models=(model,) if isinstance(model, Module) else ())

    def _wrap(self, site, fn):
        rec = self
        name, swapped, original = site.name, site.swapped, site.fn()

        @functools.wraps(fn)
        def recorded(*args, **kwargs):
            if rec.depth:
                return fn(*args, **kwargs)
            tape = rec.tape
            noted = len(tape.breaks) if tape is not None else 0
            rec.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                rec.depth -= 1
                if tape is not None:
                    del tape.breaks[noted:]
            args = tuple(list(a) if isinstance(a, list) else a for a in args)  # (a copy)
            rec.calls.append(Call(name, original, args, kwargs, out, swapped))
            return out

        return recorded

    def __enter__(self):
        self._client.enter()
        return self

    def __exit__(self, *exc):
        self._client.leave()
        return False
