"""Random numbers from PyTorch's CPU generator algorithm (MT19937, same seeding, same use of
the stream), so ``manual_seed(s); rand/randn/randint/randperm`` give PyTorch's numbers
(``randn`` of float32 too: PyTorch's x86 builds' float32 Box-Muller is replayed bit for bit).
Uniform and normal fills draw and transform in one pass (no array of raw draws).

A generator's state is PyTorch's too (``numgrad._rng_state``): ``get_state`` gives the same
5056 bytes as PyTorch's, the cached second normal of a Box-Muller pair included, and
``set_state`` checks a state in full before any kernel reads it. ``Generator()`` starts from
PyTorch's default seed; the default generator from a random one."""

import math
import os
import threading

import numpy as np

from numgrad import _arrays, _device, _hook, _rng_state
from numgrad.kernels import LazyKernels

RNG = LazyKernels("random")


# PyTorch seeds a new ``Generator()`` with this number (``default_rng_seed_val``); its default
# generator starts from a random seed
DEFAULT_SEED = 67280421310721
_CUDA_GENERATOR = (
    "Cannot get CUDA generator without ATen_cuda library. PyTorch splits its backend into two "
    "shared libraries: a CPU library and a CUDA library; this error has occurred because you "
    "are trying to use some CUDA functionality, but the CUDA library has not been loaded by "
    "the dynamic linker for some reason.  The CUDA library MUST be loaded, EVEN IF you don't "
    "directly use any symbols from the CUDA library! One common culprit is a lack of "
    "-Wl,--no-as-needed in your link arguments; many dynamic linkers will delete dynamic "
    "library dependencies if you don't depend on any of their symbols.  You can check if this "
    "has occurred by using ldd on your binary to see if there is a dependency on *_cuda.so "
    "library.")


def _generator_device(device):
    """``Generator(device=...)``: the CPU, or the GPU when there is one (PyTorch's errors)."""
    if device is None:
        return _device.CPU
    if isinstance(device, str) and device.partition(":")[0] == "meta":
        raise RuntimeError("META device type not an accelerator.")
    if isinstance(device, int) and not isinstance(device, bool):
        if not _device.cuda_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return _device.get(device)
    d = device if isinstance(device, _device.device) else _device.device(device)
    if d.type == "cuda" and not _device.cuda_available():
        raise RuntimeError(_CUDA_GENERATOR)
    return _device.get(d)


