"""Train a tiny character-level GPT on a short story shipped with numgrad, then let it write.

    python -m numgrad.examples.gpt                 # 600 steps, about a minute on 2 cores
    python -m numgrad.examples.gpt --steps 100 --attention manual

This file is PyTorch code: change its one import to ``import torch`` and it runs under
PyTorch, printing the same losses and the same sample for the same seed
(``tests/test_programs.py`` runs it both ways and compares). Progress bars need tqdm
(``pip install "numgrad[demo]"``).
"""

import argparse
import math
import os
import time

import numgrad as torch

nn = torch.nn
F = torch.nn.functional

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "lanterns.txt")


class Config:
    def __init__(self, vocab_size, block_size=32, n_embd=64, n_head=4, n_layer=2,
                 dropout=0.0, attention="sdpa"):
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.n_embd = n_embd
        self.n_head = n_head
        self.n_layer = n_layer
        self.dropout = dropout
        self.attention = attention  # "sdpa": F.scaled_dot_product_attention; "manual": tril mask


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.attention = cfg.attention
        self.dropout = cfg.dropout
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.resid_drop = nn.Dropout(cfg.dropout)
        causal = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
        self.register_buffer("causal", causal.view(1, 1, cfg.block_size, cfg.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, heads, T, C / heads)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.causal[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.n_embd, 4 * cfg.n_embd),
            nn.GELU(),
            nn.Linear(4 * cfg.n_embd, cfg.n_embd),
            nn.Dropout(cfg.dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} is longer than the block size")
        pos = torch.arange(T, dtype=torch.long)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizer(self, lr, weight_decay=0.1):
        """AdamW with weight decay on the matrices only (not on biases, norms or positions)."""
        decay = [p for n, p in self.named_parameters() if p.dim() >= 2 and "pos_emb" not in n]
        rest = [p for n, p in self.named_parameters() if p.dim() < 2 or "pos_emb" in n]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": rest, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            context = idx[:, -self.cfg.block_size:]
            logits, _ = self(context)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


class CharCodec:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        return [self.index[c] for c in s]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def get_batch(data, block_size, batch_size):
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x, y


def steps_with_progress(steps, quiet):
    if quiet:
        return range(steps)
    try:
        from tqdm import trange
    except ImportError:
        return range(steps)
    return trange(steps, ncols=96, desc="training")


def train(model, data, steps, batch_size=16, lr=3e-3, quiet=True):
    """AdamW steps with gradient clipping; returns the loss of every step."""
    opt = model.configure_optimizer(lr)
    model.train()
    losses = []
    bar = steps_with_progress(steps, quiet)
    for _ in bar:
        x, y = get_batch(data, model.cfg.block_size, batch_size)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"loss {loss.item():.4f}")
    return losses


def sample(model, codec, prompt, n, top_k=10):
    model.eval()
    idx = torch.tensor([codec.encode(prompt)], dtype=torch.long)
    return codec.decode(model.generate(idx, n, top_k=top_k)[0].tolist())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--attention", choices=["sdpa", "manual"], default="sdpa")
    parser.add_argument("--chars", type=int, default=300, help="length of the sample")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    with open(TEXT, encoding="utf-8") as fh:
        text = fh.read()
    codec = CharCodec(text)
    data = torch.tensor(codec.encode(text), dtype=torch.long)
    model = GPT(Config(len(codec.chars), attention=args.attention))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(text)} characters, vocabulary of {len(codec.chars)}, {n_params} parameters")
    start = time.perf_counter()
    losses = train(model, data, args.steps, quiet=args.quiet)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {args.steps} steps "
          f"({time.perf_counter() - start:.1f} s)")
    print("--- sample ---")
    print(sample(model, codec, "The ", args.chars))
    return losses


if __name__ == "__main__":
    main()
