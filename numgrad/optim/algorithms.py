"""SGD, Adam, AdamW and RMSprop: one fused Numba update per parameter, computed as PyTorch's
single-tensor implementations compute it (defaults, validation and state names included)."""

import math

import numpy as np

from numgrad import _arrays
from numgrad.autograd.grad_mode import no_grad
from numgrad.ops._util import LazyKernels
from numgrad.optim.optimizer import Optimizer, flat_data, flat_grad, required
from numgrad.tensor import _wrap

NN = LazyKernels("nn")


def _check(value, name, minimum=0.0):
    if not value >= minimum:
        raise ValueError(f"Invalid {name}: {value}")


def _zeros_like(p):
    return _wrap(_arrays.zeros(p._data, p._data.shape, p._data.dtype))


def _scalar_step():
    return _wrap(np.zeros((), np.float32))


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr is not required:
            _check(lr, "learning rate")
        _check(momentum, "momentum value")
        _check(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = None
                first = True
                if momentum != 0:  # plain SGD keeps no state, as in PyTorch
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    first = buf is None
                    if first:
                        buf = state["momentum_buffer"] = _zeros_like(p)
                K = NN.on(p._data)
                K.sgd_step(flat_data(p), flat_grad(p.grad),
                           flat_data(buf) if buf is not None else flat_data(p),
                           float(group["lr"]), float(group["weight_decay"]), float(momentum),
                           float(group["dampening"]), bool(group["nesterov"]),
                           bool(group["maximize"]), first)
                p._bump_version()
        return loss


class Adam(Optimizer):
    _decoupled_default = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=None):
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay, "weight_decay value")
        if decoupled_weight_decay is None:
            decoupled_weight_decay = self._decoupled_default
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = _scalar_step()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _zeros_like(p)
                step_t = state["step"]
                step_t._data[()] += 1
                step = float(step_t._data)
                bias1 = 1 - beta1 ** step
                bias2_sqrt = math.sqrt(1 - beta2 ** step)
                vmax = state.get("max_exp_avg_sq")
                K = NN.on(p._data)
                K.adam_step(flat_data(p), flat_grad(p.grad), flat_data(state["exp_avg"]),
                            flat_data(state["exp_avg_sq"]),
                            flat_data(vmax) if vmax is not None else flat_data(p),
                            float(group["lr"]), float(beta1), float(beta2), float(group["eps"]),
                            float(group["weight_decay"]), bool(group["decoupled_weight_decay"]),
                            bool(group["amsgrad"]), bool(group["maximize"]), bias1, bias2_sqrt)
                p._bump_version()
        return loss


class AdamW(Adam):
    _decoupled_default = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check(lr, "learning rate")
        _check(eps, "epsilon value")
        _check(momentum, "momentum value")
        _check(weight_decay, "weight_decay value")
        _check(alpha, "alpha value")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = _scalar_step()
                    state["square_avg"] = _zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = _zeros_like(p)
                state["step"]._data[()] += 1
                buf = state.get("momentum_buffer")
                gavg = state.get("grad_avg")
                K = NN.on(p._data)
                K.rmsprop_step(flat_data(p), flat_grad(p.grad), flat_data(state["square_avg"]),
                               flat_data(buf) if buf is not None else flat_data(p),
                               flat_data(gavg) if gavg is not None else flat_data(p),
                               float(group["lr"]), float(group["alpha"]), float(group["eps"]),
                               float(group["weight_decay"]), float(group["momentum"]),
                               bool(group["centered"]), bool(group["maximize"]))
                p._bump_version()
        return loss
