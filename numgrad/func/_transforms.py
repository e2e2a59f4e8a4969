"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``: the
differentiation transforms of ``numgrad.func``, run on numgrad's reverse-mode engine.

Each call lifts the differentiated inputs into its own graph (a tensor that already requires
grad is lifted as a view of itself, so outer differentiation still reaches it; any other as a
fresh leaf) and differentiates with ``autograd.grad``. When the result can reach a tensor of
an enclosing computation (an input or closed-over tensor that requires grad, as inside
another transform), the gradients are taken with ``create_graph=True``, so transforms nest
(``grad(grad(f))``, ``jacrev(jacrev(f))``, ``vmap(grad(f))``); otherwise results come back
detached, as ``torch.func`` returns them.

``jvp`` is the double-vjp trick: with ``g(u) = J^T u`` built differentiably in ``u``, the
forward product is ``J t = d<g(u), t>/du``, one more reverse pass. ``jacfwd`` computes the
same Jacobian as ``jacrev`` (one reverse pass per output element).
"""

import functools

from numgrad import autograd
from numgrad.autograd.grad_mode import enable_grad, is_grad_enabled
from numgrad.autograd.graph import AccumulateGrad
from numgrad.func._pytree import flatten, unflatten
from numgrad.tensor import Tensor

# ----------------------------------------------------------------------------------------
# argument checks (PyTorch's messages)
# ----------------------------------------------------------------------------------------


def _check_argnum(argnum, n):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < n:
        return argnum
    if -n <= argnum < 0:
        return argnum + n
    raise RuntimeError(f"Got argnum={argnum}, but only {n} positional inputs")


def _check_argnums(argnums, n):
    """``argnums`` wrapped into range: an int or a tuple of ints."""
    if isinstance(argnums, int):
        return _check_argnum(argnums, n)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = tuple(_check_argnum(a, n) for a in argnums)
    if not out:
        raise RuntimeError("argnums must be non-empty")
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums elements must be unique, got {out}")
    return out


def _check_output_tensors(flat, api):
    if (len(flat) == 1 and flat[0] is None) or not flat:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = "
            f"{flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _check_float_outputs(flat, api):
    for o in flat:
        if not o.is_floating_point():
            raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {o.dtype}")


def _split_aux(output, api):
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return output


def _call(func, args, kwargs, has_aux, api):
    """``func(*args, **kwargs)`` as (output, aux), aux None without ``has_aux``."""
    output = func(*args, **kwargs)
    if has_aux:
        return _split_aux(output, api)
    return output, None


def _lift_argnums(level, argnums, args):
    """``args`` with the ones ``argnums`` names lifted into ``level``, and those (one, or a
    tuple) as the inputs to differentiate."""
    argnums = _check_argnums(argnums, len(args))
    args = list(args)
    for i in (argnums,) if isinstance(argnums, int) else argnums:
        args[i] = level.lift_tree(args[i])
    return args, args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


# ----------------------------------------------------------------------------------------
# lifting inputs into a transform's graph
# ----------------------------------------------------------------------------------------


class _Level:
    """The tensors one transform call created as fresh leaves, and whether grad mode was on
    outside it (under ``no_grad`` results never connect to the outer graph)."""

    __slots__ = ("fresh", "outer_enabled")

    def __init__(self):
        self.fresh = {}
        self.outer_enabled = is_grad_enabled()

    def lift(self, x):
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:
            return x.view_as(x)
        y = x.detach().requires_grad_(True)
        self.fresh[id(y)] = y
        return y

    def lift_tree(self, tree):
        leaves, spec = flatten(tree)
        return unflatten([self.lift(x) for x in leaves], spec)

    def reaches_outer(self, tensors):
        """Whether any of ``tensors`` depends on a tensor requiring grad that this level did
        not create: then results stay differentiable for the enclosing computation."""
        if not self.outer_enabled:
            return False
        fresh = self.fresh
        stack = []
        for t in tensors:
            if isinstance(t, Tensor) and t._requires_grad:
                if t._grad_fn is None:
                    if id(t) not in fresh:
                        return True
                else:
                    stack.append(t._grad_fn)
        seen = set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, AccumulateGrad):
                if id(node.variable) not in fresh:
                    return True
                continue
            stack.extend(n for n, _ in node.next_functions)
        return False


def _aux_out(aux, keep):
    """``aux`` as returned: tensors only (PyTorch's check), detached unless ``keep``."""
    leaves, spec = flatten(aux)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return aux if keep else unflatten([x.detach() for x in leaves], spec)


def _detach_tree(tree):
    leaves, spec = flatten(tree)
    return unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def _zeros_for(g, like):
    if g is not None:
        return g
    from numgrad import zeros_like
    return zeros_like(like)


def _grads(outputs, inputs, cotangents, create_graph, retain_graph=True):
    """d<outputs, cotangents>/d(inputs), zeros where an input is not used."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [_zeros_for(None, x) for x in inputs]
    gs = autograd.grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                       retain_graph=retain_graph, create_graph=create_graph,
                       allow_unused=True)
    return [_zeros_for(g, x) for g, x in zip(gs, inputs)]


# ----------------------------------------------------------------------------------------
# grad, grad_and_value, vjp
# ----------------------------------------------------------------------------------------


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    api = "grad_and_value(f)(*args)"
    level = _Level()
    with enable_grad():
        args, diff = _lift_argnums(level, argnums, args)
        output, aux = _call(func, args, kwargs, has_aux, api)
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got "
                               f"{type(output)}")
        if output.dim() != 0:
            raise RuntimeError(
                f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        flat, spec = flatten(diff)
        keep = level.reaches_outer([output])
        grads = _grads([output], flat, [None], keep, retain_graph=keep)  # implicit 1
        if has_aux:
            aux = _aux_out(aux, keep)
        if not keep:
            output = output.detach()
    grads = unflatten(grads, spec)
    return (grads, (output, aux)) if has_aux else (grads, output)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient of func w.r.t. argnums, func's value)``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of scalar-valued ``func`` w.r.t. ``argnums``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, value[1]) if has_aux else g
    wrapper._numgrad_grad = (func, argnums, has_aux)  # for vmap's batched fast path
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the vector-Jacobian
    products, one per primal."""
    api = "vjp(f, *primals)"
    level = _Level()
    with enable_grad():
        lifted = level.lift_tree(primals)
        output, aux = _call(func, lifted, {}, has_aux, api)
        flat_out, out_spec = flatten(output)
        _check_output_tensors(flat_out, api)
        _check_float_outputs(flat_out, "vjp(f, ...)")
        flat_in, in_spec = flatten(lifted)
        keep = level.reaches_outer(flat_out)
    results = output if keep else _detach_tree(output)
    if has_aux:
        aux = _aux_out(aux, keep)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_c, c_spec = flatten(cotangents)
        if c_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {c_spec!r}, primal output: "
                f"{out_spec!r}")
        cg = create_graph and (keep or any(isinstance(c, Tensor) and c.requires_grad
                                           for c in flat_c))
        with enable_grad():
            gs = _grads(flat_out, flat_in, flat_c, cg, retain_graph)
        return unflatten(gs, in_spec)

    return (results, vjp_fn, aux) if has_aux else (results, vjp_fn)


