"""``Optimizer``: parameter groups, per-parameter state, zero_grad and state dicts."""

import copy
from collections import defaultdict

from numgrad.autograd.grad_mode import no_grad
from numgrad.tensor import Tensor


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class: subclasses implement ``step``; updates run under ``no_grad``."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = {"params": params}
        for k, v in param_group.items():
            if k != "params":
                group[k] = v
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
            group.setdefault(k, v)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        with no_grad():
                            p.grad.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        from numgrad.autograd.grad_mode import enable_grad
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ state dicts
    def state_dict(self):
        index = {}
        groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = list(range(start, start + len(g["params"])))
            for i, p in zip(ids, g["params"]):
                index[id(p)] = i
            packed["params"] = ids
            start += len(ids)
            groups.append(packed)
        state = {index[id(p)] if isinstance(p, Tensor) else p: v for p, v in self.state.items()
                 if id(p) in index or not isinstance(p, Tensor)}  # foreign keys stay, as in PyTorch
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """PyTorch's loading: groups must match in number and sizes; each state tensor takes
        its parameter's dtype and device (``step`` keeps its own); a group's settings are the
        loaded ones. What a step then reads is checked when it runs, as in PyTorch."""
        state_dict = copy.deepcopy(state_dict)
        groups = self.param_groups
        saved = state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {}
        for g, s in zip(groups, saved):
            for i, p in zip(s["params"], g["params"]):
                id_map[i] = p
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k not in id_map and isinstance(k, str) and k.isdigit():
                k = int(k)  # a state dict whose keys went through text
            if k in id_map:
                p = id_map[k]
                state[p] = _cast(p, v)
            else:
                state[k] = v
        for g, s in zip(groups, saved):
            s["params"] = g["params"]
        self.state = state
        self.param_groups = saved
        for group in saved:
            for k, v in self._group_defaults.items():
                group.setdefault(k, v)
        self._setstate_groups()

    _group_defaults = {}  # what PyTorch's __setstate__ fills in for groups saved without it

    def _setstate_groups(self):
        """Subclasses: PyTorch's __setstate__ fix-ups after load_state_dict."""

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}


def _cast(param, value, key=None):
    """A loaded state value with its tensors on ``param``'s device and, unless it is the
    step count or ``param`` is not floating point, in ``param``'s dtype (PyTorch's rules)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value
