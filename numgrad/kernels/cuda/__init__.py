"""The CUDA backend: numba.cuda kernels mirroring ``numgrad.kernels.cpu`` module by module
(same launcher names and arguments), over ``CudaArray`` data. Imported only when a CUDA
tensor is first made; ``NUMBA_ENABLE_CUDASIM=1`` (set before Numba is imported) runs it on
Numba's CUDA simulator."""

import numpy as _np

if not hasattr(_np, "row_stack"):
    # numba-cuda (0.30) registers an overload of np.row_stack when numba.cuda is imported;
    # NumPy 2.5 removed that alias of np.vstack, so the import fails without it
    _np.row_stack = _np.vstack
