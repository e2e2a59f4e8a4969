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
