"""The globals a user allows ``numgrad.load(weights_only=True)`` to call or build
(``numgrad.serialization.add_safe_globals``/``safe_globals``), as PyTorch keeps them."""

_marked = set()

# Never allowed, whatever the user adds (PyTorch's block list).
BLOCKED_MODULES = ("sys", "os", "posix", "nt")


def add_safe_globals(safe_globals):
    """Allow each function or class (or ``(obj, "module.qualname")`` pair) in
    ``safe_globals`` in ``weights_only`` loads: the pickle may call it and set the state of
    what it makes."""
    global _marked
    _marked = _marked.union(set(safe_globals))


def get_safe_globals():
    """The globals ``add_safe_globals`` added, as a list."""
    return list(_marked)


def clear_safe_globals():
    """Forget every global ``add_safe_globals`` added."""
    global _marked
    _marked = set()


def _remove(safe_globals):
    global _marked
    _marked = _marked - set(safe_globals)


class safe_globals:  # noqa: N801  (PyTorch's name)
    """Context manager: ``safe_globals`` are allowed inside the ``with`` block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        _remove(self.safe_globals)


def user_allowed():
    """``{"module.qualname": obj}`` of the allowed globals, with PyTorch's errors for bad
    pairs."""
    out = {}
    for f in _marked:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(f[1])}")
            out[f[1]] = f[0]
        else:
            out[f"{f.__module__}.{f.__qualname__}"] = f
    return out
