"""Run every workload for every installed library, interleaved in one process, and print a
table (median of rounds, or their mean with --mean; each round times all libraries back to
back, so machine noise hits them alike; --gc adds the garbage collector's time per call).
Also: cold start (import, first backward with a cold and a warm kernel cache) and the peak
memory of workloads 4 and 5, each in a fresh process.

    python benchmarks/report.py            # full run
    python benchmarks/report.py --quick    # a few rounds, for CI
"""

import os

# what `import numgrad` does when it comes first (see numgrad/__init__.py): NumPy's OpenBLAS
# threads sleep after a call instead of spinning for ~2^28 cycles and starving other threads
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# steady-state timings: no background compile worker (numgrad/_background.py) sharing
# the cores while the rounds run on a cold kernel cache
os.environ.setdefault("NUMGRAD_BACKGROUND_COMPILE", "0")

import argparse  # noqa: E402
import gc
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from workloads import LIBS, SMALL, WORKLOADS, available  # noqa: E402

# pause before each sample: OpenMP threads that the previous sample's library left spinning
# (libgomp spins for a while after each parallel region; PyTorch's default) go to sleep
# instead of taking the cores from the next library's sample. No program runs two libraries
# back to back like this, so the pause removes a cost of the interleaving, not of either one.
SETTLE_S = 0.02

# the clock of each sample: wall time, or with --cpu-time the calling thread's CPU time
CLOCK = {"now": time.perf_counter}


# with --gc: the time the garbage collector took, on CLOCK, summed since the last _time
GC = {"spent": 0.0, "start": 0.0}


def _gc_clock(phase, info):
    if phase == "start":
        GC["start"] = CLOCK["now"]()
    else:
        GC["spent"] += CLOCK["now"]() - GC["start"]


def _time(run, number):
    time.sleep(SETTLE_S)
    now = CLOCK["now"]
    GC["spent"] = 0.0
    t0 = now()
    for _ in range(number):
        run()
    return (now() - t0) / number


def _calibrate(run, target=0.05):
    t = _time(run, 1)
    return max(1, min(2000, int(target / max(t, 1e-7))))


def bench_workload(name, libs, rounds, mean=False):
    """Per library: the median (or ``mean``) seconds per call over ``rounds``, and the
    collector's mean seconds per call (0 unless ``--gc`` hooked it)."""
    runs = {}
    for lib in libs:
        run = WORKLOADS[name](lib)
        if run is not None:
            run()
            run()
            runs[lib] = run
    numbers = {lib: _calibrate(r) for lib, r in runs.items()}
    samples = {lib: [] for lib in runs}
    gc_spent = {lib: 0.0 for lib in runs}
    for _ in range(rounds):
        for lib, run in runs.items():
            samples[lib].append(_time(run, numbers[lib]))
            gc_spent[lib] += GC["spent"] / numbers[lib] / rounds
    pick = statistics.fmean if mean else statistics.median
    return {lib: pick(s) for lib, s in samples.items()}, gc_spent


def _fmt(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _subprocess(code, env=None):
    full = dict(os.environ)
    full.update(env or {})
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=full, timeout=900)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return r.stdout.strip()


COLD = """
    import time
    t0 = time.perf_counter()
    import numgrad as torch
    t1 = time.perf_counter()
    x = torch.rand(5, 5, requires_grad=True)
    y = torch.rand(5, 5, requires_grad=True)
    (x ** 2 + y ** 3).sum().backward()
    t2 = time.perf_counter()
    print(t1 - t0, t2 - t1)
"""


def cold_start():
    cache = tempfile.mkdtemp(prefix="numgrad-bench-cache-")
    env = {"NUMGRAD_CACHE_DIR": cache, "NUMGRAD_PREBUILT": "0"}  # nothing compiled yet
    imp_cold, first_cold = map(float, _subprocess(COLD, env).split())
    warm = [tuple(map(float, _subprocess(COLD, env).split())) for _ in range(3)]
    imp = statistics.median(w[0] for w in warm)
    first_warm = statistics.median(w[1] for w in warm)
    return {"import numgrad": imp, "first backward, cold cache": first_cold,
            "first backward, warm cache": first_warm}


