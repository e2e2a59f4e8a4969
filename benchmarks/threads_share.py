"""Does importing numgrad change PyTorch's speed? PyTorch's GPT training step (workloads.py
row 8, PyTorch only) timed in fresh processes: PyTorch alone, numgrad imported (and its CPU
kernels loaded) before PyTorch, numgrad imported after PyTorch; at 1 and 2 threads.

Each round starts one process per configuration, one after the other, so that machine noise
hits them alike; a process times ``--steps`` steps after two warm-up steps and reports the
median. The table gives the median over ``--rounds`` rounds, the ratio to PyTorch alone at
the same thread count, and the OpenMP runtimes each process had loaded (from
``/proc/self/maps``).

    python benchmarks/threads_share.py [--rounds 5] [--steps 15] [--threads 1 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ORDERS = ("torch alone", "numgrad first", "numgrad after")

CHILD = r"""
import json, os, statistics, sys, time
sys.path.insert(0, {here!r})
order, threads, steps = {order!r}, {threads}, {steps}

def load_numgrad():
    import numgrad
    numgrad.ones(4).add(1)  # a CPU kernel: Numba's threading layer and its OpenMP load now
    numgrad.set_num_threads(threads)

if order == "numgrad first":
    load_numgrad()
import torch
if order == "numgrad after":
    load_numgrad()
torch.set_num_threads(threads)
from workloads import WORKLOADS
ng = sys.modules.pop("numgrad", None)  # PyTorch's own initial weights (see workloads._model)
run = WORKLOADS["8_gpt_step_sdpa"]("torch")
if ng is not None:
    sys.modules["numgrad"] = ng
run(); run()
wall, cpu = [], []
for _ in range(steps):
    t0, c0 = time.perf_counter(), time.process_time()
    run()
    wall.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
with open("/proc/self/maps") as f:
    omp = sorted({{line.split()[-1] for line in f if "libgomp" in line or "omppool" in line}})
print(json.dumps({{"wall": statistics.median(wall), "cpu": statistics.median(cpu), "omp": omp}}))
"""


def run_child(order, threads, steps):
    env = dict(os.environ)
    env.setdefault("NUMGRAD_BACKGROUND_COMPILE", "0")
    code = CHILD.format(here=HERE, order=order, threads=threads, steps=steps)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{order}, {threads} threads:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _short(path):
    """``torch/lib/libgomp.so.1`` or ``/usr/lib/.../libgomp.so.1.0.0`` -> a short name."""
    if "site-packages" in path:
        return path.split("site-packages/", 1)[1]
    return path


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    args = parser.parse_args(argv)
    configs = [(order, n) for n in args.threads for order in ORDERS]
    samples = {c: {"wall": [], "cpu": []} for c in configs}
    omp = {}
    for r in range(args.rounds):
        for c in configs:
            got = run_child(*c, args.steps)
            for clock in ("wall", "cpu"):
                samples[c][clock].append(got[clock])
            omp[c] = got["omp"]
        print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"PyTorch GPT step (row 8): median over {args.rounds} processes of each one's median "
          f"of {args.steps} steps; wall time and the process's CPU time (all its threads) per "
          f"step; {time.strftime('%Y-%m-%d %H:%M')}, load {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}; GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', 'unset')}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}\n")
    print("| threads | import order | wall | vs alone | CPU | vs alone | OpenMP runtimes |")
    print("|---|---|---|---|---|---|---|")
    for order, n in configs:
        cells = []
        for clock in ("wall", "cpu"):
            med = statistics.median(samples[(order, n)][clock])
            base = statistics.median(samples[("torch alone", n)][clock])
            cells += [f"{med * 1e3:.1f} ms", f"{med / base:.2f}"]
        libs = ", ".join(_short(p) for p in omp[(order, n)])
        print(f"| {n} | {order} | " + " | ".join(cells) + f" | {libs} |")


if __name__ == "__main__":
    main()
