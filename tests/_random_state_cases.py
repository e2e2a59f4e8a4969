"""Generator states that used to corrupt memory or crash, for
``tests/test_safety_random.py`` and the child process it runs them in (this module imports
neither PyTorch nor pytest, so the child stays small)."""

import numpy as np


def outcome(m, code, **env):
    """``("ok", value)`` or ``(exception class name, message)`` of ``code`` run with ``m``."""
    scope = {"m": m, "np": np, **env}
    try:
        exec(code, scope)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc).__name__, str(exc)
    r = scope.get("r")
    if hasattr(r, "numpy"):
        r = r.numpy().tolist()
    return "ok", r


def state_bytes(m, **fields):
    """A state from ``m.manual_seed(5)`` with header fields overwritten: ``left`` (int32 at
    8), ``seeded`` (int32 at 12), ``next`` (uint64 at 16), ``words`` (the 624 uint64 at 24)."""
    m.manual_seed(5)
    m.rand(3)
    b = m.get_rng_state().numpy().copy()
    where = {"left": (8, np.int32), "seeded": (12, np.int32), "next": (16, np.uint64)}
    for k, v in fields.items():
        if k == "words":
            b[24:5016].view(np.uint64)[:] = v
        else:
            at, t = where[k]
            b[at:at + np.dtype(t).itemsize].view(t)[0] = v
    return m.from_numpy(b)


# each case runs after ``m.manual_seed(1234)``; the draws after it show the generator intact
_STATE_CASES = {
    "generator_short": "g = m.Generator(); g.set_state(g.get_state()[:100])",
    "generator_short_then_draw":
        "g = m.Generator()\ntry:\n    g.set_state(g.get_state()[:100])\nexcept RuntimeError:\n"
        "    pass\nr = m.rand(1000, generator=g)[-3:]",
    "default_short": "m.set_rng_state(m.get_rng_state()[:100]); r = m.randn(5)",
    "checkpoint_short":
        "m.save({'rng_state': m.get_rng_state()[:100], 'step': 3}, path)\n"
        "ck = m.load(path)\nm.set_rng_state(ck['rng_state'])",
    "float_state": "m.set_rng_state(m.get_rng_state().float())",
    "int8_state": "m.set_rng_state(m.get_rng_state().to(m.int8))",
    "random_bytes":
        "m.set_rng_state(m.tensor(np.random.default_rng(0).integers(0, 256, 5056, np.uint8)))",
    "zeros": "m.set_rng_state(m.zeros(5056, dtype=m.uint8))",
    "zeros_short": "m.set_rng_state(m.zeros(100, dtype=m.uint8))",
    "empty": "m.set_rng_state(m.zeros(0, dtype=m.uint8))",
    "long": "m.set_rng_state(m.zeros(5057, dtype=m.uint8))",
    "strided": "m.set_rng_state(m.cat([m.get_rng_state()] * 2)[::2])",
    "strided_float": "m.set_rng_state(m.cat([m.get_rng_state()] * 2).float()[::2])",
    "list": "m.set_rng_state([1, 2])",
    "array": "m.set_rng_state(m.get_rng_state().numpy())",
    "two_dims": "m.set_rng_state(m.get_rng_state().reshape(2, -1)); r = m.rand(3)",
    "left_0": "m.set_rng_state(state(m, left=0))",
    "left_625": "m.set_rng_state(state(m, left=625))",
    "left_negative": "m.set_rng_state(state(m, left=-1))",
    "next_625": "m.set_rng_state(state(m, left=1, next=625))",
    "unseeded": "m.set_rng_state(state(m, seeded=0))",
    # accepted by both: PyTorch keeps the low 32 bits of `next` and of each word, any
    # nonzero `seeded` counts, and all-zero words draw zeros
    "high_bits":
        "m.set_rng_state(state(m, next=(1 << 40) + 1, seeded=7, "
        "words=np.arange(624, dtype=np.uint64) << np.uint64(33))); r = m.rand(4)",
    "zero_words": "m.set_rng_state(state(m, words=0)); r = m.rand(3)",
    "twist_first": "m.set_rng_state(state(m, left=1, next=624)); r = m.rand(700)[-3:]",
}
# states PyTorch accepts but whose draws would read past its 624 words (``left - 1`` draws
# from ``next`` before the next twist): numgrad refuses them
_PAST_THE_WORDS = {
    "next_and_left_past": "m.set_rng_state(state(m, left=624, next=624))",
    "next_and_left_one_past": "m.set_rng_state(state(m, left=3, next=623))",
}

