"""The CUDA backend: numba.cuda kernels mirroring ``numgrad.kernels.cpu`` module by module
(same launcher names and arguments), over ``CudaArray`` data. Imported only when a CUDA
tensor is first made; ``NUMBA_ENABLE_CUDASIM=1`` (set before Numba is imported) runs it on
Numba's CUDA simulator."""