# ----------------------------------------------------------------------------------------
# jvp (double vjp)
# ----------------------------------------------------------------------------------------

_JVP = "jvp(f, primals, tangents)"


def _check_tensor_list(flat, argname):
    if not flat:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for x in flat:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{_JVP}: Expected {argname} to only contain Tensors, got "
                               f"{type(x)}")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product (forward mode),
    computed here by the double-vjp trick."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid "
                           "to call f(*primals).")
    flat_p, p_spec = flatten(primals)
    flat_t, t_spec = flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{_JVP}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec!r} and tangents with structure {t_spec!r}")
    _check_tensor_list(flat_p, "primals")
    _check_tensor_list(flat_t, "tangents")
    for p, t in zip(flat_p, flat_t):
        _check_tangent(p, t)
    level = _Level()
    with enable_grad():
        lifted = level.lift_tree(primals)
        output, aux = _call(func, lifted, {}, has_aux, _JVP)
        flat_out, out_spec = flatten(output)
        _check_output_tensors(flat_out, _JVP)
        flat_in = flatten(lifted)[0]
        keep = level.reaches_outer(flat_out) or (
            level.outer_enabled and any(t.requires_grad for t in flat_t))
        tangents_out = forward_products(flat_out, flat_in, flat_t, keep)
    for t in tangents_out:
        if t is None and strict:
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                               "independent of the inputs. This is not allowed with "
                               "strict=True.")
    tangents_out = [_zeros_for(t, o) for t, o in zip(tangents_out, flat_out)]
    if not keep:
        flat_out = [o.detach() for o in flat_out]
        tangents_out = [t.detach() for t in tangents_out]
    if has_aux:
        aux = _aux_out(aux, keep)
    res = (unflatten(flat_out, out_spec), unflatten(tangents_out, out_spec))
    return (*res, aux) if has_aux else res


