"""How long compiling the CUDA tests' kernels for a real GPU takes, kernel by kernel:

    NUMBA_ENABLE_CUDASIM=1 NUMGRAD_CUDA_RECORD=RECORD python -m pytest tests/cuda
    python benchmarks/ptx_compile_time.py RECORD [CC]

compiles every recorded (kernel, argument types) pair to PTX for compute capability CC
(default 9.0, an H100) as ``tests/cuda/compile_ptx.py`` does, and prints the count, the total
and the spread of the compile times, in CPU seconds of this process (steadier than wall time on
a shared machine) and wall seconds, and the kernel templates that take longest. What a GPU
adds on top (PTX to machine code, at load) is not measured here. Needs numba-cuda with NVVM.
"""

import os
import pickle
import statistics
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))

import compile_ptx  # noqa: E402 - patches numba-cuda for compiling without a GPU
from numba import cuda  # noqa: E402


def main(path, cc=(9, 0)):
    compile_ptx._Device.compute_capability = cc
    with open(path, "rb") as fh:
        seen = pickle.load(fh)
    cpu, by_template, failed = [], defaultdict(float), 0
    wall_start = time.perf_counter()
    for (_, argtypes), (recipe, _) in sorted(seen.items(), key=lambda kv: kv[0][0]):
        start = time.process_time()
        kernel = compile_ptx.rebuild(recipe)
        try:
            cuda.compile_ptx(kernel.py_func, argtypes, cc=cc)
        except Exception:  # noqa: BLE001 - counted; compile_ptx.py reports the failures
            failed += 1
        cpu.append(time.process_time() - start)
        by_template[recipe[2]] += cpu[-1]
    wall = time.perf_counter() - wall_start
    print(f"{len(cpu)} kernel signatures ({failed} failed) compiled to PTX for sm_{cc[0]}{cc[1]}: "
          f"{sum(cpu):.1f} CPU s ({wall:.1f} s wall); per kernel median "
          f"{statistics.median(cpu):.3f} s, 90th percentile "
          f"{sorted(cpu)[int(0.9 * len(cpu))]:.3f} s, max {max(cpu):.3f} s")
    for name, secs in sorted(by_template.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {name}: {secs:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    cc = tuple(int(c) for c in sys.argv[2].split(".")) if len(sys.argv) > 2 else (9, 0)
    sys.exit(main(sys.argv[1], cc))
