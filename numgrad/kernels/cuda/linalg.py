"""Matrix products on the GPU: the twin of ``numgrad.kernels.cpu.linalg``.

Why a second source: the CPU calls BLAS; a GPU GEMM is a tiled kernel staging blocks of A
and B in shared memory, an algorithm with no CPU counterpart in numgrad.

``matmul(a, b, out)`` follows ``np.matmul``: 1-D operands are promoted (a row vector on the
left, a column vector on the right) and dropped from the result, and the batch dims of 3-D
and higher operands broadcast. The default path is a shared-memory tiled kernel: one block
per ``TILE x TILE`` tile of one product in the batch (a grid-stride loop over tiles), one
thread per output element, tiles of A and B staged in shared memory. Every operand is read
and written through its own element strides (0 along broadcast batch dims), so transposed
views and broadcast batches need no copies. The accumulator has the output's dtype: float32
accumulates in float32 as BLAS sgemm does, float64 in float64, integers in their own type.

``set_cublas(True)`` routes products to cuBLAS through CuPy when CuPy is importable (it is
not a dependency); the numba kernel stays the default and the fallback.
"""

from numba import cuda

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any

# 8x8 tiles under the simulator (64 Python threads per block), 16x16 on a GPU
TILE = 8 if _launch.SIM else 16


def mm_tiled(a, ao, abs_, ars, acs, b, bo, bbs, brs, bcs, out, oo, obs, ors, ocs, bshape,
             m, n, k, tiles_m, tiles_n, ntiles):
    """out[z, r, c] = sum_t a[z, r, t] b[z, t, c] over tiles; ``T`` (the dtype) is bound."""
    sa = cuda.shared.array((TILE, TILE), T)  # noqa: F821
    sb = cuda.shared.array((TILE, TILE), T)  # noqa: F821
    acc = cuda.local.array(1, T)  # noqa: F821
    ty = cuda.threadIdx.x // TILE
    tx = cuda.threadIdx.x % TILE
    per = tiles_m * tiles_n
    for tile in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        z = tile // per
        rest = tile % per
        row = (rest // tiles_n) * TILE + ty
        col = (rest % tiles_n) * TILE + tx
        # batch offsets of this product (broadcast dims have stride 0)
        ai = ao
        bi = bo
        oi = oo
        q = z
        for d in range(len(bshape) - 1, -1, -1):
            c = q % bshape[d]
            q //= bshape[d]
            ai += c * abs_[d]
            bi += c * bbs[d]
            oi += c * obs[d]
        acc[0] = 0
        for t0 in range(0, k, TILE):
            ka = t0 + tx
            if row < m and ka < k:
                sa[ty, tx] = a[ai + row * ars + ka * acs]
            else:
                sa[ty, tx] = 0
            kb = t0 + ty
            if kb < k and col < n:
                sb[ty, tx] = b[bi + kb * brs + col * bcs]
            else:
                sb[ty, tx] = 0
            cuda.syncthreads()
            for kk in range(TILE):
                acc[0] += sa[ty, kk] * sb[kk, tx]
            cuda.syncthreads()
        if row < m and col < n:
            out[oi + row * ors + col * ocs] = acc[0]


_KERNELS = {}


def _kernel(dtype):
    k = _KERNELS.get(dtype.name)
    if k is None:
        k = _KERNELS[dtype.name] = _launch.kernel(mm_tiled, dtype.name, T=dtype.name)
    return k


def _batch_strides(shape, strides, bshape):
    """Strides of the batch dims ``shape`` right-aligned to ``bshape`` (0 where broadcast)."""
    lead = len(bshape) - len(shape)
    st = [0] * lead
    for s, e in zip(shape, strides):
        st.append(e if s != 1 else 0)
    return st


# ----------------------------------------------------------------------------------------
# optional cuBLAS (through CuPy, when importable)
# ----------------------------------------------------------------------------------------

_USE_CUBLAS = False


def set_cublas(flag):
    """Route ``matmul`` through cuBLAS (CuPy) when ``flag`` and CuPy is importable; returns
    whether cuBLAS is now in use."""
    global _USE_CUBLAS
    _USE_CUBLAS = bool(flag) and cublas_available()
    return _USE_CUBLAS


def cublas_available():
    if _launch.SIM:
        return False
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - absent or broken: the numba kernel runs
        return False
    return True


def cublas(a, b, out):
    """out = a @ b through CuPy's matmul (cuBLAS); zero-copy views of the device buffers."""
    import cupy
    ca = cupy.asarray(a.device_array())
    cb = cupy.asarray(b.device_array())
    co = cupy.asarray(out.device_array())
    cupy.matmul(ca, cb, out=co)
    return out


# ----------------------------------------------------------------------------------------
# launcher (same signature as the CPU one)
# ----------------------------------------------------------------------------------------


def matmul(a, b, out):
    """out = a @ b for 1-D, 2-D or batched operands (``np.matmul``'s rules)."""
    a, b, out = from_any(a), from_any(b), from_any(out)
    if _USE_CUBLAS and a.dtype.kind == "f":
        return cublas(a, b, out)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operands must be at least 1-D")
    # promote vectors: a (K,) -> (1, K), b (K,) -> (K, 1)
    if a.ndim == 1:
        ash, ast = (1,) + a.shape, (0,) + a.strides_el
    else:
        ash, ast = a.shape, a.strides_el
    if b.ndim == 1:
        bsh, bst = b.shape + (1,), b.strides_el + (0,)
    else:
        bsh, bst = b.shape, b.strides_el
    m, k = ash[-2], ash[-1]
    k2, n = bsh[-2], bsh[-1]
    if k != k2:
        raise ValueError(f"matmul: mismatch in core dimension ({k} vs {k2})")
    bshape = []
    for d in range(max(len(ash), len(bsh)) - 2, 0, -1):
        sa = ash[-2 - d] if d <= len(ash) - 2 else 1
        sb = bsh[-2 - d] if d <= len(bsh) - 2 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise ValueError(f"matmul: batch dims {ash[:-2]} and {bsh[:-2]} do not broadcast")
        bshape.append(max(sa, sb))
    # the output in the promoted layout: (batch..., m, n) with dropped vector dims stride 0
    osh, ost = list(out.shape), list(out.strides_el)
    if b.ndim == 1:
        osh.append(1)
        ost.append(0)
    if a.ndim == 1:
        osh.insert(len(osh) - 1, 1)
        ost.insert(len(ost) - 1, 0)
    if tuple(osh) != tuple(bshape) + (m, n):
        raise ValueError(f"matmul: output shape {out.shape} does not match the product")
    if not out.size:
        return out
    nb = 1
    for s in bshape:
        nb *= s
    abs_ = _batch_strides(ash[:-2], ast[:-2], bshape)
    bbs = _batch_strides(bsh[:-2], bst[:-2], bshape)
    obs = ost[:-2]
    if not bshape:
        bshape, abs_, bbs, obs = [1], [0], [0], [0]
    tiles_m = -(-m // TILE)
    tiles_n = -(-n // TILE)
    ntiles = nb * tiles_m * tiles_n
    blocks = min(ntiles, _launch.MAX_BLOCKS)
    _launch.launch_blocks(_kernel(out.dtype), blocks, TILE * TILE,
                          a.buf, a.offset, tuple(abs_), ast[-2], ast[-1],
                          b.buf, b.offset, tuple(bbs), bst[-2], bst[-1],
                          out.buf, out.offset, tuple(obs), ost[-2], ost[-1],
                          tuple(bshape), m, n, k, tiles_m, tiles_n, ntiles)
    return out
