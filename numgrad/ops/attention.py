"""PyTorch's fused CPU attention as a declared op: ``_scaled_dot_product_flash_attention_for_cpu``
(``ScaledDotProductFlashAttentionForCpuBackward0``). The forward is the attention composite of
``numgrad.nn._attention`` (matmul, masked_fill, softmax) run without recording; one joint
derivative gives the query's, key's and value's gradients from the saved probabilities, with
numgrad ops, so it is differentiable again. ``nn.functional.scaled_dot_product_attention``
checks the arguments and picks this op where PyTorch picks its fused kernel.
"""

from numgrad.autograd.grad_mode import no_grad
from numgrad.ops._util import _wrap, state
from numgrad.ops.registry import op


def _composite():
    from numgrad.nn import _attention  # the attention math (nn imports numgrad.ops)
    return _attention


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
    at = _composite()
    k2, v2 = at._expanded(query, key, value, enable_gqa)
    if state.enabled:  # create_graph: P and O as the recorded functions of Q, K, V they are
        out, p = at._attend(query, k2, v2, attn_mask, is_causal, scale_used)
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
    at = _composite()
    k2, v2 = at._expanded(query, key, value, enable_gqa)
    with no_grad():
        out, p = at._attend(query, k2, v2, attn_mask, is_causal, scale_used)
    return out._data, {"output": out._data, "attn_mask": attn_mask, "dropout_p": 0.0,
                       "is_causal": is_causal, "scale": scale, "scale_used": scale_used,
                       "probs": p._data, "enable_gqa": bool(enable_gqa)}
