"""The attention of ``numgrad.nn.functional`` below its signatures: ``scaled_dot_product_attention``
and ``multi_head_attention_forward`` with PyTorch's checks in its order; the math is
``numgrad.ops.attention`` (composed of numgrad ops: matmul, masked_fill, softmax, ...).

PyTorch 2.13 on the CPU picks a backend per call: its fused "flash" kernel for 4-D inputs
with one head size, equal batch and head counts, no dropout, no 3-D or grad-requiring mask
(the output's node is ``ScaledDotProductFlashAttentionForCpuBackward0``), and a composite of
ops otherwise. numgrad makes the same choice: the flash case is the declared op of
``numgrad/ops/attention.py`` (one fused node whose derivative is numgrad ops); the other case
is the composed graph of ``numgrad.ops.attention.attend`` itself.
"""

import math
import warnings

import numpy as np

from numgrad import _dtype
from numgrad._shape import broadcast_shapes
from numgrad.ops import attention as AT
from numgrad.ops import nn_layers as NL
from numgrad.ops._util import LIN, Tensor, _wrap, dtype_of, state

_NEG_INF = float("-inf")
_FN = "scaled_dot_product_attention"


def _check_args(query, key, value, attn_mask, dropout_p):
    """The fused kernel's and the composite's checks of parsed arguments, in PyTorch's order."""
    dq, dk, dv = dtype_of(query), dtype_of(key), dtype_of(value)
    if not dq == dk == dv:
        raise RuntimeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_dtype.cpp_name(query._data.dtype)} key.dtype: {_dtype.cpp_name(key._data.dtype)}"
            f" and value.dtype: {_dtype.cpp_name(value._data.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype is not _dtype.bool_ and attn_mask.dtype != dq:
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_dtype.cpp_name(attn_mask._data.dtype)} and  query.dtype: "
            f"{_dtype.cpp_name(query._data.dtype)} instead.")
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead.")
    if not dq.is_floating_point:
        raise RuntimeError(f"expected scalar type Float but found {dq._legacy}")
    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                           f"{dropout_p:g}")


def _check_gqa(query, key, value):
    if query.dim() < 3:
        n = query.dim()
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         "but got -3)")
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads "
                           "in ")


def _check_products(query, key, value):
    """The shape errors of the two batched products (PyTorch's bmm messages)."""
    batch = broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
    nb = math.prod(batch)
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {query.shape[-1]}] but got: [{nb}, {key.shape[-1]}].")
    batch = broadcast_shapes(batch, tuple(value.shape[:-2]))
    nb = math.prod(batch)
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {key.shape[-2]}] but got: [{nb}, {value.shape[-2]}].")


def _flash_eligible(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether PyTorch's CPU dispatcher picks its fused kernel for these arguments."""
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4 or dropout_p > 0.0:
        return False
    qs, ks, vs = query.shape, key.shape, value.shape
    if not qs[-1] == ks[-1] == vs[-1] or not qs[0] == ks[0] == vs[0]:
        return False
    if ks[1] != vs[1] or (qs[1] != ks[1] and not (enable_gqa and qs[1] % ks[1] == 0)):
        return False
    if qs[2] == 0 or ks[2] == 0:
        return False
    if any(t.shape[-1] > 1 and t.stride(-1) != 1 for t in (query, key, value)):
        return False
    return attn_mask is None or (attn_mask.dim() in (2, 4) and not attn_mask.requires_grad)


def flash_no_graph(query, key, value, dropout_p, is_causal, scale):
    """The flash case's output where nothing records it (no input requires grad or grad
    mode is off, ``NL.unwatched``) and the attention kernel takes the arrays (4-D host
    arrays of one float dtype, equal batch, head and key counts, one head size, unit last
    strides): the kernel the flash op calls, without the op around it or the checks, which
    all pass for such arguments (no mask, no dropout, no grouped heads). None: the checked
    path. (Token-by-token generation: 4 calls a token, about 15 us saved on each.)"""
    if not (isinstance(query, Tensor) and isinstance(key, Tensor) and isinstance(value, Tensor)):
        return None
    if state.enabled and (query._requires_grad or key._requires_grad or value._requires_grad):
        return None
    if dropout_p.__class__ not in (float, int) or dropout_p != 0 or \
            is_causal.__class__ is not bool or not (scale is None or scale.__class__ is float):
        return None
    qd, kd, vd = query._data, key._data, value._data
    if qd.__class__ is not np.ndarray or kd.__class__ is not np.ndarray or \
            vd.__class__ is not np.ndarray or qd.ndim != 4 or kd.ndim != 4 or vd.ndim != 4 or \
            qd.shape[3] != vd.shape[3] or not NL.unwatched() or \
            not LIN.attention_fits(qd, kd, vd):
        return None
    (b, h, t, d), s = qd.shape, kd.shape[2]
    used = float(scale) if scale is not None else 1.0 / math.sqrt(d)
    probs = np.empty((b, h, t, s), qd.dtype)
    out = LIN.output_rows(qd, (b, h, t, vd.shape[3]))  # laid out as PyTorch's
    LIN.attention(qd, kd, vd, used, is_causal, probs, out)
    return _wrap(out)


def scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                 enable_gqa, nnf):
    """softmax(query key^T scale + mask) value after PyTorch's checks: its fused CPU kernel's
    node where PyTorch picks it, else the composite of ops (``nnf``: ``numgrad.nn.functional``,
    whose ``dropout`` it calls, as watched)."""
    _check_args(query, key, value, attn_mask, dropout_p)
    if enable_gqa:
        _check_gqa(query, key, value)
    flash = _flash_eligible(query, key, value, attn_mask, dropout_p, enable_gqa)
    if flash and dropout_p < 0:
        raise RuntimeError("scaled_dot_product_attention_flash_attention: Currently do not "
                           "support dropout > 0")
    if attn_mask is not None and is_causal and not flash:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if scale is not None:
        used = float(scale)
    else:
        used = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else math.inf
    k2, v2 = AT.expanded_heads(query, key, value, enable_gqa)
    _check_products(query, k2, v2)
    if not flash:
        return AT.attend(query, k2, v2, attn_mask, is_causal, used, max(float(dropout_p), 0.0),
                         lambda p, dropout_p: nnf.dropout(p, dropout_p, True))[0]
    return AT._scaled_dot_product_flash_attention_for_cpu(query, key, value, attn_mask,
                                                          is_causal, scale, used, enable_gqa)


