"""Where a compiled step's replay spends its time: each step of the replayed plans (a kernel
call, a BLAS product, a host step, a fused region) timed by the calling thread's CPU time over
several calls, summed by kernel, beside the whole call's time.

    taskset -c 1 python benchmarks/compile_steps.py [--only NAME ...] [--fwd] [--calls 15]
        [--threads 1] [--top 30]

Whole-step form by default (``numgrad.compile(step)``); ``--fwd``: the forward form (the
model compiled, its forward plan "F" and backward plan "B"; the loss, optimizer and clipping
run eagerly and appear only in the call's total). The timed replay runs each plan's step loop
(``Plan._steps`` with ``generated=False``) instead of its generated code: the same calls on
the same views (and, as the generated code, the cheaper twins of host steps, without the
``ascontiguousarray`` calls that returned their input), about 1 us more per step. A fused
region is named by the kernels it runs.
"""

import argparse
import collections
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from workloads import FORWARD_ONLY, WORKLOADS, build  # noqa: E402


def _label(step):
    from numgrad._compile.fuse import Region
    if step.__class__ is Region:
        kernels = dict(re.findall(r"# K(\d+): \S+\.(\S+) ", step.source))
        ops = collections.Counter(kernels.get(str(int(op)), "?") for op in step.prog[:, 0])
        return "region: " + ", ".join(f"{k} x{n}" if n > 1 else k
                                      for k, n in ops.most_common(3)) + \
            (" ..." if len(ops) > 3 else "")
    fn = step[0]
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


def _timed(plan, tag, totals, counts, on):
    """A ``Plan._steps`` that times each item into ``totals`` while ``on[0]``."""
    from numgrad._compile import plan as P
    from numgrad._compile.fuse import Region
    clock = time.thread_time_ns
    labels = {}
    faster = P._faster()  # the cheaper twins the generated replay calls

    def steps(fused, bases, addr, watch, generated=True):
        items = plan.steps if fused is None else fused.items
        late = plan.late
        for t, step in enumerate(items):
            start = clock()
            if late is not None and t in late:
                for key, init, zero in late[t]:
                    r = plan.statics[key[1]]
                    base = bases.get(key)
                    P._put(r if base is None else P._view(base, 0, r.shape, r.strides,
                                                          r.dtype), init, zero)
            if step.__class__ is Region:
                step.interpret(step.prog, step.numbers, addr)
            elif step[0] is np.ascontiguousarray and not step[4] and step[5] is P._NO_GUARD:
                continue  # it returned its own input: the generated replay leaves it out
            else:
                P._one((faster.get(step[0], step[0]),) + step[1:], bases)
            if on[0]:
                label = labels.get(t)
                if label is None:
                    label = labels[t] = f"{tag} {_label(step)}"
                totals[label] += clock() - start
                counts[label] += 1
    return steps


def _plans():
    """[(tag, plan)] of every signature of the compiled functions of this process."""
    import gc

    from numgrad._compile.api import CompiledFunction
    gc.collect()  # the previous workloads' functions
    found = []
    for obj in gc.get_objects():
        if type(obj) is not CompiledFunction:
            continue
        for entry in obj._cache.values():  # every signature's (generation: every length's)
            plan = entry.plan
            if plan is None:
                continue
            if hasattr(plan, "fwd"):
                found += [("F", plan.fwd), ("B", plan.bwd)]
            else:
                found.append(("W", plan))
    return found


def profile(name, fwd, calls, top):
    run = build(name, "numgrad.compile fwd" if fwd else "numgrad.compile")
    if run is None:
        print(f"{name}: no {'forward-form' if fwd else 'whole-step'} compiled variant")
        return
    totals, counts, on = collections.Counter(), collections.Counter(), [False]
    plans = _plans()
    if not plans:
        print(f"{name}: the compiled step does not replay")
        return
    for tag, plan in plans:
        plan._steps = _timed(plan, tag, totals, counts, on)  # this instance only
    try:
        for _ in range(2):
            run()
        on[0] = True
        start = time.thread_time_ns()
        for _ in range(calls):
            run()
        total = (time.thread_time_ns() - start) / calls
        on[0] = False
    finally:
        for _, plan in plans:
            vars(plan).pop("_steps", None)  # the class's again (a plan may be listed twice)
    in_steps = sum(totals.values()) / calls
    print(f"{name} ({'forward form' if fwd else 'whole step'}): {total / 1e6:.2f} ms per call "
          f"(thread CPU time, {calls} calls), {in_steps / 1e6:.2f} ms in plan steps "
          f"({100 * in_steps / total:.0f}%)")
    print("| ms per call | % of call | calls | step |")
    print("|---|---|---|---|")
    for label, ns in totals.most_common(top):
        print(f"| {ns / calls / 1e6:.3f} | {100 * ns / calls / total:.1f} | "
              f"{counts[label] // calls} | {label} |")
    print()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=["8_gpt_step_sdpa"])
    parser.add_argument("--fwd", action="store_true", help="the forward form")
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    import numgrad
    numgrad.set_num_threads(args.threads)
    for name in args.only:
        if name not in WORKLOADS:
            parser.error(f"no workload {name!r}")
        if not args.fwd and name in FORWARD_ONLY:
            print(f"{name}: forward form only (--fwd)")
            continue
        profile(name, args.fwd, args.calls, args.top)


if __name__ == "__main__":
    main()
