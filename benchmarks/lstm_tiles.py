"""Time the char-LSTM step's products (``numgrad.kernels.cpu.rnn``'s register tiles) at their
real shapes, for several tile shapes (MR rows x NR columns) against NumPy's BLAS, interleaved
in one process; min over rounds. Run pinned: ``taskset -c 1 python benchmarks/lstm_tiles.py``.
"""

import argparse
import time

import numba
import numpy as np

from numgrad.kernels._jit import inline
from numgrad.kernels.cpu import rnn


def _kernel(mr, nr, vector):
    if vector:
        micro = rnn._vector_tile(np.float32, mr, nr, 8)
    else:
        micro = inline(rnn._bind(rnn._micro, MR=mr, NR=nr,
                                 tile=rnn._tile_intrinsic(np.float32, mr * nr)))
    product = inline(rnn._bind(rnn._product, MR=mr, NR=nr, micro=micro))

    @numba.njit(error_model="numpy")
    def run(reps, a, lda, m_n, k_n, bp, n_cols, c, ldc):
        for _ in range(reps):
            product(a, 0, lda, m_n, k_n, bp, n_cols, c, 0, ldc)
    return run


def _pack(b, nr):
    """B (k x n) into panels nr wide, zeros past the last column."""
    k, n = b.shape
    bb = np.zeros((k, -(-n // nr) * nr), b.dtype)
    bb[:, :n] = b
    return np.ascontiguousarray(bb.reshape(k, -1, nr).transpose(1, 0, 2)).reshape(-1)


CASES = [  # (name, rows, k, cols)
    ("fwd L1 32x320@320x1024", 32, 320, 1024),
    ("fwd L2 32x512@512x1024", 32, 512, 1024),
    ("bwd rec 32x1024@1024x256", 32, 1024, 256),
    ("dx L2 2048x1024@1024x256", 2048, 1024, 256),
    ("dx L1 2048x1024@1024x64", 2048, 1024, 64),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="2x64,2x64v,4x24v,6x16v,3x32v,4x16v")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    shapes = [(int(s.strip("v").split("x")[0]), int(s.strip("v").split("x")[1]),
               s.endswith("v")) for s in args.shapes.split(",")]
    rng = np.random.default_rng(0)
    kernels = {s: _kernel(*s) for s in shapes}
    for name, m, k, n in CASES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ref = a @ b
        reps = max(1, int(2e8 // (2 * m * k * n)))
        packs = {s: _pack(b, s[1]) for s in shapes}
        outs = {s: np.empty((m, n), np.float32) for s in shapes}
        times = {s: [] for s in shapes}
        times["blas"] = []
        c = np.empty((m, n), np.float32)
        for s in shapes:  # compile and check
            kernels[s](1, a.reshape(-1), k, m, k, packs[s], n, outs[s].reshape(-1), n)
            assert np.allclose(outs[s], ref, rtol=1e-4, atol=1e-3), (name, s)
        first = outs[shapes[0]]
        same = {s: bool(np.array_equal(outs[s], first)) for s in shapes}
        for _ in range(args.rounds):
            for s in shapes:
                t0 = time.thread_time()
                kernels[s](reps, a.reshape(-1), k, m, k, packs[s], n,
                           outs[s].reshape(-1), n)
                times[s].append((time.thread_time() - t0) / reps)
            t0 = time.thread_time()
            for _ in range(reps):
                np.matmul(a, b, out=c)
            times["blas"].append((time.thread_time() - t0) / reps)
        flops = 2 * m * k * n
        line = [f"{name:28s}"]
        for key, ts in times.items():
            t = min(ts)
            tag = f"{key[0]}x{key[1]}{'v' * key[2]}" if key != "blas" else "blas"
            eq = "" if key == "blas" else ("=" if same[key] else "!")
            line.append(f"{tag}{eq} {t * 1e3:.3f}ms {flops / t / 1e9:.0f}GF")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
