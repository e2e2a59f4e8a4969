"""numgrad.compile, whole step and forward form ("fwd": the loss or model compiled, backward
outside), beside numgrad eager, PyTorch eager, jax.jit (when installed) and (with
--torch-compile) torch.compile in both forms, interleaved in one process (median of rounds;
ratio = time / PyTorch eager time), and the first-call cost of numgrad.compile (the three calls
before it replays) in fresh processes with a cold and a warm kernel cache.

    python benchmarks/compile_report.py [--threads 1] [--torch-compile] [--only NAME ...]
        [--no-first-calls]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from report import _calibrate, _fmt, _time  # noqa: E402
from workloads import WORKLOADS, available, build  # noqa: E402

FIRST_CALLS = """
    import sys, time
    sys.path.insert(0, {here!r})
    import numgrad
    from workloads import WORKLOADS
    run = WORKLOADS[{name!r}]("numgrad")
    compiled = numgrad.compile(run)
    t0 = time.perf_counter()
    for _ in range(3):
        compiled()
    print(time.perf_counter() - t0)
"""


def first_calls(name, cache):
    code = textwrap.dedent(FIRST_CALLS.format(here=HERE, name=name))
    env = dict(os.environ, NUMGRAD_CACHE_DIR=cache, NUMGRAD_PREBUILT="0")  # compile everything
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=900)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return float(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--torch-compile", action="store_true")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--no-first-calls", action="store_true")
    parser.add_argument("--torch-first", action="store_true",
                        help="import PyTorch before numgrad (users do both)")
    args = parser.parse_args(argv)
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
    print(f"{args.threads} threads, median of {args.rounds} interleaved rounds, {order}")
    header = ["workload"] + libs + [f"{lib} / torch" for lib in libs if lib != "torch"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in WORKLOADS:
        if args.only and name not in args.only:
            continue
        runs = {lib: build(name, lib) for lib in libs}
        for r in runs.values():  # a last one-time cost (a first replay loading code) is not
            r()                  # timed, nor does it set how many calls a sample makes
        numbers = {lib: _calibrate(r) for lib, r in runs.items()}
        samples = {lib: [] for lib in runs}
        for _ in range(args.rounds):
            for lib, run in runs.items():
                samples[lib].append(_time(run, numbers[lib]))
        t = {lib: statistics.median(s) for lib, s in samples.items()}
        row = [name] + [_fmt(t[lib]) for lib in libs]
        row += [f"{t[lib] / t['torch']:.3f}" if "torch" in t else "-" for lib in libs
                if lib != "torch"]
        print("| " + " | ".join(row) + " |", flush=True)
    print()
    if args.no_first_calls:
        return
    cache = tempfile.mkdtemp(prefix="numgrad-compile-cache-")
    for name in WORKLOADS:
        if args.only and name not in args.only:
            continue
        cold = first_calls(name, cache)
        warm = first_calls(name, cache)
        print(f"first three calls of numgrad.compile({name}): cold cache {_fmt(cold)}, "
              f"warm cache {_fmt(warm)}")


if __name__ == "__main__":
    main()