# ---- multi_head_attention_forward ---------------------------------------------------------


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask (True: masked out) as an additive float mask of ``target_type``."""
    if mask is None:
        return None
    if mask.dtype is not _dtype.bool_ and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", UserWarning, stacklevel=3)
    if mask.dtype is _dtype.bool_:
        from numgrad._factories import zeros
        return zeros(tuple(mask.shape), dtype=target_type, device=mask.device).masked_fill(
            mask, _NEG_INF)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched, with PyTorch's AssertionErrors for bad ranks."""
    qd, kd, vd = query.dim(), key.dim(), value.dim()
    if qd not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{qd}-D query tensor")
    batched = qd == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if kd != qd or vd != qd:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {qd}-D but "
                             f"found {kd}-D and {vd}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != qd - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{qd - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found {attn_mask.dim()}-D tensor instead")
        if not batched and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
    return batched


def _pad_last(mask, nnf):
    return None if mask is None else nnf.pad(mask, (0, 1))


def multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
        key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
        k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal, nnf):
    """Multi-head attention (``torch.nn.functional``'s composite, with its checks); ``nnf``:
    ``numgrad.nn.functional``, whose linear, dropout, pad and attention it calls (as watched
    by a profiler or exporter)."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(
        key_padding_mask, "key_padding_mask",
        attn_mask.dtype if attn_mask is not None else None, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone makes the mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     "is None")
        q, k, v = AT.in_projection(query, key, value, None, in_proj_bias,
                                    (q_proj_weight, k_proj_weight, v_proj_weight), nnf.linear)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = AT.in_projection(query, key, value, in_proj_weight, in_proj_bias, None,
                                    nnf.linear)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should "
                               f"be {(bsz * num_heads, tgt_len, src_len)}.")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        from numgrad import cat
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_last(attn_mask, nnf), _pad_last(key_padding_mask, nnf)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        from numgrad import cat, zeros
        z = zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = cat([k, z], 1), cat([v, z], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask, nnf), _pad_last(key_padding_mask, nnf)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        out, w = AT.attention_weights(q, k, v, attn_mask, head_dim, dropout_p, nnf.dropout)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = nnf.linear(out, out_proj_weight, out_proj_bias)
        out = out.reshape(tgt_len, bsz, out.shape[1])  # no -1: the batch may be empty
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(1)
        if not batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w

    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = nnf.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = nnf.linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[1])
    return (out if batched else out.squeeze(1)), None


def _heads(t, static, bsz, num_heads, head_dim, name):
    """(S, N, E) -> (N * heads, S, head_dim), or the given static tensor after its checks."""
    if static is None:
        return t.reshape(t.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got "
                             f"{static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got "
                             f"{static.shape[2]}")
    return static
