"""Launch guards: the checks that stand between an argument and a kernel.

Numba kernels do no bounds checking, so a launch whose operands do not fit its output reads
or writes outside a buffer. The launchers in ``kernels/cpu`` and ``kernels/cuda`` call these
checks on every path where a shape is not already equal by construction; the op layer calls
them too where PyTorch reports the same condition. Messages are PyTorch's. Pure Python: this
module imports neither Numba nor the CUDA toolkit.

Kernels that read data-dependent positions (gather, scatter, embedding, class targets) check
each index inside the kernel and return the first bad one; ``index_error`` words it.
"""

OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.")


_LEGACY = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
           "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def expand_error(src_shape, target_shape, dtype="float32"):
    """PyTorch's error for expanding ``src_shape`` (of NumPy ``dtype``) to ``target_shape``,
    or None if it fits."""
    n_src, n_tgt = len(src_shape), len(target_shape)
    if n_src > n_tgt:
        legacy = _LEGACY.get(str(dtype), "Float")
        return RuntimeError(
            f"expand(torch.{legacy}Tensor{{{list(src_shape)}}}, size={list(target_shape)}): the "
            f"number of sizes provided ({n_tgt}) must be greater or equal to the number of "
            f"dimensions in the tensor ({n_src})")
    for i in range(n_tgt - 1, -1, -1):
        d = i - (n_tgt - n_src)
        size = src_shape[d] if d >= 0 else 1
        if size != target_shape[i] and size != 1:
            return RuntimeError(
                f"The expanded size of the tensor ({target_shape[i]}) must match the existing "
                f"size ({size}) at non-singleton dimension {i}.  Target sizes: "
                f"{list(target_shape)}.  Tensor sizes: {list(src_shape)}")
    return None


def check_operands(ins, out_shape):
    """Every operand broadcasts to the output's shape (the elementwise loops index operand
    rows by the output's coordinates, repeating size-1 dims)."""
    for a in ins:
        if a.shape != out_shape:
            err = expand_error(a.shape, out_shape, a.dtype)
            if err is not None:
                raise err


def internal_overlap(shape, strides):
    """Whether a destination may have two elements at one address: a zero stride on a dim of
    size above 1 (PyTorch's test), or windows that share elements (``Tensor.unfold`` with
    ``step < size``: each dim's stride, taken from the smallest, must step past everything
    the smaller ones span; PyTorch calls those too hard to check and writes them in an order
    of its own, so numgrad refuses them rather than give other numbers). An empty array has
    no elements to share (NumPy gives it zero strides)."""
    if 0 in shape:
        return False
    span = 0
    for n, s in zip(reversed(shape), reversed(strides)):  # the common case: C order
        if n > 1:
            if s <= span:
                break
            span += s * (n - 1)
    else:
        return False
    span = 0
    for s, n in sorted((abs(s), n) for n, s in zip(shape, strides) if n > 1):
        if s <= span:
            return True
        span += s * (n - 1)
    return False


def check_writable(arr):
    """A destination written in place holds each element once."""
    flags = arr.flags
    if not (flags.c_contiguous or flags.f_contiguous) and internal_overlap(arr.shape,
                                                                           arr.strides):
        raise RuntimeError(OVERLAP)


def index_error(value, dim, size):
    return RuntimeError(f"index {value} is out of bounds for dimension {dim} with size {size}")
