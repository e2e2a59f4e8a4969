"""Lazy ``@njit`` with a versioned, private, self-checking on-disk cache.

* Kernels compile on first call (no signatures given), one specialization per dtype/layout.
* Compiled code is cached under ``$NUMGRAD_CACHE_DIR/<version>-<hash>`` or
  ``<user cache>/numgrad/<version>-<hash>`` where the hash covers every kernel source file, so
  editing any helper invalidates the cache (Numba alone only watches the file of the function
  it compiles). Under ``NUMBA_BOUNDSCHECK=1`` the folder name ends in ``-boundscheck``:
  Numba's cache key does not include that flag.
* Trust: loading a cache file unpickles it, so a cache folder is used only when it belongs to
  this user with mode 0700 (it is created so) and no folder on its path can be swapped by
  another user; files are written 0600. Otherwise (and on read-only installs) kernels compile
  in memory, with one ``CacheWarning``. There is no shared fallback such as /tmp.
* Robustness: each cache file carries the SHA-256 of its contents. A file that is truncated,
  altered or does not load is deleted with a ``CacheWarning`` and the kernel recompiles; a
  cache that cannot be written leaves kernels compiled in memory. Neither is ever an error.
* Prebuilt kernels (see ``numgrad._prebuild``): ``pip install`` compiles the common kernels
  into ``numgrad/_prebuilt/<version>-<hash>`` inside the installed package; a kernel that is
  not in the user's cache is looked up there (read only) before it compiles. Those files are
  trusted as the package's own code is: only when no folder above them, nor they, can be
  written by group or others, and the folder and files belong to this user or root.
  ``NUMGRAD_PREBUILT=0`` turns the lookup off.
* ``specialize(template, name, f=scalar_fn)`` makes a module-level-equivalent copy of a loop
  template with ``f`` bound to a scalar function; each copy has its own qualified name so it
  caches separately (Numba cannot cache closures reliably).
* Cold start (see ``numgrad._background``): a parallel kernel declared to compute bit for bit
  what a serial twin computes (``serial_twin``) runs that twin while it is not compiled yet
  (nor on disk), and a background process compiles it into the disk cache for the next run;
  the first kernel that misses the cache also starts precompiling the common kernels there.
"""

import hashlib
import importlib
import itertools
import os
import pickle
import shutil
import stat
import sys
import tempfile
import time
import types
import uuid
import warnings
import weakref

import numba
from numba.core import caching
from numba.core.dispatcher import Dispatcher
from numba.core.serialize import dumps

from numgrad._version import __version__

KERNEL_DIR = os.path.dirname(os.path.abspath(__file__))
_UID = os.getuid() if hasattr(os, "getuid") else None  # None: no POSIX owners/modes (Windows)


class CacheWarning(UserWarning):
    """The kernel disk cache is off, or one of its files was damaged and discarded."""


