"""Hyperparameters that are not plain numbers (a string, None, a list put into
``param_groups`` by hand): each optimizer's step replays the Python arithmetic and the
argument checks that PyTorch's single-tensor step runs on them, in its order, so the same
TypeError (class and message) comes out before any kernel runs. Only called when a group
holds something other than an int, float or bool; the fast path never pays for it."""

import numbers

import numpy as np

_PLAIN = (int, float, bool)


def plain(*values):
    """Whether every value is a Python int, float or bool (nothing to replay)."""
    for v in values:
        if v.__class__ not in _PLAIN:
            return False
    return True


def _is_number(v):
    from numgrad.tensor import Tensor
    return isinstance(v, (numbers.Number, np.number, Tensor)) and not isinstance(v, np.ndarray)


def _scalar(v, method, arg):
    """``tensor.method(..., arg=v)`` with a Number argument (``add(alpha=)`` and the like)."""
    if not _is_number(v):
        raise TypeError(f"{method}(): argument '{arg}' must be Number, not {type(v).__name__}")
    return v


def _other(v, method):
    """``tensor.method(v)`` whose ``other`` is a Tensor or a Number (``mul_``, ``add_``)."""
    if not _is_number(v):
        raise TypeError(f"{method}(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(v).__name__}")
    return v


def _float(v, stand_in=0.0):
    """The kernel's float for ``v``; ``stand_in`` for a value this step never reads."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return stand_in


def sgd(group, first):
    """SGD's step on the group's values; returns (lr, weight_decay, momentum, dampening)."""
    lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
    dampening = group["dampening"]
    if wd != 0:
        _scalar(wd, "add", "alpha")
    if momentum != 0:
        if not first:
            _other(momentum, "mul_")
            _scalar(1 - dampening, "add_", "alpha")
        if group["nesterov"]:
            _scalar(momentum, "add", "alpha")
    _scalar(-lr, "add_", "alpha")
    return float(lr), float(wd), _float(momentum, 1.0), _float(dampening)


def adam(group):
    """Adam/AdamW's step (its first: the errors are the same at any step); returns (lr, beta1,
    beta2, eps, weight_decay)."""
    lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
    beta1, beta2 = group["betas"]
    if wd != 0:
        if group["decoupled_weight_decay"]:
            _other(1 - lr * wd, "mul_")
        else:
            _scalar(wd, "add", "alpha")
    1 - beta1  # noqa: B018  (exp_avg.lerp_(grad, 1 - beta1))
    _other(beta2, "mul_")
    _scalar(1 - beta2, "addcmul_", "value")
    t = 1.0
    bias1 = 1 - beta1 ** t
    bias2 = 1 - beta2 ** t
    step_size = lr / bias1
    bias2 ** 0.5  # noqa: B018
    _other(eps, "add_")
    _scalar(-step_size, "addcdiv_", "value")
    return float(lr), float(beta1), float(beta2), float(eps), float(wd)


def rmsprop(group):
    """RMSprop's step; returns (lr, alpha, eps, weight_decay, momentum)."""
    lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
    wd, momentum = group["weight_decay"], group["momentum"]
    momentum > 0  # noqa: B015  (the state is made by this comparison first)
    if wd != 0:
        _scalar(wd, "add", "alpha")
    _other(alpha, "mul_")
    _scalar(1 - alpha, "addcmul_", "value")
    _other(eps, "add_")
    if momentum > 0:
        _other(momentum, "mul_")
        _scalar(-lr, "add_", "alpha")
    else:
        _scalar(-lr, "addcdiv_", "value")
    return float(lr), float(alpha), float(eps), float(wd), float(momentum)


def adagrad(group):
    """Adagrad's step (its first: the errors are the same at any step); returns (lr, lr_decay,
    weight_decay, eps)."""
    lr, lr_decay = group["lr"], group["lr_decay"]
    wd, eps = group["weight_decay"], group["eps"]
    if wd != 0:
        _scalar(wd, "add", "alpha")
    clr = lr / (1 + 0.0 * lr_decay)
    _other(eps, "add_")
    _scalar(-clr, "addcdiv_", "value")
    return float(lr), float(lr_decay), float(wd), float(eps)
