"""``numgrad.func``: PyTorch's ``torch.func`` transforms: ``functional_call``, ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``stack_module_state``.

They run on numgrad's reverse-mode engine (``jvp`` by the double-vjp trick) and ``vmap``
runs the function once per batch element (the per-sample-gradient recipe of Linear/Conv2d
models excepted: one batched pass, ``_batched.py``); all of them nest (``vmap(grad(f))``,
``jacrev(jacrev(f))``). See ``numgrad/func/_transforms.py``.
"""

from numgrad.func._functional_call import functional_call, stack_module_state
from numgrad.func._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from numgrad.func._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd",
           "hessian", "vmap", "stack_module_state"]