def _seed_arg(seed):
    """A seed as PyTorch's ``Generator.manual_seed`` takes it: an int in [-2**63, 2**64),
    negative ones wrapped to 64 bits."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {_rng_state._type_name(seed)}")
    seed = int(seed)
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return seed & ((1 << 64) - 1)


class Generator:
    """A random number generator with its own MT19937 state, kept as PyTorch keeps it (the
    engine, the initial seed and the cached second normal of a pair), so
    ``get_state``/``set_state`` round-trip every draw and exchange states with PyTorch."""

    def __init__(self, device="cpu"):
        self.device = _generator_device(device)
        self._state = None  # uint32[626]: the words, next, left (seeded on first use)
        self._seed = None
        self._next_normal = None  # PyTorch's next_double_normal_sample
        self._next_float_normal = None  # PyTorch's next_float_normal_sample (kept, unused)
        self._first_seed = DEFAULT_SEED

    def __repr__(self):
        return f"<torch._C.Generator object at {id(self):#x}>"  # as PyTorch's prints

    def _ensure(self, draw=True):
        """The engine's state, seeded on first use; every draw reads it through here."""
        if draw and _FORBIDDEN:
            _check_draw()
        if self._state is None:
            self._seed_engine(self._first_seed if self._first_seed is not None
                              else int.from_bytes(os.urandom(8), "little"))
        return self._state

    def _seed_engine(self, seed):
        state = np.zeros(626, np.uint32)
        RNG.seed(state, seed & 0xFFFFFFFF)
        self._state = state
        self._seed = seed
        self._next_normal = None
        self._next_float_normal = None

    def manual_seed(self, seed):
        seed = _seed_arg(seed)
        _hook.unreplayable("seeding a generator")
        self._seed_engine(seed)
        return self

    def seed(self):
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        self._ensure(draw=False)
        return self._seed

    def get_state(self):
        from numgrad.tensor import _wrap
        st = self._ensure(draw=False)
        return _wrap(_rng_state.pack(st, self._seed, self._next_normal,
                                     self._next_float_normal))

    def set_state(self, new_state):
        """Load a state from ``get_state`` (numgrad's or PyTorch's): checked in full first,
        so a short, mistyped or invalid state raises PyTorch's error and changes nothing."""
        words, seed, normal, float_normal = _rng_state.unpack(new_state)
        _hook.unreplayable("setting a generator's state")
        self._state = words
        self._seed = seed
        self._next_normal = normal
        self._next_float_normal = float_normal
        return self

    # draws ------------------------------------------------------------------------------
    def raw(self, n):
        """``n`` raw 32-bit draws. A compiled trace records the draw as a step that reads this
        generator's state when it replays, so a replay draws what eager would."""
        if _hook.TAPE is None:
            return _draw(self, n)
        return _hook.record_draw(_draw, self, n)

    def _snapshot(self):
        """Everything a draw reads (compile's verification restores it)."""
        return (None if self._state is None else self._state.copy(), self._seed,
                self._next_normal, self._next_float_normal)

    def _restore(self, snap):
        state, self._seed, self._next_normal, self._next_float_normal = snap
        self._state = None if state is None else state.copy()

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                               f"from={low:g} > to={high:g}")
        return _hook.record_draw(_fill_uniform, self, shape, dtype, low, high)

    def fill(self, out, kind, a, b):
        """Draw into ``out`` itself (a C-contiguous, writable float32/float64 host array; 16
        values or more for ``kind`` "normal"), when no compiled trace is recording: the
        values ``uniform(out.shape, out.dtype, a, b)`` or ``normal(...)`` would return, with
        no array in between. Returns whether it did (else the caller draws and copies)."""
        if _hook.TAPE is not None or out.__class__ is not np.ndarray or \
                out.dtype not in (np.float32, np.float64) or not out.flags.c_contiguous or \
                not out.flags.writeable or (kind == "normal" and out.size < 16):
            return False
        if kind == "uniform":
            if a > b:
                raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                                   f"from={a:g} > to={b:g}")
            _fill_uniform(self, out.shape, out.dtype, a, b, out)
        else:
            if not b >= 0.0:
                raise RuntimeError(f"normal expects std >= 0.0, but found std {b:g}")
            _fill_normal(self, out.shape, out.dtype, a, b, out)
        return True

    def normal(self, shape, dtype, mean=0.0, std=1.0):
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        if np.dtype(dtype) in (np.float32, np.float64) and math.prod(
                (shape,) if isinstance(shape, (int, np.integer)) else shape) >= 16:
            return _hook.record_draw(_fill_normal, self, shape, dtype, mean, std)
        out = _arrays.new(shape, dtype)
        n = out.size
        flat = out.reshape(-1)
        if n >= 16:
            flat = self.uniform(n, dtype)
            out = flat.reshape(shape)
            for i in range(0, n - 15, 16):
                RNG.normal16(flat[i:i + 16], mean, std)
            if n % 16:
                tail = self.uniform(16, dtype)
                RNG.normal16(tail, mean, std)
                _arrays.host_step(_put, flat[n - 16:], tail)
        elif n:
            flat[:] = self.normal_serial(n, dtype, mean, std)
        return out

    def normal_serial(self, n, dtype, mean=0.0, std=1.0):
        """``n`` normals as PyTorch's serial kernel draws them (fewer than 16 values, or a
        tensor that is not contiguous): Box-Muller pairs of float64 uniforms, each pair's
        second value kept in the generator (and in its state) for the next draw."""
        # the pairs' second values are kept in Python, where a replay cannot see them
        _hook.unreplayable("normal draws of fewer than 16 values")
        z = _arrays.new(n, np.float64)
        first = 0
        if n and self._next_normal is not None:
            z[0] = self._next_normal
            self._next_normal = None
            first = 1
        pairs = (n - first + 1) // 2
        if pairs:
            zs = _arrays.new(2 * pairs, np.float64)
            RNG.normal_pairs(self.uniform(2 * pairs, np.float64), zs)
            z[first:] = zs[:n - first]
            if (n - first) % 2:
                self._next_normal = float(zs[-1])
        out = _arrays.new(n, dtype)
        if n:
            RNG.scale_shift(z, out, float(mean), float(std))
        return out

    def randint(self, low, high, shape, dtype, wide=None):
        """``low + r % (high - low)``, r of 64 bits when ``wide`` (by default where the range
        is 2**28 or more, as PyTorch's ``random_(from, to)``), else of 32 bits."""
        out = _arrays.new(shape, dtype)
        span = high - low
        if span <= 0:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        if out.size:
            if wide or (wide is None and span >= 1 << 28):
                raw = _arrays.host_step(_wide, self.raw(2 * out.size))
            else:
                raw = self.raw(out.size)
            tmp = _arrays.new(out.size, np.int64)
            # the range as uint64, 0 for the whole 64-bit range (``random_(-2**63, None)``)
            RNG.randint(raw, tmp, np.int64(low), np.uint64(span & ((1 << 64) - 1)))
            _arrays.host_step(_put, out.reshape(-1), tmp)
        return out

    def randperm(self, n):
        out = _arrays.new(n, np.int64)
        if n:
            RNG.randperm(self.raw(n - 1), out)
        return out

    def bernoulli(self, shape, p, dtype):
        if not 0.0 <= p <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        out = _arrays.new(shape, dtype)
        if out.size:
            RNG.bernoulli(self.raw(2 * out.size), out.reshape(-1), p)
        return out


