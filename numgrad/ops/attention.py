"""Attention math: ``attend`` (softmax(q k^T scale + mask) v composed of numgrad ops: matmul,
masked_fill, softmax; PyTorch's composite path, whose graph it records), its masks
(``causal_mask``, ``safe_softmax``), grouped-query heads (``expanded_heads``), multi-head
attention's projections (``in_projection``) and weights path (``attention_weights``), and
PyTorch's fused CPU attention as a declared op: ``_scaled_dot_product_flash_attention_for_cpu``
(``ScaledDotProductFlashAttentionForCpuBackward0``), whose forward is one kernel on host data
without a mask (``kernels/cpu/linalg.attention``: the same values), else ``attend`` run
without recording, and whose one joint derivative gives the query's, key's and value's
gradients from the saved probabilities, with numgrad ops, so it is differentiable again.
``nn.functional.scaled_dot_product_attention`` checks the arguments and picks the fused op
where PyTorch picks its fused kernel.
"""

import math

import numpy as np

from numgrad import _arrays, _dtype
from numgrad._shape import broadcast_shapes
from numgrad.autograd.grad_mode import no_grad
from numgrad.ops._util import LIN, _wrap, state
from numgrad.ops.registry import op

_NEG_INF = float("-inf")


def repeat_heads(t, times):
    """Each head (dim -3) repeated ``times`` times in a row (``repeat_interleave``)."""
    if times == 1:
        return t
    s = tuple(t.shape)
    return t.unsqueeze(-3).expand(*s[:-2], times, *s[-2:]).reshape(
        *s[:-3], s[-3] * times, *s[-2:])


