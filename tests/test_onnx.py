"""numgrad.onnx.export: models exported from numgrad's trace run in onnxruntime with
numgrad's numbers; the onnx checker accepts them; dynamic axes; clear errors."""

import io
import math
import sys
import warnings

import numpy as np
import pytest

import numgrad as ng
import numgrad.nn as nn
import numgrad.nn.functional as F
import numgrad.onnx
from numgrad.onnx import (
    OnnxExporterError,
    OnnxExporterWarning,
    TrainingMode,
    UnsupportedOperatorError,
)


def _deps():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    return onnx, ort


def _leaves(x):
    if isinstance(x, ng.Tensor):
        return [x]
    if x is None:
        return []
    return [u for v in x for u in _leaves(v)]


def export_and_run(model, args, others=(), **kw):
    """Export ``model`` on ``args``, check the model, run it in onnxruntime on ``args`` and
    on each of ``others``, and compare with numgrad's outputs; returns the ModelProto."""
    onnx, ort = _deps()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error", OnnxExporterWarning)
        assert ng.onnx.export(model, args, f, **kw) is None
    proto = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    sess = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    for a in (args, *others):
        feed = {n: t.numpy() for n, t in zip(names, _leaves(a))}
        got = sess.run(None, feed)
        with ng.no_grad():
            want = _leaves(model(*a))
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
    return proto


def test_import_without_onnx_and_export_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if not installed
    with pytest.raises(ImportError, match=r"numgrad\[onnx\]"):
        ng.onnx.export(nn.Linear(2, 2), ng.randn(1, 2), io.BytesIO())
    assert ng.onnx is numgrad.onnx and not ng.onnx.is_in_onnx_export()


def test_mlp_dynamic_batch_and_param_names():
    _deps()
    ng.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3),
                          nn.Tanh(), nn.Linear(3, 2), nn.LogSoftmax(dim=1))
    ng.onnx.export(model, ng.randn(5, 4), None)  # traced in eval mode by default ...
    assert model.training  # ... and the mode is restored
    model.eval()
    proto = export_and_run(model, (ng.randn(5, 4),), [(ng.randn(2, 4),), (ng.randn(1, 4),)],
                           input_names=["x"], output_names=["logp"],
                           dynamic_axes={"x": {0: "batch"}, "logp": [0]})
    assert {i.name for i in proto.graph.initializer} >= {"0.weight", "0.bias", "5.weight"}
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 4]
    out_dim = proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param
    assert out_dim == "logp_dynamic_axes_1"
    ops = {n.op_type for n in proto.graph.node}
    assert "Gemm" in ops and "Dropout" not in ops


def test_keyword_tensors_are_inputs_and_the_callers_tensors_stay_unchanged():
    _, ort = _deps()

    def fn(x, i, *, scale):
        x += 1
        i += 1
        return x * scale + i

    x, i, scale = ng.randn(2, 3), ng.randint(0, 4, (2, 3)), ng.randn(3)
    x0, i0 = x.clone(), i.clone()
    proto = ng.onnx.export(fn, (x, i, {"scale": scale}), None)
    assert ng.equal(x, x0) and ng.equal(i, i0)
    assert [v.name for v in proto.graph.input] == ["x", "i", "scale"]
    got = ort.InferenceSession(proto.SerializeToString()).run(
        None, {"x": x.numpy(), "i": i.numpy(), "scale": (scale * 2).numpy()})[0]
    np.testing.assert_allclose(got, fn(x0.clone(), i0.clone(), scale=scale * 2).numpy(),
                               rtol=1e-6)