_FORBIDDEN = []  # (thread id, message): callers under which a draw raises (vmap's 'error')


def _check_draw():
    me = threading.get_ident()
    for thread, message in _FORBIDDEN:
        if thread == me:
            raise RuntimeError(message)


class forbid_draws:
    """Inside ``with``, every random draw on this thread (all read ``Generator._ensure``)
    raises ``RuntimeError(message)``; other threads draw as usual."""

    def __init__(self, message):
        self.entry = (threading.get_ident(), message)

    def __enter__(self):
        _FORBIDDEN.append(self.entry)
        return self

    def __exit__(self, *exc):
        _FORBIDDEN.remove(self.entry)
        return False


def _fill_uniform(gen, shape, dtype, low, high, out=None):
    """``uniform32``/``uniform64`` of the next draws, drawn and transformed in one pass (into
    ``out`` when given)."""
    out = _arrays.new(shape, dtype) if out is None else out
    if out.size:
        (RNG.fill_uniform64 if out.dtype == np.float64 else RNG.fill_uniform32)(
            gen._ensure(), out.reshape(-1), low, high)
    return out


def _fill_normal(gen, shape, dtype, mean, std, out=None):
    """16 or more float32/float64 normals as PyTorch's vectorized fill draws them, in one
    pass (float32: its float32 Box-Muller, bit for bit; into ``out`` when given)."""
    out = _arrays.new(shape, dtype) if out is None else out
    (RNG.fill_normal32 if out.dtype == np.float32 else RNG.fill_normal64)(
        gen._ensure(), out.reshape(-1), mean, std)
    return out


def _draw(gen, n):
    out = _arrays.new(n, np.uint32)
    if n:
        RNG.next_u32(gen._ensure(), out)
    return out


def _put(dst, src):
    """``dst[...] = src`` (NumPy's cast): a copy a compiled trace replays."""
    dst[...] = src


_put.pure = True


def _wide(raw):
    """Pairs of 32-bit draws as 64-bit numbers (high word first)."""
    raw = raw.astype(np.uint64)
    return (raw[0::2] << np.uint64(32)) | raw[1::2]


_wide.pure = True
default_generator = Generator()
default_generator._first_seed = None  # a random seed on first use, as PyTorch's


def manual_seed(seed):
    """Seed the default generator; returns it, as PyTorch does (``int(seed)`` first)."""
    return default_generator.manual_seed(int(seed))


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)
