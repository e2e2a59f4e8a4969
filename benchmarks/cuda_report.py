"""GPU benchmark table: ``python benchmarks/cuda_report.py [--rounds N]``.

Elementwise bandwidth is reported as a fraction of the same library's device copy; matmul
as TFLOP/s beside PyTorch's; the MLP and CNN training steps as time ratios (numgrad /
PyTorch), all measured in one process, interleaved, medians of N rounds.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cuda_workloads import CUDA_WORKLOADS, build, gpu_available  # noqa: E402


def _time(run, number):
    t = time.perf_counter()
    for _ in range(number):
        run()
    return (time.perf_counter() - t) / number


def measure(name, libs, rounds, tiny=False):
    runs = {}
    for lib in libs:
        built = build(name, lib, tiny)
        if built is not None:
            runs[lib] = built
            built[0]()  # warm up (compiles numgrad's kernels)
    number = {lib: max(1, int(0.05 / max(_time(r, 1), 1e-6))) for lib, (r, _) in runs.items()}
    samples = {lib: [] for lib in runs}
    for _ in range(rounds):
        for lib, (run, _) in runs.items():
            samples[lib].append(_time(run, number[lib]))
    return {lib: (statistics.median(s), runs[lib][1]) for lib, s in samples.items()}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (simulator smoke run)")
    args = parser.parse_args(argv)
    libs = [lib for lib in ("numgrad", "torch") if _has_gpu(lib)]
    if "numgrad" not in libs:
        print("numgrad has no GPU here (numgrad.cuda.is_available() is False)")
        return 1
    import numgrad
    print(f"numgrad {numgrad.__version__} on {numgrad.cuda.get_device_name()}; "
          f"date: {time.strftime('%Y-%m-%d')}; median of {args.rounds} interleaved rounds")
    results = {name: measure(name, libs, args.rounds, args.tiny) for name in CUDA_WORKLOADS}
    copy = {lib: r[1] / r[0] for lib, r in results["c1_copy_64M_f32"].items()}
    for name, res in results.items():
        cells = []
        for lib in libs:
            if lib not in res:
                continue
            t, work = res[lib]
            if name.startswith("c1"):
                cells.append(f"{lib} {work / t / 1e9:.0f} GB/s")
            elif name.startswith("c2"):
                cells.append(f"{lib} {work / t / 1e9:.0f} GB/s ({work / t / copy[lib]:.2f} of "
                             "its copy)")
            elif name.startswith("c3"):
                cells.append(f"{lib} {work / t / 1e12:.2f} TFLOP/s")
            else:
                cells.append(f"{lib} {t * 1e3:.3f} ms")
        if len(res) == 2 and not name.startswith(("c1", "c2", "c3")):
            cells.append(f"ratio {res['numgrad'][0] / res['torch'][0]:.2f}")
        print(f"{name}: " + ", ".join(cells))
    return 0


def _has_gpu(lib):
    try:
        return gpu_available(lib)
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
