"""Reordering a plan's steps so that elementwise loops over the same arrays meet.

A training step's tape often reads: the forward's elementwise kernels over a large array, a
reduction of the result (the loss), the fill of the loss's gradient, then the backward's
elementwise kernels over arrays of the same size. The loops on either side of the reduction
could be one loop, in which what the forward saves for the backward (``tanh``'s output, say)
stays in a register, if the steps between them were elsewhere. Steps commute when neither
writes memory the other touches, so a step between two such loops is moved before the first
loop or after the second when it commutes with every step of that loop, and the loops become
neighbours. Moving commuting steps changes no value: the plan computes what eager computed.

What a step writes: an elementwise loop template writes its last array and reads the others
(``fill_scaled`` too); a kernel with a ``writes`` attribute (argument positions) writes
those; any other kernel (BLAS included) is taken to write every array it receives. Memory
is compared by the buffer that owns it (two reachable tensors may share one) and by byte
range. Steps that return arrays or values (guards) never move.
"""

from numgrad._compile.tape import address, root


def span(start, shape, strides, itemsize):
    """[low, high) of the bytes a view starting at ``start`` touches; None when empty."""
    lo = hi = start
    for n, s in zip(shape, strides):
        if n == 0:
            return None
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + itemsize


def _accesses(step, externals, writes):
    """[(buffer, low, high, written)] of ``step``'s arrays; ``writes``: the argument
    positions it writes, or None for all of them."""
    out = []
    for pos, j, spec in step[3]:
        key, shift = spec.key, 0
        if key.__class__ is int:  # a reachable tensor's data: compare by the owning buffer
            d = externals[key]
            r = root(d)
            key, shift = ("x", id(r)), address(d) - address(r)
        span_ = span(spec.off + shift, spec.shape, spec.strides, spec.dtype.itemsize)
        if span_ is None:
            continue
        written = writes is None or j is not None or pos in writes
        out.append((key, span_[0], span_[1], written))
    return out


def _commute(a, b):
    for key, lo, hi, w in a:
        for key2, lo2, hi2, w2 in b:
            if key == key2 and lo < hi2 and lo2 < hi and (w or w2):
                return False
    return True


def schedule(steps, externals, loop_kind, no_guard):
    """``steps`` reordered so that loop steps of the same kind (``loop_kind(step)``: a
    hashable kind, or None for a step no loop takes) separated only by movable steps become
    neighbours. ``no_guard``: the plan's marker of a step whose result is not checked.
    Returns a new list; ``steps`` itself is unchanged."""
    kinds = [loop_kind(s) for s in steps]
    if sum(k is not None for k in kinds) < 2:
        return list(steps)
    acc = [_accesses(s, externals, _writes(s, k)) for s, k in zip(steps, kinds)]
    movable = [not s[4] and s[5] is no_guard for s in steps]
    order = list(range(len(steps)))
    for _ in range(len(steps)):  # each change joins two loops: bounded
        if not _join_one(order, kinds, acc, movable):
            break
    return [steps[i] for i in order]


def _writes(step, kind):
    """The argument positions ``step`` writes: a loop step's last array; what a kernel
    declares as its ``writes`` attribute (the reductions); None (all) for any other."""
    if kind is not None:
        return {step[3][-1][0]}
    return getattr(step[0], "writes", None)


def _join_one(order, kinds, acc, movable):
    """Move the steps of one gap between two loops of the same kind out of the way (in place
    in ``order``); whether a gap was closed."""
    n = len(order)
    p = 0
    while p < n:
        if kinds[order[p]] is None:
            p += 1
            continue
        a0 = p  # loop A: order[a0:a1]
        kind = kinds[order[p]]
        while p < n and kinds[order[p]] == kind:
            p += 1
        a1 = g1 = p
        while g1 < n and kinds[order[g1]] is None:
            g1 += 1
        if g1 == a1 or g1 == n or kinds[order[g1]] != kind:
            continue  # no gap, or the next loop is of another kind
        b1 = g1  # loop B: order[g1:b1]
        while b1 < n and kinds[order[b1]] == kind:
            b1 += 1
        loop_a = [acc[i] for i in order[a0:a1]]
        loop_b = [acc[i] for i in order[g1:b1]]
        before, after = [], []
        for i in order[a1:g1]:
            if not movable[i]:
                break
            if all(_commute(acc[i], x) for x in loop_a) and all(
                    _commute(acc[i], acc[j]) for j in after):
                before.append(i)
            elif all(_commute(acc[i], x) for x in loop_b):
                after.append(i)
            else:
                break
        else:
            order[a0:b1] = before + order[a0:a1] + order[g1:b1] + after
            return True
    return False