PEAK = """
    import sys
    sys.path.insert(0, {here!r})
    from workloads import WORKLOADS

    def hwm():  # peak resident memory of this process (VmHWM, KiB), reset at exec
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM"))

    run = WORKLOADS[{name!r}]({lib!r})
    run()
    base = hwm()
    for _ in range(5):
        run()
    print(base, hwm())
"""


def peak_memory(name, lib):
    """(peak RSS after setup and one warm-up iteration, peak after 5 more) in MiB."""
    base, peak = map(int, _subprocess(PEAK.format(here=HERE, name=name, lib=lib)).split())
    return base / 1024, peak / 1024


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="few rounds (CI smoke run)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=None, help="workload names to run")
    parser.add_argument("--torch-first", action="store_true",
                        help="import PyTorch before numgrad (users do both)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by the calling thread's CPU time (--threads 1 only: every "
                        "kernel of both libraries then runs on that thread), so that other "
                        "jobs on a loaded machine stay out of the numbers")
    parser.add_argument("--mean", action="store_true",
                        help="the mean of the rounds instead of the median (which leaves out "
                        "the rounds that ran a full garbage collection)")
    parser.add_argument("--gc", action="store_true",
                        help="also print the garbage collector's time per call (mean)")
    args = parser.parse_args(argv)
    if args.cpu_time:
        if args.threads != 1:
            parser.error("--cpu-time needs --threads 1 (other threads' work is not counted)")
        CLOCK["now"] = time.thread_time
    if args.gc:
        gc.callbacks.append(_gc_clock)
    rounds = args.rounds or (2 if args.quick else 15)
    libs = [lib for lib in LIBS if available(lib)]
    if args.torch_first and "torch" in libs:
        import torch  # its libgomp enters the global symbol scope before numgrad's threads
    import numba

    import numgrad
    numgrad.set_num_threads(args.threads)
    if "torch" in libs:
        import torch
        torch.set_num_threads(args.threads)
    print(f"numgrad {numgrad.__version__}, numba {numba.__version__} (threading layer "
          f"{numba.config.THREADING_LAYER}), python {platform.python_version()}, "
          f"{platform.machine()}, {os.cpu_count()} cores, {args.threads} threads"
          + (f", torch {torch.__version__}" if "torch" in libs else "")
          + (", PyTorch imported first" if args.torch_first else ", numgrad imported first"))
    print(f"date: {time.strftime('%Y-%m-%d')}; {'mean' if args.mean else 'median'} of "
          f"{rounds} interleaved rounds"
          + ("; thread CPU time" if args.cpu_time else "; wall time") + "\n")
    others = [lib for lib in libs if lib not in ("numgrad", "torch")]
    header = ["workload", "numgrad", "PyTorch", "ratio"] + others + \
        [f"{o}/numgrad" for o in others] + (["numgrad gc", "PyTorch gc"] if args.gc else [])
    rows = []
    for name in WORKLOADS:
        if args.only and name not in args.only:
            continue
        use = [lib for lib in libs if lib in ("numgrad", "torch") or name in SMALL]
        t, spent = bench_workload(name, use, rounds, args.mean)
        ratio = (f"{t['numgrad'] / t['torch']:.2f}" if "torch" in t else "-")
        row = [name, _fmt(t.get("numgrad")), _fmt(t.get("torch")), ratio]
        row += [_fmt(t.get(o)) for o in others]
        row += [f"{t[o] / t['numgrad']:.1f}x" if o in t else "-" for o in others]
        if args.gc:
            row += [_fmt(spent.get("numgrad")), _fmt(spent.get("torch"))]
        rows.append(row)
        print("  done", name, file=sys.stderr)
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"  # noqa
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    if not args.quick and not args.only:
        print()
        for k, v in cold_start().items():
            print(f"{k}: {_fmt(v)}")
        print()
        for name in ("4_mlp_step_784_256_10_b128", "5_elementwise_1M"):
            ours = peak_memory(name, "numgrad")
            theirs = peak_memory(name, "torch") if "torch" in libs else None
            print(f"peak RSS {name}: numgrad {ours[1]:.0f} MiB (after warm-up {ours[0]:.0f})"
                  + (f", PyTorch {theirs[1]:.0f} MiB (after warm-up {theirs[0]:.0f})"
                     if theirs else ""))


if __name__ == "__main__":
    main()
