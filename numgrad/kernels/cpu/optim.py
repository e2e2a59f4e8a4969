"""Fused optimizer updates beyond SGD/Adam/RMSprop (those loops live in ``nn``), and the
shared per-element updates bound for the CPU: one pass over a flat, contiguous parameter and
its state, in the parameter's dtype, with the operations of PyTorch's single-tensor
implementation in its order and with its roundings, so results are PyTorch's CPU results bit
for bit:

* a tensor op with a Python number converts the number to the parameter dtype first;
* where PyTorch's vectorized CPU kernels compute a fused multiply-add (``add(.., alpha=)``,
  ``addcmul``, ``lerp``), the update does too (``ffma``: one rounding);
* ``addcdiv(x, a, b, value=c)`` is ``x + (c a) / b``;
* numbers PyTorch computes in Python (bias corrections, the decayed learning rate) are
  computed in float64 from the step count, which each kernel takes as a one-element array
  and increments itself, in its dtype (so a compiled step that replays the kernel counts on).

The per-step numbers and per-element updates of every optimizer (SGD, Adam/AdamW, RMSprop,
Adagrad, Adamax, NAdam, RAdam, Adadelta) are written once for both devices in
``numgrad.kernels.optim_steps``; here they are inlined into one loop per kernel. Callers
never pass empty arrays.
"""

from numgrad.kernels import optim_steps as S
from numgrad.kernels._jit import jit
from numgrad.kernels.cpu._bind import bind
from numgrad.kernels.cpu._fastmath import ffma
from numgrad.kernels.cpu._scalar import like

# the kernels an op calls with data of either device: the handle (OPT.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.optim``'s kernel of the same name
EITHER_DEVICE = ("adagrad_step", "adamax_step", "nadam_step", "radam_step", "adadelta_step")

# the shared formulas as functions inlined into the loops below, their helpers bound to the
# inlined forms and ``ffma`` to the CPU's fused multiply-add
_B = bind(S, ("lerp2", "maximum", "root", "moments", "sgd_update", "adam_consts",
              "adam_update", "rmsprop_update", "adagrad_consts", "adagrad_update",
              "adamax_consts", "adamax_update", "nadam_consts", "nadam_coefs", "nadam_update",
              "radam_consts", "radam_update", "adadelta_update"),
          S.__name__, {"ffma": ffma}, qualname="steps_{}")
_sgd_update, _rmsprop_update = _B["sgd_update"], _B["rmsprop_update"]
_adam_consts, _adam_update = _B["adam_consts"], _B["adam_update"]
_adagrad_consts, _adagrad_update = _B["adagrad_consts"], _B["adagrad_update"]
_adamax_consts, _adamax_update = _B["adamax_consts"], _B["adamax_update"]
_nadam_consts, _nadam_coefs, _nadam_update = (_B["nadam_consts"], _B["nadam_coefs"],
                                              _B["nadam_update"])
_radam_consts, _radam_update = _B["radam_consts"], _B["radam_update"]
_adadelta_update = _B["adadelta_update"]


@jit
def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    """Adagrad (``adagrad_update``) at the incremented ``step``."""
    step[0] += 1
    c = like(p[0], _adagrad_consts(float(step[0]), lr, lr_decay))
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    has_wd = weight_decay != 0
    for i in range(p.size):
        p[i], state_sum[i] = _adagrad_update(p[i], g[i], state_sum[i], c, wd, eps_, has_wd,
                                             maximize)


@jit
def adamax_step(p, g, m, u, step, lr, beta1, beta2, eps, weight_decay, maximize):
    """Adamax (``adamax_update``) at the incremented ``step``."""
    step[0] += 1
    c = like(p[0], _adamax_consts(float(step[0]), lr, beta1))
    w1 = like(p[0], 1.0 - beta1)
    w1_m1 = w1 - like(w1, 1.0)
    small = abs(w1) < 0.5
    b2 = like(p[0], beta2)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    has_wd = weight_decay != 0
    for i in range(p.size):
        p[i], m[i], u[i] = _adamax_update(p[i], g[i], m[i], u[i], c, w1, w1_m1, small, b2, wd,
                                          eps_, has_wd, maximize)


