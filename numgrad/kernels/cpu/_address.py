"""Arrays by address, for the interpreter that ``numgrad.compile`` generates (``_compile/fuse``).

A compiled plan knows every buffer its kernels touch, and the view (offset, shape) each
kernel call took of it; its interpreter rebuilds those views inside compiled code from the
buffers' addresses, so one call from Python runs a whole run of kernels. Addresses only ever
come from arrays the plan holds for the length of the call, and every view it rebuilds was
checked to lie inside its buffer when the plan was made (``_compile/plan``); nothing here
takes an address from a user.
"""

from numba import literal_unroll, types
from numba.extending import intrinsic

from numgrad.kernels._jit import jit


@intrinsic
def pointer(typingctx, addr, dtype):
    """``addr`` (an integer) as a pointer to ``dtype`` items, for ``numba.carray``."""
    if not isinstance(addr, types.Integer) or not isinstance(dtype, types.NumberClass):
        return None
    ptr = types.CPointer(dtype.instance_type)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(ptr))

    return ptr(addr, dtype), codegen


@jit
def addresses(out, slots, *arrays):
    """out[slots[k]] = the address of arrays[k]'s first item."""
    k = 0
    for a in literal_unroll(arrays):
        out[slots[k]] = a.ctypes.data
        k += 1
