"""Random numbers from PyTorch's CPU generator algorithm (MT19937, same seeding, same use of
the stream), so ``manual_seed(s); rand/randn/randint/randperm`` give PyTorch's numbers
(``randn`` of float32 may differ in the last bit where PyTorch uses vectorized math)."""

import os

import numpy as np

from numgrad import _arrays
from numgrad._compile import tape as _tape
from numgrad.kernels import LazyKernels

RNG = LazyKernels("random")


class Generator:
    """A random number generator with its own MT19937 state."""

    def __init__(self, device="cpu"):
        self._state = None
        self._seed = None
        self._next_normal = None
        self.device = device

    def _ensure(self):
        if self._state is None:
            self.manual_seed(int.from_bytes(os.urandom(8), "little"))
        return self._state

    def manual_seed(self, seed):
        if _tape.TAPE is not None:
            _tape.TAPE.unreplayable("seeding a generator")
        seed = int(seed)
        if seed < 0:
            seed &= (1 << 64) - 1
        state = np.zeros(625, np.uint32)
        RNG.seed(state, seed & 0xFFFFFFFF)
        self._state = state
        self._seed = seed
        self._next_normal = None
        return self

    def seed(self):
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        self._ensure()
        return self._seed

    def get_state(self):
        from numgrad.tensor import _wrap
        st = self._ensure()
        return _wrap(st.view(np.uint8).copy())

    def set_state(self, new_state):
        if _tape.TAPE is not None:
            _tape.TAPE.unreplayable("setting a generator's state")
        self._state = np.ascontiguousarray(new_state._data).view(np.uint32).copy()
        self._next_normal = None

    # draws ------------------------------------------------------------------------------
    def raw(self, n):
        """``n`` raw 32-bit draws. A compiled trace records the draw as a step that reads this
        generator's state when it replays, so a replay draws what eager would."""
        if _tape.TAPE is None:
            return _draw(self, n)
        return _tape.record_draw(_draw, self, n)

    def _snapshot(self):
        """Everything a draw reads (compile's verification restores it)."""
        return (None if self._state is None else self._state.copy(), self._seed,
                self._next_normal)

    def _restore(self, snap):
        state, self._seed, self._next_normal = snap
        self._state = None if state is None else state.copy()

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                               f"from={low:g} > to={high:g}")
        out = _arrays.new(shape, dtype)
        n = out.size
        wide = out.dtype == np.float64
        raw = self.raw(n * (2 if wide else 1))
        if n:
            (RNG.uniform64 if wide else RNG.uniform32)(raw, out.reshape(-1), low, high)
        return out

    def normal(self, shape, dtype, mean=0.0, std=1.0):
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
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
                _tape.record(_put, flat[n - 16:], tail)
        elif n:
            if _tape.TAPE is not None:  # the pairs' second values are kept in Python
                _tape.TAPE.unreplayable("normal draws of fewer than 16 values")
            # scalar path: pairs of float64 uniforms, the sine half kept for the next value
            vals = []
            while len(vals) < n:
                if self._next_normal is not None:
                    vals.append(self._next_normal)
                    self._next_normal = None
                    continue
                u = self.uniform(2, np.float64)
                pair = _arrays.new(2, np.float64)
                RNG.normal_small(u, pair, 0.0, 1.0)
                vals.append(pair[0])
                self._next_normal = pair[1]
            flat[:] = np.asarray(vals) * std + mean
        return out

    def randint(self, low, high, shape, dtype):
        out = _arrays.new(shape, dtype)
        span = high - low
        if span <= 0:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        if out.size:
            if span >= 1 << 32:
                raw = _tape.record(_wide, self.raw(2 * out.size))
            else:
                raw = self.raw(out.size)
            tmp = _arrays.new(out.size, np.int64)
            RNG.randint(raw, tmp, low, span)
            _tape.record(_put, out.reshape(-1), tmp)
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


def manual_seed(seed):
    """Seed the default generator; returns it, as PyTorch does."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)
