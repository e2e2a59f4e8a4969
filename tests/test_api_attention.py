"""Attention and transformer layers against PyTorch: ``F.scaled_dot_product_attention``,
``F.multi_head_attention_forward``, ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``,
``nn.TransformerEncoder`` (values, gradients, node names, initial parameters, state-dict
keys, reprs, errors), plus float64 finite differences."""

import copy

import numpy as np
import pytest
from conftest import assert_close, requires_torch, to_numpy, torch

import numgrad as ng
import numgrad.nn.functional as F

NEG_INF = float("-inf")


def _arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _masks(m):
    """Masks built the same way under numgrad and torch (``m``)."""
    b = np.ones((4, 5), bool)
    b[1] = False  # a row with no key: PyTorch gives 0 there
    b[2, :2] = False
    f = np.zeros((2, 1, 4, 5))
    f[0, 0, 3] = NEG_INF
    f[1, 0, :, 1] = NEG_INF
    f[:, 0, 0, 2] = 0.5
    return {"bool2": m.tensor(b), "float4": m.tensor(f, dtype=m.float32),
            "bool4": m.tensor(np.random.default_rng(3).uniform(size=(2, 3, 4, 5)) > 0.3),
            "bool3": m.tensor(b[None].repeat(3, 0))}


# the op table (op_cases.py) holds scaled_dot_product_attention's variants: masks, causal,
# math-path shapes, empty keys, GQA; here: saved values, double backward, dropout, errors,
# MultiheadAttention and the transformer layers


def test_sdpa_flash_node_shows_pytorchs_saved_values():
    q, k, v = (ng.tensor(a, dtype=ng.float32, requires_grad=True)
               for a in _arrays([(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)]))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    node = out.grad_fn
    assert node.next_functions[0][0] is q.grad_fn or type(node.next_functions[0][0]).__name__ \
        == "AccumulateGrad"
    assert node._saved_query is q and node._saved_is_causal is True
    assert node._saved_dropout_p == 0.0 and node._saved_scale is None
    assert node._saved_attn_mask is None
    assert_close(node._saved_output, out)


@pytest.mark.parametrize("call", ["sdpa(q, k, v)", "sdpa(q, k, v, M['bool4'], is_causal=True)",
                                  "sdpa(q, k, v, enable_gqa=True)"])
def test_sdpa_double_backward(call):
    shapes = [(1, 2, 3, 4), (1, 1, 5, 4), (1, 1, 5, 4)] if "gqa" in call else \
        [(2, 3, 4, 3), (2, 3, 5, 3), (2, 3, 5, 3)]
    arrays = _arrays(shapes, seed=2)
    env = {"sdpa": F.scaled_dot_product_attention, "M": _masks(ng)}

    def fn(q, k, v):
        return eval(call, env, {"q": q, "k": k, "v": v})
    ts = [ng.tensor(a, requires_grad=True) for a in arrays]
    assert type(fn(*ts).grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert ng.autograd.gradcheck(fn, ts)
    assert ng.autograd.gradgradcheck(fn, ts)


@requires_torch
def test_sdpa_fully_masked_rows_are_zero_with_zero_gradients():
    for m in (ng, torch):
        q, k, v = (m.tensor(a, dtype=m.float32, requires_grad=True)
                   for a in _arrays([(3, 4, 8), (3, 5, 8), (3, 5, 8)]))
        mask = m.zeros(4, 5, dtype=m.float32)
        mask[1] = NEG_INF
        out = m.nn.functional.scaled_dot_product_attention(q, k, v, mask)
        out.sum().backward()
        assert (to_numpy(out)[:, 1] == 0).all() and (to_numpy(q.grad)[:, 1] == 0).all()
        for t in (q, k, v):
            assert np.isfinite(to_numpy(t.grad)).all()


def test_sdpa_dropout_distribution_and_scaling():
    """Dropout draws numgrad's own stream (not PyTorch's masks): each attention weight is
    dropped with probability p and the kept ones are scaled by 1 / (1 - p)."""
    n = 64
    q = ng.zeros(1, 1, n, 4)  # uniform attention: every weight is 1/n
    v = ng.eye(n).reshape(1, 1, n, n)
    ng.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q.expand(1, 1, n, 4), v, dropout_p=0.25).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 4 * np.sqrt(0.75 * 0.25 / out.size)
    np.testing.assert_allclose(out[kept], 1 / n / 0.75, rtol=1e-6)
    x = ng.randn(1, 2, 3, 4, requires_grad=True)
    y = F.scaled_dot_product_attention(x, x, x, dropout_p=0.5)
    assert type(y.grad_fn).__name__ != "ScaledDotProductFlashAttentionForCpuBackward0"
    assert (F.scaled_dot_product_attention(x, x, x, dropout_p=1.0).detach().numpy() == 0).all()


