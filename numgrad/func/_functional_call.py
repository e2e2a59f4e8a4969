"""``functional_call``: call a module with given tensors in place of its parameters and
buffers (by dotted name), then put the module's own back."""

from collections.abc import Sequence

from numgrad.func import _batched


def _merge(dicts):
    if isinstance(dicts, dict):
        return dicts
    if isinstance(dicts, Sequence):
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        return {k: v for d in dicts for k, v in d.items()}
    raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                     f"dicts, but got {type(dicts)}")


def _all_named_tensors(module, prefix=""):
    """Every ``(dotted name, tensor)`` of the module's parameters and buffers, tied ones
    under each of their names (PyTorch's ``remove_duplicate=False``)."""
    out = []
    for store in ("_parameters", "_buffers"):
        for k, v in module.__dict__[store].items():
            if v is not None:
                out.append((prefix + k, v))
    for k, m in module._modules.items():
        if m is not None:
            out.extend(_all_named_tensors(m, prefix + k + "."))
    return out


def _untie(named, given):
    """``given`` plus, for each given name of a tensor the module holds under several names,
    the same value under the other names."""
    names_of = {}
    for n, t in named:
        names_of.setdefault(id(t), set()).add(n)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    out = dict(given)
    for n in given:
        if n in tied:
            names = tied[n]
            if len([m for m in names if m in given]) > 1 and len(
                    {id(given[m]) for m in names if m in given}) != 1:
                raise ValueError(f"functional_call got multiple values for keys "
                                 f"{sorted(names)}, which are tied. Consider using "
                                 "tie_weights=False")
            for m in names:
                out[m] = given[n]
    return out


def _owner(module, name):
    *path, leaf = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, leaf


def _swap(module, name, value):
    """Put ``value`` at ``name``; returns the previous (store, value) to restore."""
    owner, leaf = _owner(module, name)
    for store in ("_parameters", "_buffers"):
        d = owner.__dict__[store]
        if leaf in d:
            old = d[leaf]
            d[leaf] = value
            return owner, store, leaf, old
    missing = object()
    old = owner.__dict__.get(leaf, missing)
    object.__setattr__(owner, leaf, value)
    return owner, None, leaf, old if old is not missing else missing


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` computed with the tensors of ``parameter_and_buffer_dicts``
    (by dotted name) in place of the module's parameters and buffers."""
    given = _merge(parameter_and_buffer_dicts)
    named = _all_named_tensors(module)
    values = _untie(named, given) if tie_weights else dict(given)
    if strict:
        valid = {n for n, _ in named}
        missing = sorted(valid - set(values))
        unexpected = sorted(set(values) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None:
        kwargs = {}
    swapped = []
    try:
        for name, value in values.items():
            swapped.append((name, _swap(module, name, value)))
        out = module(*args, **kwargs)
        if _batched.recording() is not None:  # a vmap probe (see _batched.py)
            _batched.note_functional_call(module, given, args, kwargs, out)
        return out
    finally:
        for name, (owner, store, leaf, old) in reversed(swapped):
            if store is None:
                if isinstance(old, object) and old.__class__ is object:
                    object.__delattr__(owner, leaf)
                else:
                    object.__setattr__(owner, leaf, old)
                continue
            d = owner.__dict__[store]
            now = d.get(leaf)
            d[leaf] = old
            # a module that replaced a buffer during the call (``num_batches_tracked += 1``)
            # leaves the new tensor in the given dict, as PyTorch does
            if name in given and now is not values[name]:
                given[name] = now


def _stacked_leaf(tensors, name):
    from numgrad import stack
    flags = {bool(t.requires_grad) for t in tensors}
    if len(flags) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out = stack(tensors)
    return out.detach().requires_grad_() if flags == {True} else out


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of the same-class ``models`` stacked
    along a new leading dim (for ``vmap`` over an ensemble); stacked parameters are new
    leaves that require grad."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
