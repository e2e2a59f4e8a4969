"""The char-LSTM step (``workloads.lstm_step``), numgrad and PyTorch interleaved in one
process, timed in CPU time of the calling thread (``time.thread_time``: on a loaded machine,
time spent waiting for a core does not count; meant for 1 thread, where all the work runs on
the calling thread). Prints min and median per library and their ratios.

    taskset -c 1 python benchmarks/lstm_step_cpu.py [--torch-first] [--rounds 15]
"""

import argparse
import importlib
import os
import statistics
import sys
import time

os.environ.setdefault("NUMGRAD_BACKGROUND_COMPILE", "0")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--torch-first", action="store_true")
    args = ap.parse_args()
    if args.torch_first:
        importlib.import_module("torch")
    import numgrad
    torch = importlib.import_module("torch")
    numgrad.set_num_threads(1)
    torch.set_num_threads(1)
    from workloads import lstm_step
    runs = {lib: lstm_step(lib) for lib in ("numgrad", "torch")}
    for run in runs.values():
        run()
        run()
    samples = {lib: [] for lib in runs}
    for _ in range(args.rounds):
        for lib, run in runs.items():
            t0 = time.thread_time()
            run()
            samples[lib].append(time.thread_time() - t0)
    mins = {lib: min(s) for lib, s in samples.items()}
    meds = {lib: statistics.median(s) for lib, s in samples.items()}
    order = "PyTorch first" if args.torch_first else "numgrad first"
    print(f"{order}: numgrad min {mins['numgrad'] * 1e3:.1f} ms med {meds['numgrad'] * 1e3:.1f}"
          f" | torch min {mins['torch'] * 1e3:.1f} med {meds['torch'] * 1e3:.1f} | ratio min "
          f"{mins['numgrad'] / mins['torch']:.2f} med {meds['numgrad'] / meds['torch']:.2f}")


if __name__ == "__main__":
    main()