SDPA_ERRORS = [
    "sdpa(1, k, v)",
    "sdpa(q, k, v, attn_mask=[1])",
    "sdpa(q, k, v, dropout_p='a')",
    "sdpa(q, k, v, is_causal='a')",
    "sdpa(q, k, v, scale='a')",
    "sdpa(q, k.double(), v)",
    "sdpa(q, k, v, attn_mask=m.zeros(4, 5, dtype=m.float64))",
    "sdpa(q, k, v, attn_mask=m.zeros(4, 5, dtype=m.int64))",
    "sdpa(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])",
    "sdpa(q.long(), k.long(), v.long())",
    "sdpa(q, k, v, dropout_p=1.5)",
    "sdpa(q[0], k[0], v[0], attn_mask=m.ones(4, 5, dtype=m.bool), is_causal=True)",
    "sdpa(q[0], k[0, ..., :6], v[0])",
    "sdpa(q, k[..., :6], v)",
    "sdpa(q[0], k[0], v[0, :, :4])",
    "sdpa(q, k[:1].expand(3, 3, 5, 8), v[:1].expand(3, 3, 5, 8))",
    "sdpa(q, k, v, m.ones(4, 4, dtype=m.bool))",
    "sdpa(q[0], k[0], v[0], m.ones(2, 3, 4, 5, dtype=m.bool))",
    "sdpa(q[:, :2], k, v, enable_gqa=True)",
    "sdpa(q[0, 0], k[0, 0], v[0, 0], enable_gqa=True)",
    "sdpa(q, k, v, dropout_p=-0.5)",
]


@requires_torch
@pytest.mark.parametrize("call", SDPA_ERRORS)
def test_sdpa_errors_match_pytorch(call):
    errors = []
    for m in (ng, torch):
        q, k, v = (m.tensor(a, dtype=m.float32, requires_grad=True)
                   for a in _arrays([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8)]))
        env = {"m": m, "sdpa": m.nn.functional.scaled_dot_product_attention}
        with pytest.raises(Exception) as err:
            eval(call, env, {"q": q, "k": k, "v": v})
        errors.append(err.value)
    assert type(errors[0]) is type(errors[1])
    assert str(errors[0]) == str(errors[1])


# ========================================================================================
# nn.MultiheadAttention
# ========================================================================================


def _pair(cls, *args, **kwargs):
    """The same layer in numgrad and torch: PyTorch's initial values for one seed (checked),
    and then one state dict."""
    ng.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(ng.nn, cls)(*args, **kwargs)
    theirs = getattr(torch.nn, cls)(*args, **kwargs)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        assert tuple(sd[k].shape) == tuple(tsd[k].shape), k
        assert_close(sd[k], tsd[k], rtol=1e-6, atol=1e-7, msg=f"initial {k}")
    return ours, theirs


def _compare_grads(ours, theirs, inputs, tinputs, tol):
    for t, tt in zip(inputs, tinputs):
        assert_close(t.grad, tt.grad, **tol, msg="input grad")
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        tp = tparams[name]
        if tp.grad is None:
            assert p.grad is None or not to_numpy(p.grad).any(), name
        else:
            assert_close(p.grad, tp.grad, **tol, msg=f"grad of {name}")


def _mha_masks(m):
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True
    causal = np.triu(np.ones((4, 5), bool), 1)
    f3 = np.random.default_rng(4).uniform(-1, 1, (8, 4, 5))
    return {"kpm": m.tensor(kpm), "causal": m.tensor(causal),
            "float3": m.tensor(f3, dtype=m.float32),
            "kpm_float": m.tensor(np.where(kpm, -2.0, 0.0), dtype=m.float32),
            "self_causal": m.tensor(np.triu(np.ones((5, 5), bool), 1))}