def test_mlp_export_params_false_and_proto_return():
    onnx, ort = _deps()
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 1))
    x = ng.randn(2, 3)
    proto = ng.onnx.export(model, x, None, export_params=False, opset_version=14)
    onnx.checker.check_model(proto)
    assert not proto.graph.initializer or all(
        i.name not in dict(model.state_dict()) for i in proto.graph.initializer)
    sess = ort.InferenceSession(proto.SerializeToString())
    feed = {"input": x.numpy(), **{k: v.numpy() for k, v in model.state_dict().items()}}
    np.testing.assert_allclose(sess.run(None, feed)[0], model(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2, bias=False)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.conv1d = nn.Conv1d(3, 2, 3, padding="same")
        self.fc = nn.Linear(6, 5)

    def forward(self, x):
        y = self.pool(F.relu(self.bn(self.conv(x))))
        y = self.gap(self.conv2(y)).flatten(1)
        z = self.conv1d(x.mean(dim=2)).sum(dim=(1, 2))
        side = F.pad(F.avg_pool2d(x, 2), (1, 0, 2, 1), value=0.5).view(x.shape[0], -1)
        return F.softmax(self.fc(y), dim=1) + z.unsqueeze(1) * 0.1, side


@pytest.mark.parametrize("opset", [14, 20])
def test_small_cnn_in_eval_mode(tmp_path, opset):
    ng.manual_seed(1)
    model = SmallCNN().eval()
    model.bn.running_mean.uniform_(-1, 1)
    model.bn.running_var.uniform_(0.5, 2)
    proto = export_and_run(model, (ng.randn(2, 3, 8, 8),), [(ng.randn(3, 3, 8, 8),)],
                           input_names=["image"], dynamic_axes={"image": [0]},
                           opset_version=opset)
    inits = {i.name for i in proto.graph.initializer}
    assert {"conv.weight", "bn.running_mean", "bn.running_var", "fc.bias"} <= inits
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "BatchNormalization", "MaxPool", "GlobalAveragePool",
            "AveragePool"} <= ops
    path = tmp_path / "cnn.onnx"  # a path, as in the examples
    ng.onnx.export(model, ng.randn(1, 3, 8, 8), str(path))
    assert path.stat().st_size > 0


class AttentionBlock(nn.Module):
    def __init__(self, vocab=11, d=8, heads=2, t=5):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(ng.randn(t, d))
        self.ln = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
        self.act = nn.GELU()
        self.heads = heads
        self.register_buffer("future", ng.ones(t, t).triu(1).bool())  # True: masked out

    def forward(self, idx):
        B, T = idx.shape
        x = self.ln(self.tok(idx) + self.pos[:T])
        q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
        q, k, v = (u.view(B, T, self.heads, -1).transpose(1, 2) for u in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, -1)
        a, w = self.mha(y, x, x, attn_mask=self.future[:T, :T])
        return self.act(a + y)[:, -1, :], w


@pytest.mark.parametrize("opset", [14, 17, 20])
def test_embedding_layernorm_attention_block(opset):
    ng.manual_seed(2)
    model = AttentionBlock().eval()
    idx = ng.randint(0, 11, (2, 5))
    proto = export_and_run(model, (idx,), [(ng.randint(0, 11, (4, 5)),)],
                           input_names=["idx"], output_names=["h", "weights"],
                           dynamic_axes={"idx": {0: "batch"}, "h": {0: "batch"},
                                         "weights": {0: "batch"}}, opset_version=opset)
    ops = {n.op_type for n in proto.graph.node}
    assert {"Gather", "Softmax", "MatMul"} <= ops
    assert ("LayerNormalization" in ops) == (opset >= 17)
    assert ("Gelu" in ops) == (opset >= 20)


def test_lstm_and_gru():
    ng.manual_seed(3)
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True).eval()
    export_and_run(lstm, (ng.randn(2, 5, 3),), [(ng.randn(3, 5, 3),)],
                   input_names=["x"], dynamic_axes={"x": [0]})
    gru = nn.GRU(3, 4, num_layers=2).eval()
    export_and_run(gru, (ng.randn(5, 2, 3), ng.randn(2, 2, 4)))

    cell, gcell = nn.LSTMCell(3, 4), nn.GRUCell(4, 2)

    def unrolled(x):  # a hand-written loop over the steps
        state, outs = None, []
        for t in range(x.shape[0]):
            state = cell(x[t], state)
            outs.append(gcell(state[0]))
        return ng.stack(outs), state[1]

    export_and_run(unrolled, (ng.randn(3, 2, 3),))


