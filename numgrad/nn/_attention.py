"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward`` with
PyTorch's argument parsing; the checks, PyTorch's choice of backend and the composites are
``numgrad.ops.nn_attention``'s, the math ``numgrad.ops.attention``'s."""

from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import nn_attention as NA
from numgrad.ops._util import Tensor
from numgrad.ops.nn_attention import _canonical_mask  # noqa: F401  (the transformer layers')
from numgrad.ops.registry import declare

_FN = "scaled_dot_product_attention"


@declare(nodes=("ScaledDotProductFlashAttentionForCpuBackward0",), variants=("functional",))
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, *, scale=None, enable_gqa=False):
    """softmax(query key^T scale + mask) value, with PyTorch's masks (boolean: True takes
    part; float: added), upper-left aligned causal mask, dropout on the attention weights,
    and grouped-query heads. Rows with no key to attend to give 0."""
    if attn_mask is None and not enable_gqa:
        out = NA.flash_no_graph(query, key, value, dropout_p, is_causal, scale)
        if out is not None:
            return out
    for pos, (name, t) in enumerate((("query", query), ("key", key), ("value", value)), 1):
        C.tensor_arg(_FN, name, pos, t)
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        raise C.must_be(_FN, "attn_mask", 4, "Tensor", attn_mask)
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)):
        raise C.must_be(_FN, "dropout_p", 5, "float", dropout_p)
    if not isinstance(is_causal, bool):
        raise C.must_be(_FN, "is_causal", 6, "bool", is_causal)
    C.optional_number(_FN, "scale", scale, "float")
    return NA.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                           scale, enable_gqa, F)


def multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,
        key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False,
        q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
        static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention over (L, N, E) query and (S, N, E) key/value (or unbatched (L, E),
    (S, E)): masks are boolean (True: masked out) or additive floats. Returns the output and,
    with ``need_weights``, the attention weights (averaged over heads by default)."""
    return NA.multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
        key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
        k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal, F)
