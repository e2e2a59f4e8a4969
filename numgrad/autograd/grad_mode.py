"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``."""

import functools
import inspect
import threading


class _State(threading.local):
    enabled = True  # class attributes are each new thread's defaults
    inference = False


state = _State()


def is_grad_enabled():
    return state.enabled


ON_DISABLE = []  # called when a block turns grad mode off (forward AD starts watching ops)


def _turned_off():
    for hook in list(ON_DISABLE):
        hook()


class _Mode:
    """A context manager that also decorates functions (and generator functions)."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        mode = self

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with mode.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with mode.clone():
                            gen.close()
                        raise
                    with mode.clone():
                        try:
                            response = gen.send(request)
                        except StopIteration as e:
                            return e.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with mode.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_Mode):
    """Disable graph recording inside the block (or the decorated function)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False
        if ON_DISABLE:
            _turned_off()

    def __exit__(self, *exc):
        state.enabled = self.prev


class enable_grad(_Mode):
    """Enable graph recording inside the block (or the decorated function)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev


class set_grad_enabled(_Mode):
    """Set grad mode now; used as a context manager it restores the previous mode on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self.prev = state.enabled
        self.mode = mode
        state.enabled = self.mode
        if ON_DISABLE and not mode:
            _turned_off()

    def __call__(self, fn):
        state.enabled = self.prev
        return super().__call__(fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside are inference tensors (no version counter; they
    cannot be saved for backward or updated in place outside inference mode)."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.prev = (True, False)

    def __call__(self, fn):
        if isinstance(fn, bool):  # @inference_mode(False) style is handled by __init__
            return inference_mode(fn)
        return super().__call__(fn)

    def __enter__(self):
        from numgrad.tensor import _INFERENCE_THREADS
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled = False
        state.inference = self.mode
        if self.mode != self.prev[1]:
            _INFERENCE_THREADS[0] += 1 if self.mode else -1

    def __exit__(self, *exc):
        from numgrad.tensor import _INFERENCE_THREADS
        if self.mode != self.prev[1]:
            _INFERENCE_THREADS[0] -= 1 if self.mode else -1
        state.enabled, state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)


def is_inference_mode_enabled():
    return state.inference
