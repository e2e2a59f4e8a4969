"""The vector instructions of the CPU running this process (LLVM's host features, read once),
which pick the shapes of numgrad's register-tiled products (``linalg``'s few-rows linear,
``rnn``'s step products). Numba's disk cache keys kernels by the CPU too, so a cached kernel
always matches the choice made here."""

import functools


@functools.cache
def features():
    """The host CPU's features, name -> bool (``avx512f``, ``avx2``, ``fma``, ...)."""
    import llvmlite.binding as llvm
    return {name: bool(on) for name, on in llvm.get_host_cpu_features().items()}


def wide_vectors():
    """Whether the CPU has 512-bit vectors (AVX-512F): 32 registers of 64 bytes."""
    return features().get("avx512f", False)