@jit
def nadam_step(p, g, m, v, step, mu_product, lr, beta1, beta2, eps, weight_decay,
               momentum_decay, decoupled, maximize):
    """NAdam (``nadam_update``) at the incremented ``step``; mu_product *= mu_t in its
    dtype."""
    step[0] += 1
    bias2, mu, mu_next = _nadam_consts(float(step[0]), beta1, beta2, momentum_decay)
    mu_product[0] = mu_product[0] * like(mu_product[0], mu)
    c1, c2 = _nadam_coefs(lr, mu, mu_next, float(mu_product[0]))
    c1_ = like(p[0], c1)
    c2_ = like(p[0], c2)
    bc2 = like(p[0], bias2)
    w1 = like(p[0], 1.0 - beta1)
    w1_m1 = w1 - like(w1, 1.0)
    small = abs(w1) < 0.5
    b2 = like(p[0], beta2)
    w2 = like(p[0], 1.0 - beta2)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    decay = like(p[0], 1.0 - lr * weight_decay)
    has_wd = weight_decay != 0
    for i in range(p.size):
        p[i], m[i], v[i] = _nadam_update(p[i], g[i], m[i], v[i], c1_, c2_, bc2, eps_, maximize,
                                         has_wd, decoupled, decay, wd, w1, w1_m1, small, b2, w2)


@jit
def radam_step(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    """RAdam (``radam_update``) at the incremented ``step``."""
    step[0] += 1
    bias1, rectify, rect, num = _radam_consts(float(step[0]), beta1, beta2)
    rect_ = like(p[0], rect)
    num_ = like(p[0], num)
    bc1 = like(p[0], bias1)
    lr_ = like(p[0], lr)
    one = like(p[0], 1.0)
    w1 = like(p[0], 1.0 - beta1)
    w1_m1 = w1 - like(w1, 1.0)
    small = abs(w1) < 0.5
    b2 = like(p[0], beta2)
    w2 = like(p[0], 1.0 - beta2)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    decay = like(p[0], 1.0 - lr * weight_decay)
    has_wd = weight_decay != 0
    for i in range(p.size):
        p[i], m[i], v[i] = _radam_update(p[i], g[i], m[i], v[i], bc1, lr_, one, num_, rect_,
                                         rectify, eps_, maximize, has_wd, decoupled, decay, wd,
                                         w1, w1_m1, small, b2, w2)


@jit
def adadelta_step(p, g, sq, acc, step, lr, rho, eps, weight_decay, maximize):
    """Adadelta (``adadelta_update``); counts the step."""
    step[0] += 1
    r = like(p[0], rho)
    w = like(p[0], 1.0 - rho)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    neg_lr = like(p[0], -lr)
    has_wd = weight_decay != 0
    for i in range(p.size):
        p[i], sq[i], acc[i] = _adadelta_update(p[i], g[i], sq[i], acc[i], r, w, wd, eps_,
                                               neg_lr, has_wd, maximize)


@jit
def clip_coef(total, max_norm, out):
    """out[0] = clamp(max_norm / (total + 1e-6), max=1) in total's dtype, with the roundings
    of PyTorch's tensor ops: (total + 1e-6), its reciprocal, times max_norm, then min(., 1)
    (NaN passes through the clamp)."""
    t = total[0] + like(total[0], 1e-6)
    c = (like(t, 1.0) / t) * like(t, max_norm)
    out[0] = c if c != c or c < like(c, 1.0) else like(c, 1.0)


@jit
def scale_(g, c):
    """g *= c[0] (a gradient by the clipping coefficient, in g's dtype)."""
    s = c[0]
    for i in range(g.size):
        g[i] = g[i] * s
