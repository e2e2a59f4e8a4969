"""Adamax, NAdam, RAdam and Adadelta: one fused Numba update per parameter (``kernels/cpu/
optim.py``), computed as PyTorch's single-tensor implementations compute it, with its defaults,
argument checks and state names (``step`` and NAdam's ``mu_product`` are 0-d float32 tensors,
as in PyTorch).

A parameter whose gradient and state are its shape, dtype and layout runs the kernel on them
directly; anything else (a non-contiguous parameter, a loaded state of another dtype) runs it
on conforming copies that are written back."""

import numpy as np

from numgrad.autograd.grad_mode import no_grad
from numgrad.kernels import LazyKernels
from numgrad.optim.algorithms import (
    _check,
    _count,
    _fits,
    _flat_in,
    _flat_out,
    _param,
    _scalar_step,
    _step_tensor,
    _step_value,
    _writeback,
    _zeros_like,
)
from numgrad.optim.optimizer import Optimizer
from numgrad.tensor import Tensor, _wrap

OPT = LazyKernels("optim")


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    _check(lr, "learning rate")


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _scalar_one():
    return _wrap(np.ones((), np.float32))


class _Fused(Optimizer):
    """The step loop the four share: ``_buffers`` names the state tensors of the parameter's
    shape, ``_counts`` the 0-d state tensors the kernel updates itself, ``_kernel`` the name of
    the update in ``kernels/cpu/optim.py`` and ``_args(group)`` its trailing arguments."""

    _buffers = ()
    _counts = ("step",)
    _kernel = None

    def _init_state(self, state, p):
        state["step"] = _scalar_step()
        for k in self._buffers:
            state[k] = _zeros_like(p)

    def _args(self, group):
        raise NotImplementedError

    def _setstate_groups(self):
        """As PyTorch's ``__setstate__``: counts saved as numbers become 0-d float32 tensors."""
        for group in self.param_groups:
            for k, v in self._group_defaults.items():
                group.setdefault(k, v)
            for p in group["params"]:
                state = self.state.get(p, {})
                for k in self._counts:
                    if len(state) != 0 and k in state and not isinstance(state[k], Tensor):
                        state[k] = _wrap(np.array(float(state[k]), np.float32))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        kernel = self._kernel
        for group in self.param_groups:
            if not any(p.grad is not None for p in group["params"]):
                continue
            args = self._args(group)
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(state, p)
                pd = p._data
                bufs = [state[k] for k in self._buffers]
                counts = [_count(state[k]) for k in self._counts]
                fast = (pd.size != 0 and pd.flags.c_contiguous and _fits(g, pd)
                        and all(c is not None for c in counts) and all(_fits(b, pd) for b in bufs))
                if fast:
                    getattr(OPT, kernel)(pd.reshape(-1), g._data.reshape(-1),
                                                *[b._data.reshape(-1) for b in bufs], *counts,
                                                *args)
                else:
                    self._slow_step(p, g, state, args)
                p._bump_version()
        return loss

    def _slow_step(self, p, g, state, args):
        """The kernel on conforming copies; counts of another layout or dtype are updated
        through a scratch copy in their dtype."""
        _step_tensor(state)
        scratch = []
        for k in self._counts:
            t = state[k]
            if not isinstance(t, Tensor):
                raise RuntimeError("API has changed, `state_steps` argument must contain a "
                                   "list of singleton tensors")
            v = _step_value(t)
            dt = t._data.dtype if t._data.dtype.kind == "f" else np.float32
            scratch.append(np.array([v], dt))
        if p._data.size == 0:
            self._empty_counts(scratch, args)
        else:
            pf, wb = _param(p)
            bufs = [_flat_out(state[k], p, wb, state, k) for k in self._buffers]
            getattr(OPT, self._kernel)(pf, _flat_in(g, p), *bufs, *scratch, *args)
            _writeback(wb)
        for k, s in zip(self._counts, scratch):
            state[k]._data[()] = s[0]

    def _empty_counts(self, scratch, args):
        """A step of an empty parameter: only the step count moves."""
        scratch[0][0] += 1


class Adamax(_Fused):
    _buffers = ("exp_avg", "exp_inf")
    _kernel = "adamax_step"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def _args(self, group):
        b1, b2 = group["betas"]
        return (float(group["lr"]), float(b1), float(b2), float(group["eps"]),
                float(group["weight_decay"]), bool(group["maximize"]))


class NAdam(_Fused):
    _buffers = ("exp_avg", "exp_avg_sq")
    _counts = ("step", "mu_product")
    _kernel = "nadam_step"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        _check(momentum_decay, "momentum_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                           decoupled_weight_decay=False)

    def _init_state(self, state, p):
        state["step"] = _scalar_step()
        state["mu_product"] = _scalar_one()
        for k in self._buffers:
            state[k] = _zeros_like(p)

    def _args(self, group):
        b1, b2 = group["betas"]
        return (float(group["lr"]), float(b1), float(b2), float(group["eps"]),
                float(group["weight_decay"]), float(group["momentum_decay"]),
                bool(group["decoupled_weight_decay"]), bool(group["maximize"]))

    def _empty_counts(self, scratch, args):
        scratch[0][0] += 1
        t = float(scratch[0][0])
        mu = args[1] * (1.0 - 0.5 * (0.96 ** (t * args[5])))
        scratch[1][0] = scratch[1][0] * scratch[1].dtype.type(mu)


class RAdam(_Fused):
    _buffers = ("exp_avg", "exp_avg_sq")
    _kernel = "radam_step"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False,
                           decoupled_weight_decay=False)

    def _args(self, group):
        b1, b2 = group["betas"]
        return (float(group["lr"]), float(b1), float(b2), float(group["eps"]),
                float(group["weight_decay"]), bool(group["decoupled_weight_decay"]),
                bool(group["maximize"]))


class Adadelta(_Fused):
    _buffers = ("square_avg", "acc_delta")
    _kernel = "adadelta_step"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check(eps, "epsilon value")
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, capturable=capturable, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def _args(self, group):
        return (float(group["lr"]), float(group["rho"]), float(group["eps"]),
                float(group["weight_decay"]), bool(group["maximize"]))
