"""CUDA optimizer kernels of ``kernels/cuda/optim`` against their CPU twins on the same
inputs."""

import numpy as np
import pytest
from conftest import assert_close, to_cuda

from numgrad.kernels.cpu import optim as CPU
from numgrad.kernels.cuda import optim as GPU

ADAGRAD_CASES = [  # lr, lr_decay, weight_decay, eps, maximize
    (0.01, 0.0, 0.0, 1e-10, False),
    (0.1, 0.3, 0.1, 1e-6, True),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", ADAGRAD_CASES)
def test_adagrad_step(dt, case, rng):
    p, g = (rng.standard_normal(37).astype(dt) for _ in range(2))
    s = np.abs(rng.standard_normal(37)).astype(dt)
    cp, cg, cs = to_cuda(p), to_cuda(g), to_cuda(s)
    steps, csteps = np.zeros(1, np.float32), np.zeros(1, np.float32)  # counted by the kernels
    for _ in range(3):
        CPU.adagrad_step(p, g, s, steps, *case)
        GPU.adagrad_step(cp, cg, cs, csteps, *case)
        g = g * 0.5 + 0.1
        cg = to_cuda(g)
    assert steps[0] == csteps[0] == 3
    for a, b in ((cp, p), (cs, s)):
        assert_close(a, b, rtol=1e-6 if dt == np.float32 else 1e-14, atol=0)


# Adamax, NAdam, RAdam, Adadelta: (kernel, state arrays, trailing arguments)
MORE_CASES = [
    ("adamax_step", 2, 1, (0.002, 0.9, 0.999, 1e-8, 0.0, False)),
    ("adamax_step", 2, 1, (0.05, 0.8, 0.99, 1e-6, 0.1, True)),
    ("nadam_step", 2, 2, (0.002, 0.9, 0.999, 1e-8, 0.1, 4e-3, False, False)),
    ("nadam_step", 2, 2, (0.05, 0.8, 0.99, 1e-6, 0.1, 1e-2, True, True)),
    ("radam_step", 2, 1, (0.001, 0.9, 0.999, 1e-8, 0.1, False, False)),
    ("radam_step", 2, 1, (0.05, 0.5, 0.6, 1e-6, 0.1, True, True)),  # rectified from step 2
    ("adadelta_step", 2, 1, (1.0, 0.9, 1e-6, 0.0, False)),
    ("adadelta_step", 2, 1, (0.5, 0.8, 1e-6, 0.1, True)),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", MORE_CASES, ids=lambda c: c[0])
def test_more_optimizer_steps(dt, case, rng):
    name, n_state, n_counts, args = case
    p, g = (rng.standard_normal(37).astype(dt) for _ in range(2))
    st = [np.abs(rng.standard_normal(37)).astype(dt) for _ in range(n_state)]
    cp, cst = to_cuda(p), [to_cuda(a) for a in st]
    counts = [np.array([0.0 if i == 0 else 1.0], np.float32) for i in range(n_counts)]
    ccounts = [c.copy() for c in counts]
    for _ in range(4):
        getattr(CPU, name)(p, g, *st, *counts, *args)
        getattr(GPU, name)(cp, to_cuda(g), *cst, *ccounts, *args)
        g = g * 0.5 + 0.1
    assert [c[0] for c in counts] == [c[0] for c in ccounts]
    for a, b in zip([cp, *cst], [p, *st]):
        # the simulator's math.sqrt returns a double: last-bit differences, which the sum
        # of two updates can leave large relative to a parameter near 0
        assert_close(a, b, rtol=1e-6 if dt == np.float32 else 1e-14,
                     atol=1e-7 if dt == np.float32 else 1e-15)
