"""``vmap``: map a function over a dimension of its inputs.

It runs ``func`` once per batch element (the inputs' slices along their ``in_dims``) and
stacks the outputs along ``out_dims``: correct for any function, and it composes with the
other transforms (``vmap(grad(f))`` gives per-sample gradients) because every slice is an
ordinary differentiable view. ``vmap(grad(f))`` of the per-sample-gradient recipe of a
model of Linear/Conv2d/activation layers takes one batched pass instead (``_batched.py``).
"""

import functools

from numgrad.func._pytree import LEAF, broadcast, flatten, unflatten
from numgrad.tensor import Tensor

_RANDOMNESS = ("error", "different", "same")


def check_randomness(randomness):
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _name(func):
    return getattr(func, "__name__", repr(func))


def _in_dims(in_dims, args, func):
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or "
            f"a (potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}.")
    if not args:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
            "are trying to vmap over a function with no inputs. The latter is unsupported.")
    flat, spec = flatten(args)
    dims = broadcast(in_dims, spec)
    if dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            f"the structure of `inputs`. in_dims has structure {flatten(in_dims)[1]!r} but "
            f"inputs has structure {spec!r}.")
    for i, (arg, d) in enumerate(zip(flat, dims)):
        if d is not None and not isinstance(d, int):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                "but in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                f"but the input is of type {type(arg)}. We cannot vmap over non-Tensor "
                "arguments, please use None as the respective in_dim")
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                f"input, but that input is a Tensor of dimensionality {arg.dim()} so expected "
                f"in_dim to satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            dims[i] = d % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return flat, spec, dims, sizes[0]


def _out_dims(out_dims, output, spec, func):
    name = _name(func)

    def incompatible():
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
            f"with the structure of `outputs`. out_dims has structure "
            f"{flatten(out_dims)[1]!r} but outputs has structure {spec!r}.")
    if spec is LEAF:
        if isinstance(out_dims, int) or out_dims is None:
            dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            dims = list(out_dims)
        else:
            incompatible()
    else:
        dims = broadcast(out_dims, spec)
        if dims is None:
            incompatible()
    for d in dims:
        if d is not None and not isinstance(d, int):
            raise ValueError(
                f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                "a python collection of ints representing where in the outputs the vmapped "
                f"dimension should appear.")
    return dims


def _zero_element(a, d):
    import numgrad
    shape = tuple(a.shape[:d]) + tuple(a.shape[d + 1:])
    return numgrad.zeros(shape, dtype=a.dtype, device=a.device)


RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap")


def no_randomness(randomness):
    """The context a mapped function runs in: with ``randomness='error'`` any random draw
    raises PyTorch's error (every draw reads ``Generator._ensure``)."""
    import contextlib

    from numgrad.random import forbid_draws
    return forbid_draws(RANDOM_ERROR) if randomness == "error" else contextlib.nullcontext()


def _run(func, in_dims, out_dims, randomness, args, kwargs):
    import numgrad
    flat, spec, dims, size = _in_dims(in_dims, args, func)
    grad_info = getattr(func, "_numgrad_grad", None)
    if grad_info is not None and out_dims == 0:
        # per-sample gradients of a supported model and loss in one batched pass (checked
        # on a probe of the function; anything else loops below)
        from numgrad.func._batched import per_sample_grads
        fast = per_sample_grads(grad_info, in_dims, randomness, args, kwargs, flat, dims,
                                size)
        if fast is not None:
            return fast
    name = _name(func)
    # 'same': every element starts from the generator's state before the call (one draw,
    # repeated); 'different': the elements draw one after another (PyTorch's numbers where
    # its batched draw fills the batch in order: rand, randint, randperm, dropout, ...)
    state = numgrad.get_rng_state() if randomness == "same" else None
    results = []
    out_spec = None
    for i in range(max(size, 1)):
        if state is not None:
            numgrad.set_rng_state(state)
        if size:
            sliced = [a if d is None else a.select(d, i) for a, d in zip(flat, dims)]
        else:  # an empty batch: one call on zeros gives the outputs' shapes
            sliced = [a if d is None else _zero_element(a, d) for a, d in zip(flat, dims)]
        with no_randomness(randomness):
            out = func(*unflatten(sliced, spec), **kwargs)
        leaves, s = flatten(out)
        if out_spec is None:
            out_spec = s
        results.append(leaves)
    odims = _out_dims(out_dims, unflatten(results[0], out_spec), out_spec, func)
    flat_out = []
    for j, d in enumerate(odims):
        first = results[0][j]
        if d is None:
            # an unbatched output must be the same for every element (else PyTorch's error)
            if isinstance(first, Tensor) and not all(
                    r[j] is first or numgrad.equal(r[j], first) for r in results[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 "when out_dim is None")
            flat_out.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(first)}. Did you mean to set out_dims= to None for "
                             "output?")
        nd = first.dim() + 1
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                             f"{nd - 1}], but got {d})")
        stacked = numgrad.stack([r[j] for r in results], dim=d)
        flat_out.append(stacked if size else stacked.narrow(d, 0, 0))
    return unflatten(flat_out, out_spec)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs, the results stacked along
    ``out_dims``. Random ops draw per element (``randomness='same'``: one draw repeated)."""
    check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _run(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped
