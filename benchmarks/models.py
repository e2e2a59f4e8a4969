"""The models of the model workloads (``workloads.py``, rows 8-12), written once against the
PyTorch API: ``m`` is the library module (``numgrad`` or ``torch``), so the same code builds
the same model in both, with the same initial weights under the same ``m.manual_seed``.

* ``GPT``: a character-level GPT in the nanoGPT layout (token and position embeddings,
  pre-LayerNorm blocks of causal self-attention and a 4x GELU MLP, a final LayerNorm, the
  output head's weight tied to the token embedding), with the attention either
  ``F.scaled_dot_product_attention(is_causal=True)`` or written out with a registered
  causal-mask buffer; ``gpt_optimizer`` is its AdamW with weight decay on the 2-D weights.
* ``CharLSTM``: embedding, a 2-layer ``nn.LSTM``, a linear head.
* ``EncoderClassifier``: ``nn.TransformerEncoder`` and a linear head on the sequence mean.
"""

import math


def gpt(m, vocab=65, n_layer=4, n_head=4, n_embd=128, block_size=64, attention="sdpa"):
    """A GPT with its weights initialised as nanoGPT does: N(0, 0.02) for linear and
    embedding weights, zero biases, N(0, 0.02 / sqrt(2 * n_layer)) for the two projections
    that write into the residual stream."""
    nn, F = m.nn, m.nn.functional
    if attention not in ("sdpa", "manual"):
        raise ValueError(f"attention: 'sdpa' or 'manual', not {attention!r}")
    head_size = n_embd // n_head

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # q, k and v side by side
            self.c_proj = nn.Linear(n_embd, n_embd)
            if attention == "manual":
                causal = m.tril(m.ones(block_size, block_size))
                self.register_buffer("bias", causal.view(1, 1, block_size, block_size))

        def forward(self, x):
            B, T, C = x.size()
            heads = [t.view(B, T, n_head, head_size).transpose(1, 2)
                     for t in self.c_attn(x).split(n_embd, dim=2)]
            q, k, v = heads
            if attention == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_size))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                att = F.softmax(att, dim=-1)
                y = att @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = SelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = FeedForward()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.block_size = block_size
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight  # tied: one parameter
            for mod in self.modules():
                if isinstance(mod, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(mod.weight, mean=0.0, std=0.02)
                if isinstance(mod, nn.Linear) and mod.bias is not None:
                    nn.init.zeros_(mod.bias)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

        def forward(self, idx):
            T = idx.size(1)
            pos = m.arange(0, T, dtype=m.long)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def gpt_optimizer(m, model, lr=3e-4, weight_decay=0.1, betas=(0.9, 0.95)):
    """AdamW with two groups: the 2-D weights (linear, embedding) decay, the biases and
    LayerNorm parameters do not."""
    params = [p for _, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return m.optim.AdamW(groups, lr=lr, betas=betas)


def char_lstm(m, vocab=65, embed=64, hidden=256, num_layers=2):
    nn = m.nn

    class CharLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, embed)
            self.lstm = nn.LSTM(embed, hidden, num_layers=num_layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, idx):
            out, _ = self.lstm(self.embed(idx))
            return self.head(out)

    return CharLSTM()


def encoder_classifier(m, d_model=128, nhead=4, dim_feedforward=512, num_layers=2,
                       classes=10, dropout=0.1):
    nn = m.nn

    class EncoderClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead,
                                               dim_feedforward=dim_feedforward,
                                               dropout=dropout, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers)
            self.head = nn.Linear(d_model, classes)

        def forward(self, x):
            return self.head(self.encoder(x).mean(dim=1))

    return EncoderClassifier()
