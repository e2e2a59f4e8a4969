"""L-BFGS (Nocedal & Wright, algorithm 7.4/7.5) with PyTorch's interface, defaults and
iterates: one flat vector over all parameters, a two-loop recursion over the last
``history_size`` curvature pairs, a fixed step or a strong-Wolfe line search by cubic
interpolation. All vector algebra is numgrad tensor ops (their kernels); the scalars PyTorch
keeps as 0-d tensors (y.s, the step's directional derivative, H's diagonal) are 0-d tensors
here too, so their float32 roundings are PyTorch's."""

import functools

import numgrad as _ng
from numgrad.autograd.grad_mode import enable_grad, no_grad
from numgrad.optim.algorithms import _check
from numgrad.optim.optimizer import Optimizer
from numgrad.tensor import Tensor


def _cubic_min(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to
    ``bounds`` (the interval between the points by default); its midpoint when the cubic has
    no real minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 ** 2 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = disc.sqrt()
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """A line-search point: step t, loss f, flat gradient g and directional derivative gtd."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step along ``d`` meeting the strong Wolfe conditions: bracket (grow the step by
    cubic extrapolation until the loss rises or the slope turns), then zoom (shrink the
    bracket by safeguarded cubic interpolation). Returns (f, g, t, evaluations)."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)
    f_new, g_new = evaluate(t, d)
    evals = 1
    new = _Point(t, f_new, g_new, g_new.dot(d))
    prev = start
    bracket = None
    done = False
    it = 0
    while it < max_ls:
        if new.f > (f + c1 * new.t * gtd) or (it > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket = [new]
            done = True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        lo_step = new.t + 0.01 * (new.t - prev.t)
        hi_step = new.t * 10
        t_next = _cubic_min(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                            bounds=(lo_step, hi_step))
        prev = _Point(new.t, new.f, new.g.clone(), new.gtd)
        f_new, g_new = evaluate(t_next, d)
        evals += 1
        new = _Point(t_next, f_new, g_new, g_new.dot(d))
        it += 1
    if it == max_ls:
        bracket = [_Point(0, f, g, None), _Point(new.t, new.f, new.g, None)]

    stalled = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and it < max_ls:
        a, b = bracket[0].t, bracket[1].t
        if abs(b - a) * d_norm < tolerance_change:
            break
        t = _cubic_min(a, bracket[0].f, bracket[0].gtd, b, bracket[1].f, bracket[1].gtd)
        top, bottom = max(a, b), min(a, b)
        margin = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < margin:  # too close to an end: move inside, or wait once
            if stalled or t >= top or t <= bottom:
                t = top - margin if abs(t - top) < abs(t - bottom) else bottom + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        it += 1
        point = _Point(t, f_new, g_new.clone(), gtd_new)
        if f_new > (f + c1 * t * gtd) or f_new >= bracket[low].f:
            bracket[high] = point
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = point
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(lr, "learning rate")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -------------------------------------------------------------- the flat vector
    def _flat_grad(self):
        parts = []
        for p in self._params:
            g = p.grad
            parts.append(_ng.zeros(p.numel(), dtype=p.dtype, device=p.device) if g is None
                         else g.reshape(-1))
        return _ng.cat(parts, 0)

    def _move(self, t, d):
        """params += t d (d flat)."""
        at = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[at:at + n].view_as(p), alpha=t)
            at += n

    def _evaluate(self, closure, x, t, d):
        """The loss and flat gradient at x + t d; the parameters are restored to ``x``."""
        self._move(t, d)
        loss = float(closure())
        g = self._flat_grad()
        for p, v in zip(self._params, x):
            p.copy_(v)
        return loss, g

    # -------------------------------------------------------------- the step
    @no_grad()
    def step(self, closure):
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        lr = float(group["lr"]) if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        line_search, history = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if g.abs().max() <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        dirs, steps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        g_prev, loss_prev = state.get("prev_flat_grad"), state.get("prev_loss")

        n = 0
        while n < max_iter:
            n += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = g.neg()
                dirs, steps, ro = [], [], []
                h_diag = 1
            else:
                y = g.sub(g_prev)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only where curvature is positive
                    if len(dirs) == history:
                        dirs.pop(0)
                        steps.pop(0)
                        ro.pop(0)
                    dirs.append(y)
                    steps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history
                al = state["al"]
                # two-loop recursion: d = -H g
                q = g.neg()
                for i in range(len(dirs) - 1, -1, -1):
                    al[i] = steps[i].dot(q) * ro[i]
                    q.add_(dirs[i], alpha=-al[i])
                d = r = _ng.mul(q, h_diag)
                for i in range(len(dirs)):
                    be_i = dirs[i].dot(r) * ro[i]
                    r.add_(steps[i], alpha=al[i] - be_i)

            if g_prev is None:
                g_prev = g.clone()
            else:
                g_prev.copy_(g)
            loss_prev = loss
            t = min(1.0, 1.0 / g.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = g.dot(d)
            if gtd > -tol_change:  # not a descent direction
                break

            used = 0
            if line_search is not None:
                if line_search != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x0 = [p.clone() for p in self._params]
                loss, g, t, used = _strong_wolfe(
                    functools.partial(self._evaluate, closure, x0), t, d, loss, g, gtd,
                    max_ls=max_eval - evals)
                self._move(t, d)
                converged = g.abs().max() <= tol_grad
            else:
                self._move(t, d)
                converged = False
                if n != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    g = self._flat_grad()
                    converged = g.abs().max() <= tol_grad
                    used = 1
            evals += used
            state["func_evals"] += used

            if n == max_iter or evals >= max_eval or converged:
                break
            if d.mul(t).abs().max() <= tol_change or abs(loss - loss_prev) < tol_change:
                break

        state.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=g_prev, prev_loss=loss_prev)
        return orig_loss
