"""Lazy ``@njit`` with a versioned, writable on-disk cache.

* Kernels compile on first call (no signatures given), one specialization per dtype/layout.
* Compiled code is cached under ``$NUMGRAD_CACHE_DIR`` or ``<user cache>/numgrad/<version>-<hash>``
  where the hash covers every kernel source file, so editing any helper invalidates the
  cache (Numba alone only watches the file of the function it compiles).
* When no cache directory is writable (read-only installs), kernels compile without caching.
* ``specialize(template, name, f=scalar_fn)`` makes a module-level-equivalent copy of a loop
  template with ``f`` bound to a scalar function; each copy has its own qualified name so it
  caches separately (Numba cannot cache closures reliably).
"""

import hashlib
import os
import sys
import tempfile
import types

import numba
from numba.core import caching

from numgrad._version import __version__

KERNEL_DIR = os.path.dirname(os.path.abspath(__file__))


def _source_hash():
    h = hashlib.sha256(f"{__version__}|{numba.__version__}|{sys.version}".encode())
    for root, _, files in sorted(os.walk(KERNEL_DIR)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as fh:
                    h.update(name.encode())
                    h.update(fh.read())
    return h.hexdigest()[:16]


_SOURCE_HASH = _source_hash()


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _find_cache_dir():
    """The first writable candidate, or None (then kernels compile without a disk cache)."""
    env = os.environ.get("NUMGRAD_CACHE_DIR")
    if env is not None:
        if env.strip() in ("", "0", "off", "none"):
            return None
        candidates = [env]
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        user = os.getuid() if hasattr(os, "getuid") else "user"
        candidates = [os.path.join(base, "numgrad"),
                      os.path.join(tempfile.gettempdir(), f"numgrad-{user}")]
    for c in candidates:
        path = os.path.join(c, f"{__version__}-{_SOURCE_HASH}")
        if _writable(path):
            return path
    return None


class _NumgradCacheLocator(caching._CacheLocator):
    """Places the cache of numgrad's own kernels (and nothing else) in CACHE_DIR."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self):
        return CACHE_DIR

    def get_source_stamp(self):
        return _SOURCE_HASH

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if CACHE_DIR is None or not os.path.abspath(py_file).startswith(KERNEL_DIR):
            return None
        return cls(py_func, py_file)


def _install_locator():
    impl = getattr(caching, "CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):
        return False
    if _NumgradCacheLocator not in classes:
        classes.insert(0, _NumgradCacheLocator)
    return True


CACHE_DIR = _find_cache_dir()
CACHE = CACHE_DIR is not None and _install_locator()

# Division by zero gives inf/nan (NumPy's model) instead of raising inside kernels.
_DEFAULTS = {"cache": CACHE, "error_model": "numpy", "nogil": True}


def jit(fn=None, **options):
    """``numba.njit`` with numgrad's defaults; compiles lazily on first call."""
    opts = dict(_DEFAULTS, **options)
    if fn is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(fn)


def inline(fn):
    """A scalar helper inlined into the kernels that call it."""
    return numba.njit(inline="always", error_model="numpy")(fn)


def specialize(template, name, options=None, **bindings):
    """A jitted copy of ``template`` whose globals also hold ``bindings``.

    The copy has its own qualified name, so it caches apart from the template and from
    other copies (Numba's cache key does not include compile options such as ``parallel``).
    """
    g = dict(template.__globals__)
    g.update(bindings)
    fn = types.FunctionType(template.__code__, g, template.__name__, template.__defaults__)
    fn.__qualname__ = f"{template.__name__}__{name}"
    fn.__module__ = template.__module__
    return jit(fn, **(options or {}))


def serial_and_parallel(fn):
    """Two jitted variants of a loop nest with ``prange``: serial and multithreaded."""
    return jit(fn), specialize(fn, "parallel", {"parallel": True})
