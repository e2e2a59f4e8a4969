"""Intermediates that are never alive at the same time share memory (a plan's memory plan).

A traced step leaves every intermediate in its own buffer: a GPT training step's plan kept
about 146 MiB of them, each written once per replay and read a few steps later. Memory
written for the first time in a while is cold (the write fetches every cache line first),
so a BLAS product writing a fresh 1.5 MiB output ran up to twice as slowly as into memory
used just before. PyTorch's caching allocator hands a freed block to the next tensor of its
size; a plan can do the same once, ahead of time: each intermediate is alive from the first
replayed item (a step, or a fused region, taken as one point) that touches it to the last
one, and intermediates whose lives do not overlap get places in one arena that overlap.

Only intermediates no caller sees and whose content a replay writes before it reads take
part: statics a kernel wrote during the trace (``plan.written_statics``, which verification
starts as NaN bytes, so a plan that read one before writing it never passes), not made fresh
per call, laid out contiguously; and constants of the trace that a kernel writes (the zeros
a slice's gradient is copied into, which a replay puts back: ``plan.restore``), whose content
is put back just before the item that first touches them (``plan.late``) instead of at the
start of the replay, so that it is written into memory still in cache (a GPT step's twelve
1.5 MiB zeros of its attention's split gradients). Verification replays the plan
on a copy of the arena itself, so the sharing is what it checks, and each intermediate's
bytes are set to NaN again just before the item that first touches it (``births``): reading
what an earlier intermediate left there fails verification as reading stale memory does.
"""

import heapq

import numpy as np

from numgrad._compile.fuse import Region
from numgrad._compile.plan import _view
from numgrad._compile.tape import address

ALIGN = 64


def plan_memory(plan):
    """Place ``plan``'s eligible statics in one arena by their lives; sets ``plan.arena``
    ({rid: byte offset}), ``plan.arena_bytes`` and ``plan.births`` ({item index: [(static
    key, nbytes)]}). Does nothing when fewer than two can share."""
    fused = plan.fused
    items = plan.steps if fused is None else fused.items
    fresh = {key for key, _, _ in plan.fresh}
    restored = {key for key, _, _ in plan.restore}
    eligible = {}
    for rid, r in plan.statics.items():
        key = ("s", rid)
        if ((key in restored or rid in plan.written_statics and rid not in plan.constants)
                and key not in fresh and (r.flags.c_contiguous or r.flags.f_contiguous)
                and r.nbytes):
            eligible[key] = rid
    if len(eligible) < 2:
        return
    first, last = {}, {}
    cursor = 0
    steps = plan.steps
    for t, item in enumerate(items):
        n = item.count if item.__class__ is Region else 1
        for step in steps[cursor:cursor + n]:
            for _, _, spec in step[3]:
                if spec.key in eligible:
                    first.setdefault(spec.key, t)
                    last[spec.key] = t
        cursor += n
    if cursor != len(steps):
        return  # items and steps disagree: leave the plan as it is
    sizes = {key: -(-plan.statics[eligible[key]].nbytes // ALIGN) * ALIGN for key in first}
    offsets = _place(sizes, first, last)
    top = max(offsets[key] + sizes[key] for key in offsets)
    if top >= sum(sizes.values()):
        return  # nothing shared
    arena = np.empty(top, np.uint8)
    new_roots = {}
    for key, off in offsets.items():
        r = plan.statics[eligible[key]]
        new_roots[key] = (np.ndarray(r.shape, r.dtype, arena, off, r.strides), off)
    _rebind(plan, arena, new_roots)
    plan.arena_buffer = arena
    plan.arena = {eligible[k]: off for k, off in offsets.items()}
    plan.arena_bytes = top
    births = {}
    for key in offsets:
        births.setdefault(first[key], []).append((key, plan.statics[eligible[key]].nbytes))
    plan.births = births
    late = {}
    for key, _, init in plan.restore:
        if key in offsets:
            zero = not np.ascontiguousarray(init).reshape(-1).view(np.uint8).any()
            late.setdefault(first[key], []).append((key, init, zero))
    if late:
        plan.late = late
        plan.late_keys = frozenset(k for v in late.values() for k, _, _ in v)


def _place(sizes, first, last):
    """{key: byte offset}: each buffer (``sizes``, multiples of ``ALIGN``) at the lowest
    offset where it overlaps no buffer alive at the same time (lives ``first[key]`` to
    ``last[key]``, inclusive), taken in order of birth, larger first.

    Buffers are born in order, so one whose life ended before a birth is dead for every later
    one and leaves the table; those alive never overlap, so sorted by offset their ends rise
    too, and the first gap between consecutive ones (or below the first) that holds the new
    buffer is found by one vector comparison (a 10k-op chain's plan has 19k buffers, several
    thousand alive at once)."""
    starts = np.empty(0, np.int64)  # the alive buffers' offsets, ascending, and their ends
    ends = np.empty(0, np.int64)
    deaths = []  # heap of (last item, offset) of the alive buffers
    offsets = {}
    for key in sorted(first, key=lambda k: (first[k], -sizes[k])):
        size, born = sizes[key], first[key]
        while deaths and deaths[0][0] < born:
            i = int(np.searchsorted(starts, heapq.heappop(deaths)[1]))
            starts, ends = np.delete(starts, i), np.delete(ends, i)
        if not starts.size:
            at = 0
        else:
            below = np.empty_like(ends)  # where each gap begins: 0, then each end
            below[0] = 0
            below[1:] = ends[:-1]
            fits = np.flatnonzero(starts - below >= size)
            at = int(below[fits[0]]) if fits.size else int(ends[-1])
        offsets[key] = at
        i = int(np.searchsorted(starts, at))
        starts, ends = np.insert(starts, i, at), np.insert(ends, i, at + size)
        heapq.heappush(deaths, (last[key], at))
    return offsets


def _rebind(plan, arena, new_roots):
    """Every view of a moved static rebuilt at its place in ``arena`` (``new_roots``: key ->
    (new root, its byte offset)), in the steps (both orders), the fused items and the fused
    address table."""
    moved, done = {}, set()

    def step_of(step):
        new = moved.get(id(step))
        if new is not None:
            return new
        fn, args, kwargs, specs, rets, guard = step
        if not any(s.key in new_roots for _, _, s in specs):
            moved[id(step)] = step
            return step
        args = list(args)
        for pos, j, spec in specs:
            place = new_roots.get(spec.key)
            if place is None:
                continue
            if id(spec) not in done:  # a spec object shared by two steps: once
                done.add(id(spec))
                spec.array = _view((arena, place[1]), spec.off, spec.shape, spec.strides,
                                   spec.dtype)
            if j is None:
                args[pos] = spec.array
            else:
                inner = list(args[pos])
                inner[j] = spec.array
                args[pos] = type(args[pos])(inner)
        new = (fn, tuple(args), kwargs, specs, rets, guard)
        moved[id(step)] = new
        return new

    raw_is_steps = plan.raw_steps is plan.steps
    plan.steps = [step_of(s) for s in plan.steps]
    plan.raw_steps = plan.steps if raw_is_steps else [step_of(s) for s in plan.raw_steps]
    for key, (root, _) in new_roots.items():
        plan.statics[key[1]] = root
    fused = plan.fused
    if fused is not None:
        fused.items = [it if it.__class__ is Region else step_of(it) for it in fused.items]
        for key, (root, _) in new_roots.items():
            fused.addr[fused.index[key]] = address(root)