def _source_hash():
    import numpy

    h = hashlib.sha256(
        f"{__version__}|{numba.__version__}|{numpy.__version__}|{sys.version}".encode())
    for root, _, files in sorted(os.walk(KERNEL_DIR)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as fh:
                    h.update(name.encode())
                    h.update(fh.read())
    return h.hexdigest()[:16]


_SOURCE_HASH = _source_hash()


# --- where the cache lives, and whether it can be trusted ------------------------------------

def _cache_root():
    """The folder that holds the versioned cache folders; None when the user turned it off."""
    env = os.environ.get("NUMGRAD_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "0", "off", "none"):
            return None
        return os.path.abspath(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec says to ignore a relative path
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "numgrad")


def _version_dir_name():
    # Numba's cache key ignores NUMBA_BOUNDSCHECK: checked and unchecked code must not mix
    suffix = "-boundscheck" if numba.config.BOUNDSCHECK else ""
    return f"{__version__}-{_SOURCE_HASH}{suffix}"


def _lineage(path):
    """``path`` and every folder above it, outermost first."""
    chain = [path]
    while os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    return chain[::-1]


def _mkdir_private(path):
    if os.path.lexists(path):
        return
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:  # made meanwhile by another process: checked like any other
        return
    os.chmod(path, 0o700)  # a umask such as 0o277 would leave it unusable


def _dir_problem(path, private, system):
    """Why folder ``path`` cannot lead to trusted cache files, or None.

    No one else may write to it: they could rename what is inside and put their own folder in
    its place. A sticky ``system`` folder above the cache root, such as /tmp, is fine (others
    cannot rename what is not theirs), and its owner does not matter (a container may show
    root's folders as "nobody"). The cache root and what is below it must be this user's; the
    ``private`` folder that holds the files must also be closed to group and others.
    """
    st = os.stat(path)
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if not system and st.st_uid != _UID:
        return f"is owned by uid {st.st_uid}, not by this user (uid {_UID})"
    if private and mode & 0o077:
        return f"has mode {mode:o}, not 700 (group or others can access it)"
    if mode & 0o022 and not (system and mode & stat.S_ISVTX):
        return f"has mode {mode:o} (group or others can write to it)"
    return None


def _path_problem(path, root):
    """Create ``path`` and its missing parents (mode 0700), checking each folder from / down
    before anything is created in it; why ``path`` cannot be trusted, or None."""
    if _UID is None:  # Windows: the per-user profile's ACLs protect it
        os.makedirs(path, exist_ok=True)
        return None
    for d in _lineage(path):
        _mkdir_private(d)
        inside = d == root or d.startswith(root + os.sep)
        problem = _dir_problem(d, private=d == path, system=not inside)
        if problem:
            return f"{d} {problem}"
    return None


def _os_reason(exc):
    return f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)


def secure_dir(path, root=None):
    """Create the cache folder ``path`` (0700) under ``root`` (by default the root of
    ``CACHE_DIR``) and check the folders leading to it: why it cannot be trusted, or None."""
    try:
        return _path_problem(path, root or os.path.dirname(CACHE_DIR))
    except OSError as exc:
        return _os_reason(exc)


def _find_cache_dir():
    """(folder, None) for a trusted, writable cache folder, else (None, why not); (None, None)
    when the user turned the cache off."""
    root = _cache_root()
    if root is None:
        return None, None
    path = os.path.join(root, _version_dir_name())
    problem = secure_dir(path, root)
    if problem is None:
        try:
            tempfile.TemporaryFile(dir=path).close()  # read-only installs
        except OSError as exc:
            problem = _os_reason(exc)
    return (None, problem) if problem else (path, None)


def warn_cache_off(reason, which="kernel"):
    warnings.warn(f"numgrad: the {which} disk cache is off ({reason}); kernels compile in "
                  "memory in every process. Set NUMGRAD_CACHE_DIR to a folder that only you can "
                  "access (mode 700), or to 'off' to silence this.", CacheWarning, stacklevel=2)


# --- prebuilt kernels: compiled at install time, read only ------------------------------------

PREBUILT_ENV = "NUMGRAD_PREBUILT"
PACKAGE_DIR = os.path.dirname(KERNEL_DIR)
_OWNERS = (_UID, 0)  # who may own prebuilt files: this user or root (as the package's code)


def _installed_prebuilt_roots():
    """The prebuilt folders of installed distributions: a source checkout that shadows one
    (``python -m numgrad`` run from the checkout after ``pip install .``) uses its kernels
    when its own sources hash the same."""
    try:
        from importlib import metadata

        return [os.path.abspath(str(d.locate_file("numgrad/_prebuilt")))
                for d in metadata.distributions(name="numgrad")]
    except Exception:
        return []


def _prebuilt_roots():
    env = os.environ.get(PREBUILT_ENV, "").strip()
    if env.lower() in ("0", "off", "none", "no", "false"):
        return []
    if env and env.lower() not in ("1", "on", "yes", "true"):
        return [os.path.abspath(os.path.expanduser(env))]
    own = os.path.join(PACKAGE_DIR, "_prebuilt")
    if os.path.isdir(os.path.join(own, _version_dir_name())):
        return [own]
    return _installed_prebuilt_roots()


def prebuilt_problem(path):
    """Why the prebuilt folder ``path`` cannot be trusted, or None: it and the folder holding it
    must belong to this user or root, and no folder from / down to it may be writable by group
    or others (unless sticky, as /tmp): whoever could change it could change numgrad's code."""
    if _UID is None:  # Windows: the install's ACLs protect it
        return None
    try:
        for d in _lineage(path):
            st = os.stat(d)
            mode = stat.S_IMODE(st.st_mode)
            if not stat.S_ISDIR(st.st_mode):
                return f"{d} is not a directory"
            if mode & 0o022 and not mode & stat.S_ISVTX:
                return f"{d} has mode {mode:o} (group or others can write to it)"
            if d in (path, os.path.dirname(path)) and st.st_uid not in _OWNERS:
                return f"{d} is owned by uid {st.st_uid}"
    except OSError as exc:
        return _os_reason(exc)
    return None


def _find_prebuilt_dir():
    for root in _prebuilt_roots():
        path = os.path.join(root, _version_dir_name())
        if os.path.isdir(path) and prebuilt_problem(path) is None:
            return path
    return None


def read_prebuilt(path):
    """The unpickled contents of prebuilt file ``path``; None when it is missing, not a regular
    file of this user or root closed to writes by others, or damaged (with a warning: the
    kernel then compiles; the file, part of the installed package, is left alone)."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not (stat.S_ISREG(st.st_mode) and st.st_uid in _OWNERS
                    and not st.st_mode & 0o022) and _UID is not None:
                return None
            blob = fh.read()
    except OSError:
        return None
    try:
        return pickle.loads(_unseal(blob))
    except Exception as exc:
        warnings.warn(f"numgrad: ignored a damaged prebuilt kernel file {path} ({exc}); the "
                      "kernel is compiled", CacheWarning, stacklevel=2)
        return None


def host_key():
    """What Numba's cache keys say of this machine (target, CPU name and features)."""
    from numba.core.registry import cpu_target

    return cpu_target.target_context.codegen().magic_tuple()


# --- cache files: sealed, private, and discarded when damaged --------------------------------

# Each file is _MAGIC, the SHA-256 of the payload, then the payload (a pickle). The digest is
# not a signature: what makes the files trusted is that only this user can write to the
# folder, and a key for an HMAC would have to be stored there too. It catches accidental
# damage (a copy cut short, a full disk, a bad sector) before pickle or LLVM see the bytes:
# a flipped byte in machine code would otherwise load and crash or compute wrong results.
_MAGIC = b"numgrad kernel cache 1\n"
_HEAD = len(_MAGIC) + hashlib.sha256().digest_size


class _Damaged(Exception):
    pass


def seal(payload):
    """The bytes of a cache file holding ``payload``."""
    return _MAGIC + hashlib.sha256(payload).digest() + payload


def _unseal(blob):
    if not blob.startswith(_MAGIC):
        raise _Damaged("not a numgrad cache file")
    payload = blob[_HEAD:]
    if len(blob) < _HEAD or hashlib.sha256(payload).digest() != blob[len(_MAGIC):_HEAD]:
        raise _Damaged("checksum mismatch: truncated or altered")
    return payload


def _remove(path):
    """Delete a file (or a folder sitting where a file belongs); ignore what is gone."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def _discard(path, reason):
    _remove(path)
    warnings.warn(f"numgrad: discarded a damaged kernel cache file {path} ({reason}); the kernel "
                  "is recompiled", CacheWarning, stacklevel=2)


def _write_private(path, payload, sealed=True):
    """Replace ``path`` atomically with ``payload`` (sealed: with its checksum) that only this
    user can read."""
    tmp = f"{path}.tmp.{uuid.uuid4().hex[:16]}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # a umask can only remove bits; this also restores owner ones
        with os.fdopen(fd, "wb") as fh:
            fh.write(seal(payload) if sealed else payload)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _is_index(content):
    """(stamp, {key: data file name}), names bare ``.nbc`` files in the same folder."""
    if not (isinstance(content, tuple) and len(content) == 2 and isinstance(content[1], dict)):
        return False
    return all(isinstance(n, str) and n.endswith(".nbc") and os.path.basename(n) == n
               for n in content[1].values())


class _CheckedCacheFile:
    """Numba's index and data files for one function (``IndexDataCacheFile``'s names and
    interface), sealed and written 0600. Reading never raises: a missing file is a cache
    miss, a damaged one is deleted with a warning (then the caller compiles and saves again).
    Each data file also records its key, so a file left by a discarded index is never used for
    another signature."""

    def __init__(self, cache_path, filename_base, source_stamp, dump=dumps, prebuilt=None):
        self._dir = cache_path
        self._base = filename_base
        self._index_path = os.path.join(cache_path, f"{filename_base}.nbi")
        self._stamp = (numba.__version__, source_stamp)
        self._dump = dump
        self._prebuilt = prebuilt  # a read-only folder of kernels compiled at install time
        self._prebuilt_overloads = None
        self.loaded = None  # the data file of the last successful load
        self.loaded_prebuilt = False  # whether that file is a prebuilt one (never deleted)

    def flush(self):
        _write_private(self._index_path, self._dump((self._stamp, {})))

    def load(self, key):
        self.loaded, self.loaded_prebuilt = None, False
        name = self._load_index().get(key)
        if name is None:
            return self._load_prebuilt(key)
        path = os.path.join(self._dir, name)
        entry = self._read(path)
        if entry is None:
            return None
        if not (isinstance(entry, tuple) and len(entry) == 2):
            return _discard(path, "unexpected content")
        if entry[0] != key:  # left by a discarded index; save() overwrites it
            return None
        self.loaded = path
        return entry[1]

    def prebuilt_index(self):
        """{key: data file name} of the prebuilt folder (read once: it does not change)."""
        if self._prebuilt_overloads is None:
            content = None
            if self._prebuilt is not None:
                content = read_prebuilt(os.path.join(self._prebuilt, f"{self._base}.nbi"))
            ok = _is_index(content) and content[0] == self._stamp
            self._prebuilt_overloads = content[1] if ok else {}
        return self._prebuilt_overloads

    def _load_prebuilt(self, key):
        name = self.prebuilt_index().get(key)
        if name is None:
            return None
        path = os.path.join(self._prebuilt, name)
        entry = read_prebuilt(path)
        if not (isinstance(entry, tuple) and len(entry) == 2 and entry[0] == key):
            return None
        self.loaded, self.loaded_prebuilt = path, True
        return entry[1]

    def save(self, key, data):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            names = (f"{self._base}.{i}.nbc" for i in itertools.count(1))
            name = next(n for n in names if n not in taken)
            overloads[key] = name
            _write_private(self._index_path, self._dump((self._stamp, overloads)))
        _write_private(os.path.join(self._dir, name), self._dump((key, data)))

    def _load_index(self):
        content = self._read(self._index_path)
        if content is None:
            return {}
        if not _is_index(content):
            _discard(self._index_path, "unexpected content")
            return {}
        stamp, overloads = content
        return overloads if stamp == self._stamp else {}  # another Numba's: stale, not damaged

    @staticmethod
    def _read(path):
        """The unpickled contents of ``path``; None if it is missing or damaged (then deleted)."""
        try:
            with open(path, "rb") as fh:
                blob = fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:  # unreadable: permissions, a folder in its place, I/O error
            return _discard(path, exc.strerror or exc)
        try:
            return pickle.loads(_unseal(blob))
        except _Damaged as exc:
            return _discard(path, exc)
        except Exception as exc:  # whatever a bad pickle raises, the file is unusable
            return _discard(path, f"{type(exc).__name__}: {exc}")


_SAVE_FAILED = []  # warn once per process: a full disk would otherwise warn for every kernel


class _GuardedCache:
    """Mixed into a Numba disk cache (``FunctionCache``, or numba-cuda's ``CUDACache``) whose
    files become ``_CheckedCacheFile`` ones, and whose failures never reach the caller: an
    entry that does not load is discarded and the kernel recompiles; a save that fails leaves
    the kernel compiled in memory."""

    def load_overload(self, sig, target_context):
        try:
            cres = super().load_overload(sig, target_context)
            if cres is None and type(self._impl.locator) is _NumgradCacheLocator:
                _cold_miss()
            return cres
        except Exception as exc:  # verified bytes that still do not rebuild
            reason = f"{type(exc).__name__}: {exc}"
            if self._cache_file.loaded is None or self._cache_file.loaded_prebuilt:
                # failed before reading a file, or a prebuilt file (the package's, left alone)
                warnings.warn(f"numgrad: could not load a kernel from the disk cache ({reason});"
                              " it is recompiled", CacheWarning, stacklevel=2)
            else:
                _discard(self._cache_file.loaded, reason)
            return None

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except Exception as exc:
            if not _SAVE_FAILED:
                _SAVE_FAILED.append(exc)
                warnings.warn(f"numgrad: could not write the kernel disk cache ({exc}); "
                              "kernels stay compiled in memory", CacheWarning, stacklevel=2)


_GUARDED_CLASSES = {}


def guard_cache(dispatcher):
    """``dispatcher`` with its disk cache guarded when that cache is numgrad's (not for
    functions outside numgrad's kernels, nor under ``NUMBA_DISABLE_JIT``).

    The cache object is re-classed in place, not wrapped: numba-cuda tests
    ``isinstance(dispatcher._cache, CUDACache)``."""
    cache = getattr(dispatcher, "_cache", None)
    impl = getattr(cache, "_impl", None)
    if isinstance(cache, _GuardedCache) or not isinstance(
            getattr(impl, "locator", None), _NumgradCacheLocator):
        return dispatcher
    cls = type(cache)
    if cls not in _GUARDED_CLASSES:
        _GUARDED_CLASSES[cls] = type(f"Guarded{cls.__name__}", (_GuardedCache, cls), {})
    dump = getattr(cache._cache_file, "_dump", dumps)  # the target's own serializer
    prebuilt = PREBUILT_DIR if cache.cache_path == CACHE_DIR else None
    cache._cache_file = _CheckedCacheFile(cache.cache_path, impl.filename_base,
                                          impl.locator.get_source_stamp(), dump, prebuilt)
    cache.__class__ = _GUARDED_CLASSES[cls]
    return dispatcher


GENERATED_PREFIX = "generated_"


class _NumgradCacheLocator(caching._CacheLocator):
    """Places the cache of numgrad's own kernels (and nothing else) in CACHE_DIR."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self):
        return CACHE_DIR

    def ensure_cache_path(self):
        # Numba's own would recreate a deleted folder with the umask's mode, unchecked
        problem = secure_dir(self.get_cache_path())
        if problem:
            raise PermissionError(problem)

    def get_source_stamp(self):
        return _SOURCE_HASH

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if CACHE_DIR is None:
            return None
        path = os.path.abspath(py_file)
        generated = os.path.dirname(path) == CACHE_DIR and os.path.basename(path).startswith(
            GENERATED_PREFIX)  # numgrad.compile's interpreters, written by numgrad here
        if not (generated or path.startswith(KERNEL_DIR + os.sep)):
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


CACHE_DIR, _OFF_REASON = _find_cache_dir()
CACHE = CACHE_DIR is not None and _install_locator()
PREBUILT_DIR = _find_prebuilt_dir() if CACHE else None
if _OFF_REASON:  # this module loads with the first kernel, never at ``import numgrad``
    warn_cache_off(_OFF_REASON)

# Division by zero gives inf/nan (NumPy's model) instead of raising inside kernels.
_DEFAULTS = {"cache": CACHE, "error_model": "numpy", "nogil": True}


def _is_16_bit(arg):
    dt = getattr(arg, "dtype", None)
    return dt is not None and getattr(dt, "itemsize", 0) == 2 and dt.kind in "fV"


HALF_ERROR = ("numgrad stores float16 and bfloat16 tensors but does not compute in them yet: "
              "convert with .float() first (and back with .half() or .bfloat16())")


def _refuse_16_bit(dispatcher):
    """``dispatcher`` raising one clear error when it is asked to compile for float16 or
    bfloat16 data (storage-only dtypes: Numba has no CPU half-precision types, and would
    raise its own ``NotImplementedError``/``TypingError``). Only the compile path is wrapped,
    so calls for types already compiled cost nothing more."""
    compile_for_args = dispatcher._compile_for_args

    def compiling(*args, **kwargs):
        try:
            return compile_for_args(*args, **kwargs)
        except Exception:
            if any(_is_16_bit(a) for a in args):
                raise RuntimeError(HALF_ERROR) from None
            raise
    dispatcher._compile_for_args = compiling
    return dispatcher


def jit(fn=None, **options):
    """``numba.njit`` with numgrad's defaults; compiles lazily on first call."""
    opts = dict(_DEFAULTS, **options)
    if fn is None:
        return lambda f: jit(f, **options)
    return _register(_refuse_16_bit(guard_cache(numba.njit(**opts)(fn))), fn)


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
    options = dict(options or {})
    dispatcher = jit(fn, **options)
    # a parallel copy's serial twin: the copy of the same template, bindings and options
    # without ``parallel`` (its prange loops then run as plain loops, in the same order)
    parallel = options.pop("parallel", False)
    key = (template.__code__, tuple(sorted((k, id(v)) for k, v in bindings.items())),
           tuple(sorted((k, _frozen(v)) for k, v in options.items())))
    if parallel and key in _SERIAL_COPIES:
        serial_twin(dispatcher, _SERIAL_COPIES[key])
    elif not parallel:
        _SERIAL_COPIES[key] = dispatcher
    return dispatcher


_SERIAL_COPIES = weakref.WeakValueDictionary()


def _frozen(value):
    """A hashable stand-in for a compile option's value (fastmath takes a set)."""
    if isinstance(value, (set, frozenset, list, tuple)):
        return tuple(sorted(map(repr, value)))
    return repr(value) if isinstance(value, dict) else value


def serial_and_parallel(fn):
    """Two jitted variants of a loop nest with ``prange``: serial and multithreaded."""
    serial = jit(fn)
    return serial, serial_twin(specialize(fn, "parallel", {"parallel": True}), serial)


# --- cold start: kernels by name, serial twins, background compiles ---------------------------

_REGISTRY = weakref.WeakValueDictionary()  # (module, qualname) -> dispatcher


def _register(dispatcher, fn):
    if isinstance(dispatcher, Dispatcher):
        _REGISTRY[(fn.__module__, fn.__qualname__)] = dispatcher
    return dispatcher


def kernel_name(dispatcher):
    """(module, qualified name): how another process finds ``dispatcher`` (``find``)."""
    fn = dispatcher.py_func
    return fn.__module__, fn.__qualname__


def find(module, qualname):
    """The kernel ``kernel_name`` named, importing its module; None if there is none (a kernel
    made at run time, or one renamed since)."""
    if (module, qualname) not in _REGISTRY:
        try:
            importlib.import_module(module)
        except ImportError:
            return None
    return _REGISTRY.get((module, qualname))


def is_cached(dispatcher, sig):
    """Whether ``dispatcher`` has machine code for argument types ``sig`` in memory or in the
    disk cache (the index says so; loading it is left to the dispatcher)."""
    if tuple(sig) in dispatcher.overloads:
        return True
    cache = dispatcher._cache
    if not isinstance(cache, _GuardedCache):
        return False
    try:
        key = cache._index_key(tuple(sig), dispatcher.targetctx.codegen())
        files = cache._cache_file
        return key in files._load_index() or key in files.prebuilt_index()
    except Exception:
        return False


def serial_twin(parallel, serial):
    """Declare that jitted ``serial`` computes bit for bit what the multithreaded
    ``parallel`` computes (each ``prange`` iteration is independent and the options are the
    same but ``parallel``, so only the threads differ); returns ``parallel``.

    While ``parallel`` is neither compiled nor in the disk cache for a call's argument types,
    the call runs ``serial`` (compiled or loaded: several times cheaper than a parallel
    compile) and a background process compiles ``parallel`` into the disk cache; calls look
    there again every ``RECHECK_S`` and switch to ``parallel`` once it is (the next process
    finds it at once). Without that process (the cache is off, the user turned it off, or it
    failed), ``parallel`` compiles in this process as before. Kernels with fastmath flags are
    left alone: a reassociating loop may vectorize differently in the two."""
    compile_for_args = getattr(parallel, "_compile_for_args", None)
    opts = getattr(parallel, "targetoptions", {})
    if compile_for_args is None or opts.get("fastmath") or getattr(parallel, "_numgrad_serial",
                                                                     None) is not None:
        return parallel
    parallel._numgrad_serial = serial
    borrowed = {}  # argument types -> [serial's entry point, when to look at the disk again]

    def compiling(*args, **kwargs):
        if kwargs:
            return compile_for_args(*args, **kwargs)
        try:
            sig = tuple(parallel.typeof_pyval(a) for a in args)
        except Exception:
            return compile_for_args(*args)
        now = time.monotonic()
        entry = borrowed.get(sig)
        if entry is not None:
            if now < entry[1]:
                return entry[0]
            entry[1] = now + RECHECK_S
            if not is_cached(parallel, sig):
                return entry[0]
            del borrowed[sig]  # the background process has compiled it: load it
        elif not is_cached(parallel, sig):
            from numgrad import _background
            if _background.defer(parallel, sig):
                try:
                    borrowed[sig] = [serial.compile(sig), now + RECHECK_S]
                except Exception:  # let the parallel compile report it
                    return compile_for_args(*args)
                return borrowed[sig][0]
        return compile_for_args(*args)
    parallel._compile_for_args = compiling
    return parallel


RECHECK_S = 0.25  # how often a call that runs a serial twin looks for the parallel kernel


_MISSED = []


def _cold_miss():
    """A kernel of numgrad's missed the disk cache: the first time, ask for the common kernels
    to be compiled in the background (``numgrad._background``)."""
    if not _MISSED:
        _MISSED.append(True)
        from numgrad import _background
        _background.precompile_common()
