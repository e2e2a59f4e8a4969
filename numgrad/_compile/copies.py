"""Two copies in a row become one: a plan's ``copy(A -> B)`` then ``copy(B -> C)``, where ``B``
is an intermediate nothing else touches, is replayed as ``copy(A -> C)``.

A GPT step's attention backward makes each of the q, k and v gradients as a (B, H, T, D)
array, copies it transposed into a contiguous (B, T, H, D) intermediate (the heads merged),
and copies that into its third of the packed (B, T, 3C) gradient of the fused projection:
twelve 512 KiB copies whose only purpose is to be copied again. Copying ``A`` straight into
``C``, viewed with the first copy's shape, moves the same items to the same places (a copy
never converts them), so results stay bit for bit eager's.

The rewrite applies when every one of these holds, judged on the traced arrays:

* both steps are ``strided_copy.copy_rows`` (serial or multithreaded);
* ``B`` is a static buffer of the plan (no caller sees it, not a constant), the first copy
  writes all of it and the second reads all of it, each as one C-contiguous array, and no
  other step touches it;
* no step between the two touches memory that ``A`` may share (the merged copy reads ``A``
  where the second copy ran), and ``A`` and ``C`` do not overlap;
* ``C`` can be viewed with the first copy's shape without a copy, with contiguous rows.

Only the plan's replayed ``steps`` change; ``raw_steps`` (the recorded order, which
``dynamic.py`` compares with new traces) keep both copies.
"""

import numpy as np

from numgrad.kernels import LazyKernels

strided_copy = LazyKernels("strided_copy")  # Numba loads with the first plan, not at import

_COPIES = None


def _copy_kernels():
    global _COPIES
    if _COPIES is None:
        _COPIES = (strided_copy.copy_rows, strided_copy.copy_rows_par)
    return _COPIES


def merge_copies(steps, statics, keep):
    """``steps`` with each mergeable pair of copies (see the module docstring) replaced by one
    copy at the second one's place. ``statics``: the plan's static buffers {rid: root};
    ``keep``: static keys the rewrite must leave alone (made fresh per call, constants put
    back at each replay)."""
    from numgrad._compile.plan import _NO_GUARD, _Spec
    kernels = _copy_kernels()
    touches = {}  # static key -> indices of the steps that touch it
    for t, step in enumerate(steps):
        for _, _, spec in step[3]:
            if spec.key.__class__ is tuple and spec.key[0] == "s":
                touches.setdefault(spec.key, []).append(t)
    out = list(steps)
    for key, where in touches.items():
        if len(where) != 2 or key in keep:
            continue
        i, j = where
        first, second = out[i], out[j]
        if not (_is_copy(first, kernels, _NO_GUARD) and _is_copy(second, kernels, _NO_GUARD)):
            continue
        spec_a, spec_b = _arg(first, 0), _arg(first, 1)
        spec_b2, spec_c = _arg(second, 0), _arg(second, 1)
        whole = statics.get(key[1])
        if (whole is None or spec_b.key != key or spec_b2.key != key or spec_a.key == key
                or spec_c.key == key or not _covers(spec_b, whole)
                or not _covers(spec_b2, whole)):
            continue
        a, c = spec_a.array, spec_c.array
        if np.may_share_memory(a, c) or any(
                np.may_share_memory(a, s.array) for step in out[i + 1:j]
                for _, _, s in step[3]):
            continue
        moved = c.view()
        try:
            moved.shape = spec_b.shape  # C in the first copy's shape, without a copy
        except AttributeError:
            continue
        if not strided_copy.fits(a, moved):
            continue
        fn, _, kwargs, _, rets, guard = second
        specs = [(0, None, spec_a), (1, None, _Spec(spec_c.key, spec_c.off, moved))]
        out[j] = (fn, (a, moved), kwargs, specs, rets, guard)
        out[i] = None
    return [s for s in out if s is not None]


def _is_copy(step, kernels, no_guard):
    if step is None or step.__class__ is not tuple:
        return False
    fn, args, kwargs, specs, rets, guard = step
    return (any(fn is k for k in kernels) and len(args) == 2 and not kwargs and not rets
            and guard is no_guard and len(specs) == 2
            and all(j is None for _, j, _ in specs) and {p for p, _, _ in specs} == {0, 1})


def _arg(step, pos):
    return next(s for p, _, s in step[3] if p == pos)


def _covers(spec, whole):
    """Whether ``spec`` is all of ``whole``'s memory as one C-contiguous array."""
    return (spec.off == 0 and spec.array.flags.c_contiguous
            and spec.array.nbytes == whole.nbytes and whole.nbytes > 0)