# (id, constructor kwargs, shapes of query, key, value (None: the query), call)
MHA = [
    ("self_weights", {}, [(5, 2, 8), None, None], "a(x, x, x)"),
    ("self_no_weights", {}, [(5, 2, 8), None, None], "a(x, x, x, need_weights=False)"),
    ("per_head_weights", {}, [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
     "a(x, y, z, average_attn_weights=False)"),
    ("key_padding", {}, [(4, 2, 8), (5, 2, 8), (5, 2, 8)], "a(x, y, z, key_padding_mask=M['kpm'])"),
    ("key_padding_no_weights", {}, [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
     "a(x, y, z, key_padding_mask=M['kpm'], need_weights=False)"),
    ("bool_mask", {}, [(4, 2, 8), (5, 2, 8), (5, 2, 8)], "a(x, y, z, attn_mask=M['causal'])"),
    ("float_mask_3d_and_padding", {}, [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
     "a(x, y, z, M['kpm_float'], attn_mask=M['float3'], need_weights=False)"),
    ("is_causal", {}, [(5, 2, 8), None, None],
     "a(x, x, x, attn_mask=M['self_causal'], is_causal=True, need_weights=False)"),
    ("kdim_vdim", {"kdim": 3, "vdim": 6}, [(4, 2, 8), (5, 2, 3), (5, 2, 6)],
     "a(x, y, z, key_padding_mask=M['kpm'])"),
    ("encoder_decoder", {"batch_first": True}, [(2, 4, 8), (2, 5, 8), None],
     "a(x, y, y, need_weights=False)"),
    ("batch_first_self", {"batch_first": True}, [(2, 5, 8), None, None], "a(x, x, x)"),
    ("bias_kv_zero_attn", {"add_bias_kv": True, "add_zero_attn": True},
     [(4, 2, 8), (5, 2, 8), (5, 2, 8)], "a(x, y, z, key_padding_mask=M['kpm'])"),
    ("no_bias", {"bias": False}, [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
     "a(x, y, z, need_weights=False)"),
    ("unbatched", {}, [(4, 8), (5, 8), (5, 8)], "a(x, y, z, key_padding_mask=M['kpm'][0])"),
]


def _mha_inputs(m, shapes):
    arrays = _arrays([s for s in shapes if s is not None], seed=11)
    ts = [m.tensor(a, dtype=m.float32, requires_grad=True) for a in arrays]
    return ts


def _mha_run(m, module, case, ts):
    x = ts[0]
    y = ts[1] if len(ts) > 1 else x
    z = ts[2] if len(ts) > 2 else y
    return eval(case[3], {"M": _mha_masks(m)}, {"a": module, "x": x, "y": y, "z": z})


@requires_torch
@pytest.mark.parametrize("case", MHA, ids=[c[0] for c in MHA])
def test_multihead_attention_matches_pytorch(case):
    ours, theirs = _pair("MultiheadAttention", 8, 4, **case[1])
    ts, tts = _mha_inputs(ng, case[2]), _mha_inputs(torch, case[2])
    (out, w), (tout, tw) = _mha_run(ng, ours, case, ts), _mha_run(torch, theirs, case, tts)
    tol = {"rtol": 2e-5, "atol": 2e-6}
    assert_close(out, tout, **tol, msg="output")
    assert (w is None) == (tw is None)
    if w is not None:
        assert_close(w, tw, **tol, msg="weights")
    g = np.random.default_rng(8).uniform(0.5, 1.5, size=tuple(tout.shape))
    loss = (out * ng.tensor(g, dtype=ng.float32)).sum()
    tloss = (tout * torch.tensor(g, dtype=torch.float32)).sum()
    if w is not None:
        loss = loss + (w * w).sum()
        tloss = tloss + (tw * tw).sum()
    loss.backward()
    tloss.backward()
    _compare_grads(ours, theirs, ts, tts, {"rtol": 1e-4, "atol": 1e-5})


@requires_torch
def test_multihead_attention_eval_matches_pytorchs_fast_path():
    """In eval mode without grad PyTorch runs a fused kernel: the same numbers."""
    ours, theirs = _pair("MultiheadAttention", 8, 2, batch_first=True, dropout=0.3)
    ours.eval()
    theirs.eval()
    x = _arrays([(2, 5, 8)], seed=3)[0]
    kpm = np.zeros((2, 5), bool)
    kpm[1, 4] = True
    with ng.no_grad():
        out, w = ours(*[ng.tensor(x, dtype=ng.float32)] * 3, key_padding_mask=ng.tensor(kpm))
    with torch.no_grad():
        tx = torch.tensor(x, dtype=torch.float32)
        tout, tw = theirs(tx, tx, tx, key_padding_mask=torch.tensor(kpm))
    assert_close(out, tout, rtol=2e-5, atol=2e-6)
    assert_close(w, tw, rtol=2e-5, atol=2e-6)


@requires_torch
def test_multihead_attention_fully_padded_rows():
    """A batch entry whose keys are all padding: NaN with the weights (plain softmax), as in
    PyTorch; the attention-only path gives zeros there (after the output projection: the
    bias)."""
    ours, theirs = _pair("MultiheadAttention", 8, 2)
    kpm = np.zeros((2, 5), bool)
    kpm[1] = True
    for need in (True, False):
        res = []
        for m, mod in ((ng, ours), (torch, theirs)):
            x = m.tensor(_arrays([(5, 2, 8)], seed=1)[0], dtype=m.float32)
            res.append(mod(x, x, x, key_padding_mask=m.tensor(kpm), need_weights=need)[0])
        assert_close(*res, rtol=2e-5, atol=2e-6)
        assert np.isnan(to_numpy(res[0])[:, 1]).all() == need


MHA_ERRORS = [
    ("nn.MultiheadAttention(0, 2)", ""),
    ("nn.MultiheadAttention(8, 3)", ""),
    ("nn.MultiheadAttention(8, 2)", "a(x[0, 0], x, x)"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x[0], x)"),
    ("nn.MultiheadAttention(8, 2)", "a(x[:, 0], x[:, 0], x[:, 0], key_padding_mask=kpm)"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, key_padding_mask=kpm[0])"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, key_padding_mask=kpm.long())"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, attn_mask=m.zeros(5, 4, dtype=m.bool))"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, attn_mask=m.zeros(3, 5, 5))"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, attn_mask=m.zeros(1, 1, 5, 5))"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, is_causal=True)"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x, x, key_padding_mask=kpm[:, :4])"),
    ("nn.MultiheadAttention(8, 2)", "a(x, x[:4], x)"),
    ("nn.MultiheadAttention(4, 2)", "a(x, x, x)"),
    ("nn.MultiheadAttention(8, 2, kdim=3)", "a(x, x[..., :3], x[:4])"),
    ("nn.TransformerEncoderLayer(8, 2, activation='tanh')", ""),
]


@requires_torch
@pytest.mark.parametrize("make,call", MHA_ERRORS)
def test_attention_module_errors_match_pytorch(make, call):
    errors = []
    for m in (ng, torch):
        env = {"m": m, "nn": m.nn, "x": m.ones(5, 2, 8),
               "kpm": m.zeros(2, 5, dtype=m.bool)}
        with pytest.raises(Exception) as err:
            env["a"] = eval(make, env)
            eval(call, env)
        errors.append(err.value)
    assert type(errors[0]) is type(errors[1])
    assert str(errors[0]) == str(errors[1])


@requires_torch
def test_mismatched_mask_types_warn_as_pytorch():
    messages = []
    for m in (ng, torch):
        a = m.nn.MultiheadAttention(8, 2)
        x = m.ones(5, 2, 8)
        with pytest.warns(UserWarning) as rec:
            a(x, x, x, key_padding_mask=m.zeros(2, 5, dtype=m.bool), attn_mask=m.zeros(5, 5))
        messages.append([str(r.message) for r in rec])
    assert messages[0] == messages[1]


# ========================================================================================
# nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.TransformerDecoderLayer
# ========================================================================================


LAYERS = [
    ("post_norm_relu", {}, "eval"),
    ("pre_norm_gelu", {"activation": "gelu", "norm_first": True}, "train"),
    ("batch_first", {"batch_first": True}, "eval"),
    ("callable_activation", {"activation": "F.silu", "bias": False}, "train"),
    ("module_activation", {"activation": "nn.GELU()", "layer_norm_eps": 1e-3}, "train"),
]


def _layer_kwargs(m, kw):
    kw = dict(kw)
    act = kw.get("activation")
    if act is not None and act not in ("relu", "gelu"):
        kw["activation"] = eval(act, {"F": m.nn.functional, "nn": m.nn})
    return kw


def _layer_pair(cls, kw, mode, *args):
    ng.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(ng.nn, cls)(*args, dropout=0.0, **_layer_kwargs(ng, kw))
    theirs = getattr(torch.nn, cls)(*args, dropout=0.0, **_layer_kwargs(torch, kw))
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        assert_close(sd[k], tsd[k], rtol=1e-6, atol=1e-7, msg=f"initial {k}")
    assert repr(ours) == repr(theirs)
    ours.train(mode == "train")
    theirs.train(mode == "train")
    return ours, theirs


def _check_layer(ours, theirs, run, batch_first=False):
    outs = []
    for m, mod in ((ng, ours), (torch, theirs)):
        x = m.tensor(_arrays([(2, 5, 8) if batch_first else (5, 2, 8)], seed=9)[0],
                     dtype=m.float32, requires_grad=True)
        kpm = np.zeros((2, 5), bool)
        kpm[0, 4] = True
        causal = m.tensor(np.triu(np.ones((5, 5), bool), 1))  # True: masked out
        out = run(mod, x, m.tensor(kpm), causal)
        g = np.random.default_rng(8).uniform(0.5, 1.5, size=tuple(out.shape))
        (out * m.tensor(g, dtype=m.float32)).sum().backward()
        outs.append((out, x))
    (out, x), (tout, tx) = outs
    assert_close(out, tout, rtol=2e-5, atol=3e-6, msg="output")
    _compare_grads(ours, theirs, [x], [tx], {"rtol": 2e-4, "atol": 2e-5})


@requires_torch
@pytest.mark.parametrize("case", LAYERS, ids=[c[0] for c in LAYERS])
def test_transformer_encoder_layer_matches_pytorch(case):
    ours, theirs = _layer_pair("TransformerEncoderLayer", case[1], case[2], 8, 2, 16)
    bf = case[0] == "batch_first"
    _check_layer(ours, theirs, lambda mod, x, kpm, causal: mod(
        x, src_mask=causal, src_key_padding_mask=kpm), bf)
    _check_layer(ours, theirs, lambda mod, x, kpm, causal: mod(x, causal, is_causal=True), bf)


@requires_torch
@pytest.mark.parametrize("case", LAYERS[:2], ids=[c[0] for c in LAYERS[:2]])
def test_transformer_encoder_matches_pytorch(case):
    layer, tlayer = _layer_pair("TransformerEncoderLayer", case[1], case[2], 8, 2, 16)
    warned = []
    for m, lay in ((ng, layer), (torch, tlayer)):
        with pytest.warns(UserWarning, match="enable_nested_tensor is True") as rec:
            made = m.nn.TransformerEncoder(lay, 3, norm=m.nn.LayerNorm(8))
        warned.append([str(r.message) for r in rec])
    assert warned[0] == warned[1]
    theirs = made
    ours = ng.nn.TransformerEncoder(layer, 3, norm=ng.nn.LayerNorm(8), enable_nested_tensor=False)
    ours.train(case[2] == "train")
    theirs.train(case[2] == "train")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.layers[0] is not layer and ours.layers[0].linear1.weight is not \
        ours.layers[1].linear1.weight
    assert repr(ours) == repr(theirs)
    _check_layer(ours, theirs, lambda mod, x, kpm, causal: mod(
        x, mask=causal, src_key_padding_mask=kpm))
    _check_layer(ours, theirs, lambda mod, x, kpm, causal: mod(x, causal))
    ml = [m.nn.ModuleList([m.nn.ReLU(), m.nn.ReLU(), m.nn.Tanh()]) for m in (ng, torch)]
    assert repr(ml[0]) == repr(ml[1])


@requires_torch
def test_transformer_encoder_batch_first_eval_without_padding():
    layer, tlayer = _layer_pair("TransformerEncoderLayer", {"batch_first": True}, "eval",
                                8, 2, 16)
    ours, theirs = ng.nn.TransformerEncoder(layer, 2), torch.nn.TransformerEncoder(tlayer, 2)
    ours.eval()
    theirs.eval()
    _check_layer(ours, theirs, lambda mod, x, kpm, causal: mod(x, causal), True)


@requires_torch
@pytest.mark.parametrize("case", LAYERS[:2] + LAYERS[3:4], ids=[c[0] for c in LAYERS[:2]
                                                             + LAYERS[3:4]])
def test_transformer_decoder_layer_matches_pytorch(case):
    ours, theirs = _layer_pair("TransformerDecoderLayer", case[1], case[2], 8, 2, 16)
    mem = _arrays([(3, 2, 8)], seed=12)[0]

    def run(mod, x, kpm, causal):
        m = ng if isinstance(x, ng.Tensor) else torch
        return mod(x, m.tensor(mem, dtype=m.float32), tgt_mask=causal,
                   memory_key_padding_mask=m.zeros(2, 3, dtype=m.bool), tgt_is_causal=True)
    _check_layer(ours, theirs, run)


def test_transformer_encoder_layer_double_backward_and_finite_differences():
    ng.manual_seed(0)
    layer = ng.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu").double()
    x = ng.randn(3, 2, 4, dtype=ng.float64, requires_grad=True)
    kpm = ng.tensor([[False, False, True], [False, False, False]])
    assert ng.autograd.gradcheck(lambda t: layer(t, src_key_padding_mask=kpm), [x])
    attn = ng.nn.MultiheadAttention(4, 2).double()
    assert ng.autograd.gradgradcheck(lambda t: attn(t, t, t, need_weights=False)[0], [x])
    assert ng.autograd.gradgradcheck(lambda t: attn(t, t, t)[1], [x])


def test_transformer_encoder_clones_and_state_dict_keys():
    with pytest.warns(UserWarning):
        enc = ng.nn.TransformerEncoder(ng.nn.TransformerEncoderLayer(8, 2, 16), 2)
    keys = list(enc.state_dict())
    assert keys[:4] == ["layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias",
                        "layers.0.self_attn.out_proj.weight", "layers.0.self_attn.out_proj.bias"]
    assert len(keys) == 24 and keys[-1] == "layers.1.norm2.bias"
    p0 = enc.layers[0].self_attn.in_proj_weight
    p1 = enc.layers[1].self_attn.in_proj_weight
    assert p0 is not p1 and (p0.detach().numpy() == p1.detach().numpy()).all()
    assert type(enc.layers[0].self_attn.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert isinstance(enc.layers[0].self_attn.out_proj, ng.nn.Linear)
    copied = copy.deepcopy(enc)
    assert copied.layers[0].linear1.weight is not enc.layers[0].linear1.weight


# ========================================================================================
# nn.ParameterList, nn.ParameterDict
# ========================================================================================


@requires_torch
def test_parameter_list_and_dict_match_pytorch():
    made = []
    for m in (ng, torch):
        pl = m.nn.ParameterList([m.zeros(2, 3), m.nn.Parameter(m.ones(4)), "x"])
        pl.append(m.ones(1))
        pl += [m.zeros(2)]
        pd = m.nn.ParameterDict({"b": m.zeros(2), "a": m.ones(3, 1)})
        pd["c"] = m.ones(5)
        pd.update([("d", m.zeros(1))])
        holder = m.nn.Module()
        holder.pl, holder.pd = pl, pd
        made.append((pl, pd, holder))
    (pl, pd, holder), (tpl, tpd, tholder) = made
    assert repr(holder) == repr(tholder)
    assert list(holder.state_dict()) == list(tholder.state_dict())
    assert [n for n, _ in holder.named_parameters()] == \
        [n for n, _ in tholder.named_parameters()]
    assert len(pl) == len(tpl) == 5 and isinstance(pl[0], ng.nn.Parameter) and pl[2] == "x"
    assert len(pl[1:3]) == 2 and pl[-1] is pl[4]
    assert list(pd) == list(tpd) and list(pd.keys()) == ["a", "b", "c", "d"]
    assert pd.pop("c").shape == (5,) and "c" not in pd and len(pd) == 3
    assert pd.get("zz") is None and pd.setdefault("e", None) is None
    for m, (a, b) in ((ng, (pl, pd)), (torch, (tpl, tpd))):
        with pytest.raises(IndexError, match="index 9 is out of range"):
            a[9]
        with pytest.raises(TypeError, match="ParameterList.extend should be called"):
            a.extend(m.ones(2))
        with pytest.raises(RuntimeError, match="ParameterList should not be called."):
            a(1)
        with pytest.raises(TypeError, match="not a string"):
            b[1] = m.ones(1)
        with pytest.raises(ValueError, match="has length 1; 2 is required"):
            b.update([("q",)])
    x = ng.ones(3, requires_grad=True)
    (pd["a"].sum() * x).sum().backward()
    assert pd["a"].grad is not None