def expanded_heads(q, k, v, enable_gqa):
    """k and v with as many heads as q (grouped-query attention)."""
    if enable_gqa and q.dim() >= 3:
        hq = q.shape[-3]
        return (repeat_heads(k, hq // k.shape[-3]), repeat_heads(v, hq // v.shape[-3]))
    return k, v


def check_mask_shape(scores_shape, mask):
    shape = broadcast_shapes(tuple(scores_shape), tuple(mask.shape))
    if shape != tuple(scores_shape):
        raise RuntimeError(f"output with shape {list(scores_shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")


# softmax with all -inf rows: filled with 0 before (no NaN reaches the backward), zeroed after
def safe_softmax(s):
    """Softmax over the last dim that gives 0 (not NaN) on rows that are all -inf."""
    with no_grad():
        full = s.amax(-1, keepdim=True) == _NEG_INF
    return s.masked_fill(full, 0.0).softmax(-1).masked_fill(full, 0.0)


_CAUSAL = {}  # (n_q, n_k) -> the host mask above the diagonal (True: masked out)
_CAUSAL_MAX = 32  # masks kept; at most 64K elements each


def causal_mask(n_q, n_k, q, s):
    """True above the diagonal of an (n_q, n_k) grid (the keys after each query, upper-left
    aligned): made once per size on the host (index arithmetic, a constant to a compiled
    trace) instead of ones, tril and logical_not at every call. A mask a graph will save
    (``MaskedFillBackward0``) is a copy of the kept one."""
    if q._data.__class__ is not np.ndarray:
        from numgrad._factories import ones
        return ones(n_q, n_k, dtype=_dtype.bool_, device=q.device).tril().logical_not()
    m = _CAUSAL.get((n_q, n_k))
    if m is None:
        m = np.arange(n_k)[None, :] > np.arange(n_q)[:, None]
        if n_q * n_k <= 65536:
            if len(_CAUSAL) >= _CAUSAL_MAX:
                _CAUSAL.clear()
            _CAUSAL[(n_q, n_k)] = m
    if state.enabled and s.requires_grad:
        m = m.copy()
    return _wrap(_arrays.constant(m))


def attend(q, k, v, mask, is_causal, scale, dropout_p=0.0, dropout=None):
    """softmax(q k^T scale + mask) v, with k and v already holding q's heads (boolean mask:
    True takes part; float: added; causal: upper-left aligned; ``dropout(p, dropout_p)`` on
    the probabilities); returns the output and the attention probabilities."""
    s = q.matmul(k.transpose(-2, -1)) * scale
    if mask is not None:
        check_mask_shape(s.shape, mask)
        s = s.masked_fill(mask.logical_not(), _NEG_INF) if mask.dtype is _dtype.bool_ \
            else s + mask
    if is_causal:
        s = s.masked_fill(causal_mask(s.shape[-2], s.shape[-1], q, s), _NEG_INF)
    if s.shape[-1] == 0:
        p = s.softmax(-1)
    elif mask is not None:
        p = safe_softmax(s)
    else:
        p = s.softmax(-1)  # causal rows always keep their first key
    if dropout_p > 0.0:
        p = dropout(p, dropout_p)
    return p.matmul(v), p


def in_projection(query, key, value, w, b, separate, linear):
    """q, k, v projections: by one packed weight (one product for self-attention) or by the
    three separate weights ``separate``; ``linear(x, w, b)`` is x w^T + b."""
    if separate is not None:
        bq, bk, bv = b.chunk(3) if b is not None else (None, None, None)
        wq, wk, wv = separate
        return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    e = query.shape[-1]
    if key is value and query is key:
        return linear(query, w, b).split(e, -1)
    if key is value:
        wq, wkv = w.split([e, 2 * e])
        bq, bkv = b.split([e, 2 * e]) if b is not None else (None, None)
        return (linear(query, wq, bq), *linear(key, wkv, bkv).split(e, -1))
    wq, wk, wv = w.chunk(3)
    bq, bk, bv = b.chunk(3) if b is not None else (None, None, None)
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def attention_weights(q, k, v, attn_mask, head_dim, dropout_p=0.0, dropout=None):
    """Multi-head attention's path that returns its weights: softmax(q / sqrt(head_dim) k^T
    + mask) over (N * heads, L, E/heads) q; a row with every key masked out is NaN, as in
    PyTorch. Returns the output and the weights."""
    w = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
    if attn_mask is not None:
        w = w + attn_mask
    w = w.softmax(-1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p)
    return w.matmul(v), w


def _group_sum(g, t):
    """A gradient over q's heads summed back onto ``t``'s (fewer, shared) heads."""
    h = t.shape[-3]
    if g.shape[-3] == h:
        return g
    s = tuple(g.shape)
    return g.reshape(*s[:-3], h, s[-3] // h, *s[-2:]).sum(-3)


# O = P V, P = softmax(S), S = scale Q K^T (+ mask): dV = P^T dO; dP = dO V^T;
# dS = P (dP - rowsum(dO O)); dQ = scale dS K; dK = scale dS^T Q (summed over the q heads
# that share a k/v head)
def _flash_backward(grad, query, key, value, output, attn_mask, is_causal, scale_used, probs,
                    enable_gqa, output_mask):
    if not state.enabled and attn_mask is None and output.__class__ is np.ndarray:
        qd, kd, vd, gd = query._data, key._data, value._data, grad._data
        if LIN.attention_fits(qd, kd, vd) and LIN.attention_grad_fits(gd, output) and \
                probs.flags.c_contiguous:  # one kernel: the formulas below per head
            return tuple(None if a is None else _wrap(a) for a in LIN.attention_backward(
                gd, qd, kd, vd, output, probs, scale_used, is_causal, output_mask))
    k2, v2 = expanded_heads(query, key, value, enable_gqa)
    if state.enabled:  # create_graph: P and O as the recorded functions of Q, K, V they are
        out, p = attend(query, k2, v2, attn_mask, is_causal, scale_used)
    else:
        out, p = _wrap(output), _wrap(probs)
    need_q, need_k, need_v = output_mask
    gq = gk = gv = None
    if need_v:
        gv = _group_sum(p.transpose(-2, -1).matmul(grad), value)
    if need_q or need_k:
        dp = grad.matmul(v2.transpose(-2, -1))
        row = (grad * out).sum(-1, keepdim=True)
        ds = p * (dp - row)
        if need_q:
            gq = ds.matmul(k2) * scale_used
        if need_k:
            gk = _group_sum(ds.transpose(-2, -1).matmul(query) * scale_used, key)
    return gq, gk, gv


@op(node="ScaledDotProductFlashAttentionForCpuBackward0", inputs=("query", "key", "value"),
    variants=("functional",),
    save=("query", "key", "value", "output", "attn_mask", "dropout_p", "is_causal", "scale",
          "scale_used", "probs", "enable_gqa"),
    grads={("query", "key", "value"): _flash_backward})
def _scaled_dot_product_flash_attention_for_cpu(query, key, value, attn_mask, is_causal, scale,
                                                scale_used, enable_gqa):
    """softmax(query key^T scale + mask) value for 4-D inputs PyTorch's fused CPU kernel takes
    (checked by the caller); ``scale_used``: the scale applied (``scale`` as given, or
    1/sqrt(head size))."""
    qd, kd, vd = query._data, key._data, value._data
    if attn_mask is None and qd.__class__ is np.ndarray and LIN.attention_fits(qd, kd, vd):
        # one kernel: per head both products (BLAS), the scale, the mask and the softmax
        (b, h, t, _), s, e = qd.shape, kd.shape[2], vd.shape[3]
        probs = _arrays.empty(qd, (b, h, t, s), qd.dtype)
        out = LIN.output_rows(qd, (b, h, t, e))  # laid out as PyTorch's
        LIN.attention(qd, kd, vd, float(scale_used), bool(is_causal), probs, out)
    else:
        k2, v2 = expanded_heads(query, key, value, enable_gqa)
        with no_grad():
            o, p = attend(query, k2, v2, attn_mask, is_causal, scale_used)
        out, probs = o._data, p._data
    return out, {"output": out, "attn_mask": attn_mask, "dropout_p": 0.0,
                 "is_causal": is_causal, "scale": scale, "scale_used": scale_used,
                 "probs": probs, "enable_gqa": bool(enable_gqa)}
