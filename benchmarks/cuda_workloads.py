"""GPU workloads (numgrad and PyTorch on 'cuda'), for ``test_bench_cuda.py`` and
``cuda_report.py``. Each builder returns ``(run, work)``: ``run`` does one iteration and
waits for the GPU; ``work`` is the bytes moved (bandwidth workloads), the floating-point
operations (matmul) or None (training steps, compared as time ratios). None instead of a
pair: ``lib`` has no usable GPU here.

Sizes take a ``scale`` so the tests can run every workload, tiny, on Numba's simulator.
"""

import numpy as np
from workloads import cnn_step, mlp_step, module


def gpu_available(lib):
    try:
        m = module(lib)
    except ImportError:
        return False
    return bool(m.cuda.is_available())


def _sync(m):
    sync = m.cuda.synchronize

    def done(result=None):
        sync()
        return result
    return done


def copy_bandwidth(lib, n=1 << 26):
    """y = x.clone(): one read and one write of n float32 (the device-copy ceiling)."""
    m = module(lib)
    x = m.ones(n, device="cuda")
    done = _sync(m)
    return (lambda: done(x.clone())), 2 * 4 * n


def elementwise_bandwidth(lib, n=1 << 26):
    """z = x * y + x without grad: two reads and one write of n float32."""
    m = module(lib)
    x = m.ones(n, device="cuda")
    y = m.ones(n, device="cuda")
    done = _sync(m)

    def run():
        with m.no_grad():
            return done(x * y + x)
    return run, 3 * 4 * n


def matmul(lib, n=4096):
    """C = A @ B of two n x n float32 matrices: 2 n^3 flops."""
    m = module(lib)
    rng = np.random.default_rng(0)
    a = m.tensor(rng.standard_normal((n, n)).astype(np.float32), device="cuda")
    b = m.tensor(rng.standard_normal((n, n)).astype(np.float32), device="cuda")
    done = _sync(m)
    return (lambda: done(a @ b)), 2 * n ** 3


def _step(build):
    def make(lib, **kw):
        run = build(lib, **kw)
        done = _sync(module(lib))
        return (lambda: done(run())), None
    return make


CUDA_WORKLOADS = {
    "c1_copy_64M_f32": (copy_bandwidth, {"n": 1 << 26}, {"n": 64}),
    "c2_elementwise_64M_f32": (elementwise_bandwidth, {"n": 1 << 26}, {"n": 64}),
    "c3_matmul_4096_f32": (matmul, {"n": 4096}, {"n": 5}),
    "c4_mlp_step_b512": (_step(mlp_step), {"batch": 512, "device": "cuda"},
                         {"batch": 3, "device": "cuda", "width": (6, 5, 3)}),
    "c5_cnn_step_b128": (_step(cnn_step), {"batch": 128, "device": "cuda"},
                         {"batch": 2, "size": 6, "device": "cuda", "channels": (2, 2)}),
}


def build(name, lib, tiny=False):
    fn, full, small = CUDA_WORKLOADS[name]
    if not gpu_available(lib):
        return None
    return fn(lib, **(small if tiny else full))