def _check_tangent(p, t):
    if t.shape != p.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
            f"the given forward gradient is of size {list(t.shape)}.")


def forward_products(outputs, inputs, tangents, create_graph):
    """``J t`` for each output (None where it does not depend on the inputs): with ``u``
    ones that require grad, ``g = J^T u`` is built differentiably in ``u``, and
    ``J t = d<g, t>/du``. A gradient that does not depend on ``u`` yet is nonzero means a
    backward that is not differentiable: that is an error, never a zero tangent."""
    from numgrad import ones_like
    outs = [o for o in outputs if o.requires_grad and o.is_floating_point()]
    if not outs:
        return [None] * len(outputs)
    us = [ones_like(o).requires_grad_(True) for o in outs]
    gs = autograd.grad(outs, inputs, us, retain_graph=True, create_graph=True,
                       allow_unused=True)
    used_g, used_t = [], []
    for g, t in zip(gs, tangents):
        if g is None:
            continue
        if not g.requires_grad:
            if bool((g != 0).any()):
                raise NotImplementedError(
                    "jvp: the backward of an op on the path is not differentiable, so its "
                    "forward derivative cannot be formed")
            continue
        used_g.append(g)
        used_t.append(t.to(g.dtype))
    if not used_g:
        return [None] * len(outputs)
    ts = autograd.grad(used_g, us, used_t, retain_graph=True, create_graph=create_graph,
                       allow_unused=True)
    by_id = {id(o): t for o, t in zip(outs, ts)}
    return [by_id.get(id(o)) for o in outputs]


# ----------------------------------------------------------------------------------------
# Jacobians
# ----------------------------------------------------------------------------------------


def _jacobian(func, argnums, has_aux, args, api):
    level = _Level()
    with enable_grad():
        args, diff = _lift_argnums(level, argnums, args)
        output, aux = _call(func, args, {}, has_aux, api)
        flat_out, out_spec = flatten(output)
        _check_output_tensors(flat_out, api)
        flat_in, in_spec = flatten(diff)
        keep = level.reaches_outer(flat_out)
        per_out = [unflatten(_jacobian_of(o, flat_in, keep), in_spec) for o in flat_out]
    if has_aux:
        aux = _aux_out(aux, keep)
    jac = unflatten(per_out, out_spec)
    return (jac, aux) if has_aux else jac


def _jacobian_of(o, inputs, keep):
    """d(o)/d(each input), shaped ``o.shape + input.shape``: one reverse pass per element."""
    import numgrad
    n = o.numel()
    if n == 0 or not o.requires_grad:
        return [numgrad.zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                for x in inputs]
    basis = numgrad.eye(n, dtype=o.dtype, device=o.device)
    rows = [_grads([o], inputs, [basis[k].reshape(o.shape)], keep) for k in range(n)]
    return [numgrad.stack([r[i] for r in rows]).reshape(tuple(o.shape) + tuple(x.shape))
            for i, x in enumerate(inputs)]


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of ``func`` w.r.t. ``argnums`` (reverse mode)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, args, "vjp(f, *primals)")
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian of ``func`` w.r.t. ``argnums``; the same Jacobian
    as ``jacrev`` (computed here by reverse passes)."""
    from numgrad.func._vmap import check_randomness, no_randomness
    check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args):
        with no_randomness(randomness):  # PyTorch runs ``func`` under vmap
            return _jacobian(func, argnums, has_aux, args, _JVP)
    return wrapper


def hessian(func, argnums=0):
    """A function returning the Hessian of ``func`` w.r.t. ``argnums``."""
    return jacfwd(jacrev(func, argnums), argnums)
