"""``gradcheck`` and ``gradgradcheck``: analytical Jacobians (one vector-Jacobian product
per output element) against central finite differences, with PyTorch's signatures,
defaults and failure message."""

import warnings

import numpy as np

from numgrad.tensor import Tensor, _wrap


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a Jacobian is wrong."""


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _differentiable(outputs):
    return [o for o in outputs if isinstance(o, Tensor) and o.requires_grad]


def _numerical_jacobians(func, inputs, out_index, eps):
    """For each differentiable input, an (n_in, n_out) Jacobian of output ``out_index``."""
    jacobians = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        data = x._data
        flat = data.reshape(-1) if data.flags.c_contiguous else None
        if flat is None:
            raise GradcheckError("gradcheck expects contiguous inputs")
        rows = []
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old - eps
            minus = _as_tuple(func(*inputs))[out_index]._data.astype(np.float64)
            flat[k] = old + eps
            plus = _as_tuple(func(*inputs))[out_index]._data.astype(np.float64)
            flat[k] = old
            rows.append(((plus - minus) / (2 * eps)).reshape(-1))
        n_out = _as_tuple(func(*inputs))[out_index]._data.size if not rows else rows[0].size
        jacobians.append(np.array(rows).reshape(flat.size, n_out))
    return jacobians


def _analytical_jacobians(outputs, out_index, diff_inputs):
    """Rows of d out / d in from one autograd.grad per output element."""
    from numgrad.autograd import grad as autograd_grad
    out = outputs[out_index]
    n_out = out._data.size
    jac = [np.zeros((x._data.size, n_out)) for x in diff_inputs]
    for j in range(n_out):
        v = np.zeros(out._data.shape, out._data.dtype)
        v.reshape(-1)[j] = 1
        grads = autograd_grad(out, diff_inputs, _wrap(v), retain_graph=True, allow_unused=True)
        for i, g in enumerate(grads):
            if g is not None:
                jac[i][:, j] = g._data.reshape(-1)
    return jac


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check ``func``'s gradients at ``inputs`` against finite differences."""
    inputs = _as_tuple(inputs)
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype.name != "float64":
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ", UserWarning, stacklevel=2)
    outputs = _as_tuple(func(*inputs))
    for o_idx, out in enumerate(outputs):
        if not isinstance(out, Tensor) or not out.requires_grad:
            continue
        numerical = _numerical_jacobians(func, inputs, o_idx, eps)
        analytical = _analytical_jacobians(outputs, o_idx, diff_inputs)
        for i_idx, (a, n) in enumerate(zip(analytical, numerical)):
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                x = diff_inputs[i_idx]
                fmt = x.dtype
                num = _wrap(n.astype(fmt.np))
                ana = _wrap(a.astype(fmt.np))
                return _fail(
                    f"Jacobian mismatch for output {o_idx} with respect to input {i_idx},\n"
                    f"numerical:{num!r}\nanalytical:{ana!r}\n", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of the function (inputs, v) -> v^T J(inputs)."""
    from numgrad.autograd import grad as autograd_grad
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        # as PyTorch: uniform on [-1, 1) from the global generator, one output after another
        # (the same seed gives the same draws and leaves the generator in the same state)
        from numgrad._dtype import float64
        from numgrad._factories import empty
        outputs = _differentiable(_as_tuple(func(*inputs)))
        grad_outputs = tuple(
            empty(o.shape, dtype=o.dtype if o.is_floating_point() else float64,
                  device=o.device).uniform_(-1, 1).requires_grad_()
            for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivatives(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _differentiable(_as_tuple(func(*ins)))
        diff = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]
        grads = autograd_grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
