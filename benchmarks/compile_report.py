"""numgrad.compile, whole step and forward form ("fwd": the loss or model compiled, backward
outside), beside numgrad eager, PyTorch eager, jax.jit (when installed) and (with
--torch-compile) torch.compile in both forms, interleaved in one process (median of rounds;
ratio = time / PyTorch eager time), and the first-call cost of numgrad.compile (the three calls
before it replays) in fresh processes with a cold and a warm kernel cache, as wall time and as
the process's CPU time (which other work on a loaded machine does not stretch).

    python benchmarks/compile_report.py [--threads 1] [--torch-compile] [--only NAME ...]
        [--no-first-calls] [--small] [--torch-first] [--cpu-time]

A numgrad.compile variant that runs eagerly (its "numgrad.compile: ... runs eagerly (...)"
warning, on any call) is timed as it runs and its reason is printed in the row's last column
(it may give up only after a few calls: the samples then start with a trace or two); a variant
that raises is left out of the row ("error") with the exception beside it; "-": no such
variant (a whole-step compile of generation, jax.jit of a workload with no JAX twin).
"""

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from report import CLOCK, _calibrate, _fmt, _time  # noqa: E402
from workloads import FORWARD_ONLY, MODELS, WORKLOADS, available, build  # noqa: E402

FIRST_CALLS = """
    import sys, time
    sys.path.insert(0, {here!r})
    import numgrad
    from workloads import WORKLOADS
    run = WORKLOADS[{name!r}]("numgrad", **{kw!r})
    compiled = numgrad.compile(run)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(3):
        compiled()
    print(time.perf_counter() - t0, time.process_time() - c0)
"""


def first_calls(name, cache, small=False):
    kw = {"small": True} if small and name in MODELS else {}
    code = textwrap.dedent(FIRST_CALLS.format(here=HERE, name=name, kw=kw))
    env = dict(os.environ, NUMGRAD_CACHE_DIR=cache, NUMGRAD_PREBUILT="0")  # compile everything
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=900)
    if r.returncode:
        raise RuntimeError(r.stderr)
    wall, cpu = r.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


class _Notes:
    """What a row's variants warned or raised, for its notes column: a numgrad.compile
    variant that runs eagerly says so once, on whichever call it gives up (building, warming
    up or timing: a plan that fails to verify is traced again, and given up only after
    several calls). Other warnings are shown as usual, each text once per run."""

    shown = set()

    def __init__(self):
        self.lines = []
        self.failed = set()

    @contextlib.contextmanager
    def watch(self, lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        for w in caught:
            msg = str(w.message)
            if msg.startswith("numgrad.compile"):
                self.add(lib, msg.removeprefix("numgrad.compile: "))
            elif (msg, w.category) not in self.shown:
                self.shown.add((msg, w.category))
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    def add(self, lib, text):
        line = f"{lib}: {text}"
        if line not in self.lines:
            self.lines.append(line)


def _build(name, lib, small, notes):
    """``build(name, lib)`` and one more call; None when there is no such variant or it
    raised (noted beside the row: the other variants still run)."""
    with notes.watch(lib):
        try:
            run = build(name, lib, small=small)
            if run is not None:
                run()  # a last one-time cost (a first replay loading code) is not timed,
                # nor does it set how many calls a sample makes
        except Exception as exc:
            traceback.print_exc()
            notes.failed.add(lib)
            notes.add(lib, f"error, {type(exc).__name__}: {exc}".splitlines()[0])
            return None
    return run


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--torch-compile", action="store_true")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--no-first-calls", action="store_true")
    parser.add_argument("--small", action="store_true",
                        help="the model workloads (rows 8-13) at their reduced sizes")
    parser.add_argument("--torch-first", action="store_true",
                        help="import PyTorch before numgrad (users do both)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time samples by the calling thread's CPU time (with --threads 1)")
    args = parser.parse_args(argv)
    if args.cpu_time:
        if args.threads != 1:
            parser.error("--cpu-time needs --threads 1 (other threads' work is not counted)")
        CLOCK["now"] = time.thread_time
    if args.torch_first and available("torch"):
        import torch  # noqa: F401  (its OpenMP runtime loads first)
    if args.threads == 1:
        from jax_workloads import one_thread
        one_thread()
    import numgrad
    numgrad.set_num_threads(args.threads)
    libs = ["numgrad", "numgrad.compile", "numgrad.compile fwd"]
    if available("torch"):
        import torch
        torch.set_num_threads(args.threads)
        libs += ["torch"] + (["torch.compile", "torch.compile fwd"] if args.torch_compile
                             else [])
    if available("jax.jit"):
        libs.append("jax.jit")
    order = "PyTorch first" if args.torch_first else "numgrad first"
    clock = "thread CPU time" if args.cpu_time else "wall time"
    print(f"{args.threads} threads, median of {args.rounds} interleaved rounds, {order}; {clock}")
    header = ["workload"] + libs + [f"{lib} / torch" for lib in libs if lib != "torch"]
    header.append("notes")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in WORKLOADS:
        if args.only and name not in args.only:
            continue
        notes = _Notes()
        runs = {lib: _build(name, lib, args.small, notes) for lib in libs}
        runs = {lib: r for lib, r in runs.items() if r is not None}
        numbers = {}
        for lib, r in runs.items():
            with notes.watch(lib):
                numbers[lib] = _calibrate(r)
        samples = {lib: [] for lib in runs}
        for _ in range(args.rounds):
            for lib, run in runs.items():
                with notes.watch(lib):
                    samples[lib].append(_time(run, numbers[lib]))
        t = {lib: statistics.median(s) for lib, s in samples.items()}
        row = [name] + [_fmt(t[lib]) if lib in t else "error" if lib in notes.failed else "-"
                        for lib in libs]
        row += [f"{t[lib] / t['torch']:.3f}" if lib in t and "torch" in t else "-"
                for lib in libs if lib != "torch"]
        row.append("; ".join(notes.lines))
        print("| " + " | ".join(row) + " |", flush=True)
    print()
    if args.no_first_calls:
        return
    cache = tempfile.mkdtemp(prefix="numgrad-compile-cache-")
    for name in WORKLOADS:
        if args.only and name not in args.only or name in FORWARD_ONLY:
            continue
        cold = first_calls(name, cache, args.small)
        warm = first_calls(name, cache, args.small)
        print(f"first three calls of numgrad.compile({name}): cold cache {_fmt(cold[0])} "
              f"({_fmt(cold[1])} CPU), warm cache {_fmt(warm[0])} ({_fmt(warm[1])} CPU)")


if __name__ == "__main__":
    main()