class WordLM(nn.Module):
    """The shape of PyTorch's word-language-model example (``RNNModel``)."""

    def __init__(self, ntoken=20):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, 6)
        self.rnn = nn.LSTM(6, 5, 2, dropout=0.2)
        self.decoder = nn.Linear(5, ntoken)
        self.ntoken = ntoken

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.rms = nn.RMSNorm(4)
        self.shuffle = nn.PixelShuffle(2)
        self.pool = nn.AdaptiveAvgPool2d((None, 2))

    def forward(self, x):
        y = self.inorm(self.gn(x))
        y = self.rms(y.transpose(1, 3)).transpose(1, 3)
        return self.pool(self.shuffle(y))


def test_group_instance_rms_norms():
    ng.manual_seed(4)
    model = Norms().eval()
    model.gn.weight.data.uniform_(0.5, 2)
    model.inorm.bias.data.uniform_(-1, 1)
    export_and_run(model, (ng.randn(2, 4, 3, 4),), [(ng.randn(1, 4, 3, 4),)],
                   input_names=["x"], dynamic_axes={"x": [0]})


# nanoGPT's shapes: hand-written attention with a masked_fill from a buffer, NewGELU with
# pow, tied embedding and head weights, positions from arange, x[:, [-1], :]
class NewGELU(nn.Module):
    def forward(self, x):
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + ng.tanh(k * (x + 0.044715 * ng.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.n_head = H
        self.register_buffer("bias", ng.tril(ng.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (u.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for u in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class GPT(nn.Module):
    def __init__(self, V=13, C=8, T=6):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.ln = nn.LayerNorm(C)
        self.attn = CausalSelfAttention(C, 2, T)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), NewGELU(), nn.Linear(4 * C, C))
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        b, t = idx.size()
        pos = ng.arange(0, t, dtype=ng.long)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln(x))
        x = x + self.mlp(x)
        return self.lm_head(self.ln_f(x)[:, [-1], :]), x[:, ng.tensor([0, 2])]


def test_nanogpt_style_model():
    model = GPT().eval()
    proto = export_and_run(model, (ng.randint(0, 13, (2, 6)),), [(ng.randint(0, 13, (3, 6)),)],
                           input_names=["idx"], dynamic_axes={"idx": [0]})
    names = [i.name for i in proto.graph.initializer]
    assert ("wte.weight" in names) != ("lm_head.weight" in names)  # tied: stored once


class Decoder(nn.Module):  # a U-Net's up path
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1)
        self.up1d = nn.ConvTranspose1d(2, 1, 4, stride=3, padding=2)

    def forward(self, x):
        a = self.up(x)
        b = F.interpolate(x, scale_factor=2, mode="bilinear")
        c = F.interpolate(x, size=a.shape[2:], mode="nearest")
        d = F.interpolate(x, size=(3, 2), mode="bilinear", align_corners=True)
        return ng.cat([a, b, c], 1), d, self.up1d(x.mean(3))


def test_transposed_conv_and_interpolate():
    export_and_run(Decoder().eval(), (ng.randn(2, 2, 3, 5),), [(ng.randn(1, 2, 3, 5),)],
                   input_names=["x"], dynamic_axes={"x": [0]})


def test_word_language_model():
    model = WordLM().eval()
    hidden = (ng.zeros(2, 3, 5), ng.randn(2, 3, 5))
    proto = export_and_run(model, (ng.randint(0, 20, (7, 3)), hidden))
    assert [i.name for i in proto.graph.input] == ["input", "input_1", "input_2"]
    assert "rnn.weight_ih_l1" in {i.name for i in proto.graph.initializer}


class ShapeOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()
        self.act = nn.Sequential(nn.SiLU(), nn.LeakyReLU(0.2), nn.Softplus())

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        y = ng.stack([a, b], dim=0).amax(dim=0)
        y = ng.where(y > 0, y, y * 0.5).masked_fill(y < -1, 0.0)
        y = y.narrow(1, 0, 1).expand(2, -1, 3).repeat(1, 1, 2)
        z = self.act(x.unsqueeze(0).squeeze(0)) - 1.0
        z = 2.0 / (z.abs() + 1) ** 2 + x[..., 1:].sum(-1, keepdim=True).mean()
        return self.flat(y), ng.cat([z, -z], 1).permute(1, 0).t(), \
            (x[:, None, ::2] != 0).float()


def reductions(x):
    v, i = x.max(dim=1, keepdim=True)
    w, j = ng.min(x, 0)
    c = x > 0
    y = x.where(c, x * 0.1) + ng.where(c, 1.0, x).sum(axis=1, keepdims=True)
    y = y + x.pow(exponent=2) + ng.mm(x, mat2=x.t()).mean(1, True) + x.clamp(-0.5, 0.5)
    return v + x.max() + y + ng.maximum(x, x * 2), i, w, j, x.argmax(), x.argmin(1)


def casts_and_likes(x, i):
    y = x.detach() * 2 + ng.zeros_like(x) + ng.full_like(x, 0.5) + ng.tensor([1.0, 2.0, 3.0])
    ng.relu_(y)
    z = (i.byte().short() + ng.ones_like(i)).cpu()
    return y + ng.as_tensor(x), z, x.type(ng.float64), x.T + x.data.T, i.mT * 2


def floor_mod_bits(x, i):
    j = i - 3
    return (x // 0.7, x % 0.7, -x % 2, 5 % x, abs(x), +x, j // 2, j % 3, 7 // (j + 10),
            j % -4, (i > 1) ^ (i < 3), (i > 1) & (i < 3), j & 6, j | 1, j ^ 5, ~j, ~(i > 2),
            ng.logical_xor(i, j), ng.logical_not(j))


def test_shape_and_elementwise_ops():
    # (no warning: the values an op reads inside itself, a zero-divisor check, are its own)
    export_and_run(floor_mod_bits, (ng.randn(3, 4) * 3, ng.randint(0, 6, (3, 4))))
    export_and_run(casts_and_likes, (ng.randn(2, 3), ng.randint(0, 5, (2, 3))),
                   [(ng.randn(4, 3), ng.randint(0, 5, (4, 3)))], input_names=["x", "i"],
                   dynamic_axes={"x": [0], "i": [0]})
    with pytest.raises(UnsupportedOperatorError, match="'aten::rand_like'"):
        ng.onnx.export(lambda x: x + ng.rand_like(x), ng.randn(2), io.BytesIO())
    export_and_run(ShapeOps(), (ng.randn(3, 4),))
    export_and_run(reductions, (ng.randn(3, 4),), opset_version=17)
    export_and_run(lambda x: (x.narrow(1, -2, 2), x[:, :0].reshape(0, 2), x[[0, 1, 0]],
                              x[..., [[4], [0]]]), (ng.randn(2, 5),))


def test_unsupported_ops_raise_a_clear_error():
    _deps()

    class Cumsum(nn.Module):
        def forward(self, x):
            return ng.cumsum(x, 0) + x

    with pytest.raises(UnsupportedOperatorError) as e:
        ng.onnx.export(Cumsum(), ng.randn(3), io.BytesIO())
    assert str(e.value) == ("Exporting the operator 'aten::cumsum' to ONNX opset version 20 "
                            "is not supported")
    with pytest.raises(UnsupportedOperatorError, match="added in version 19"):
        ng.onnx.export(lambda x: F.pad(x, (1, 1), mode="circular"), ng.randn(1, 2, 4),
                       io.BytesIO(), opset_version=18)
    with pytest.raises(UnsupportedOperatorError, match="aten::dropout.*training mode"):
        ng.onnx.export(nn.Dropout(), ng.randn(2, 4), io.BytesIO(),
                       training=TrainingMode.TRAINING)
    with pytest.raises(UnsupportedOperatorError, match="'aten::getitem'.*masks"):
        ng.onnx.export(lambda x: x[x > 0], ng.randn(3, 2), io.BytesIO())
    with pytest.raises(UnsupportedOperatorError, match="'aten::getitem'.*several"):
        ng.onnx.export(lambda x: x[[0, 2], [1, 1]], ng.randn(3, 2), io.BytesIO())
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 9"):
        ng.onnx.export(nn.ReLU(), ng.randn(2), io.BytesIO(), opset_version=9)


def test_untraced_computation_and_python_reads():

    class Double(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Custom(nn.Module):
        def forward(self, x):
            return Double.apply(x) + 1

    export_and_run(Custom(), (ng.randn(3),))  # traced through the Function's forward

    from numgrad.ops.registry import REGISTRY

    class Hidden(nn.Module):  # an op reached without going through numgrad's namespaces
        def forward(self, x):
            return REGISTRY["exp"].fn(x) + 1

    with pytest.raises(OnnxExporterError, match=r"\(ExpBackward0\) .* did not record"):
        ng.onnx.export(Hidden(), ng.randn(3), io.BytesIO())

    class Branchy(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x * 3

    with pytest.warns(OnnxExporterWarning, match=r"bool\(\)"):
        ng.onnx.export(Branchy(), ng.ones(3), io.BytesIO())


def test_in_place_ops():
    class Writes(nn.Module):  # in place on the input and on results: exported
        def forward(self, x):
            x += 1
            y = x * 2
            y.mul_(3)
            return F.relu(y, inplace=True)

    export_and_run(Writes(), (ng.randn(2, 3),))

    class Assigns(nn.Module):
        def forward(self, x):
            y = x * 1
            y[0] = 5.0
            return y

    class ThroughView(nn.Module):  # the graph would miss the write into y through z
        def forward(self, x):
            y = x * 1
            y[:, 0].mul_(2)
            return y

    _deps()
    with pytest.raises(UnsupportedOperatorError, match="'aten::setitem'"):
        ng.onnx.export(Assigns(), ng.randn(2, 3), io.BytesIO())
    with pytest.raises(UnsupportedOperatorError, match="'aten::mul_'.*shares its memory"):
        ng.onnx.export(ThroughView(), ng.randn(2, 3), io.BytesIO())


def test_the_recording_leaves_numgrad_as_it_was():
    _deps()
    spaces = (ng, F, ng.Tensor, nn.MaxPool2d, nn.LSTM, nn.GRU)
    # (built first: its initialisation imports numgrad._random_fill, a new name in numgrad)
    relu = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).activation
    before = [dict(vars(o)) for o in spaces]

    class Fails(nn.Module):
        def forward(self, x):
            return F.relu(x) + ng.ones(4)  # a shape error in the middle of the trace

    with pytest.raises(RuntimeError):
        ng.onnx.export(Fails(), ng.randn(3), io.BytesIO())
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).eval()
    ng.onnx.export(nn.Sequential(nn.MaxPool2d(2), nn.Flatten()), ng.randn(1, 1, 4, 4), None)
    ng.onnx.export(layer, ng.randn(3, 1, 8), None)
    after = [dict(vars(o)) for o in spaces]
    for b, a in zip(before, after):
        assert b.keys() == a.keys()
        assert all(b[k] is a[k] for k in b)
    assert layer.activation is relu is F.relu


def test_the_recording_sees_only_its_own_threads_ops():
    import threading

    from numgrad.onnx._record import Recorder
    with Recorder() as rec:
        t = threading.Thread(target=lambda: ng.ones(2).add(1))
        t.start()
        t.join()
        ng.ones(2).mul(2)
    assert [c.name for c in rec.calls] == ["mul"]
