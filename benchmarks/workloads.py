"""The benchmark workloads, each written once for every library that can run it.

``WORKLOADS[name](lib)`` builds the inputs outside the timed region and returns a callable
that runs one iteration (forward + backward unless said), or None when ``lib`` cannot run
that workload. Libraries: "numgrad", "torch" and, on the small workloads, HIPS "autograd"
and "mygrad" when they are installed.
"""

import importlib.util
import sys

import numpy as np

LIBS = ("numgrad", "torch", "autograd", "mygrad")


COMPILED = {"numgrad.compile": "numgrad", "torch.compile": "torch", "jax.jit": "jax",
            "numgrad.compile fwd": "numgrad", "torch.compile fwd": "torch"}


def available(lib):
    return importlib.util.find_spec(COMPILED.get(lib, lib)) is not None


def module(lib):
    if lib == "numgrad":
        import numgrad
        return numgrad
    if lib == "torch":
        import torch
        return torch
    return None


def _rng():
    return np.random.default_rng(0)


def _forward(compile_forward, fn):
    """``fn``, or ``fn`` compiled in the forward form (the loss or the model; its backward
    runs as one node)."""
    return fn if compile_forward is None else compile_forward(fn)


# 1 --------------------------------------------------------------------------------------
def seeds_5x5(lib, forward=None):
    xs, ys = _rng().random((5, 5)), _rng().random((5, 5)) + 1
    if lib in ("numgrad", "torch"):
        m = module(lib)
        x = m.tensor(xs, dtype=m.float32, requires_grad=True)
        y = m.tensor(ys, dtype=m.float32, requires_grad=True)
        loss = _forward(forward, lambda: (x ** 2 + y ** 3).sum())

        def run():
            z = loss()
            z.backward()
        return run
    if lib == "autograd":
        from autograd import grad
        g = grad(lambda a, b: (a ** 2 + b ** 3).sum(), argnum=(0, 1))
        xa, ya = xs.astype(np.float32), ys.astype(np.float32)
        return lambda: g(xa, ya)
    if lib == "mygrad":
        import mygrad as mg
        x, y = mg.tensor(xs.astype(np.float32)), mg.tensor(ys.astype(np.float32))

        def run():
            z = (x ** 2 + y ** 3).sum()
            z.backward()
        return run
    return None


# 2 --------------------------------------------------------------------------------------
def seeds_2x2(lib, forward=None):
    if lib in ("numgrad", "torch"):
        m = module(lib)
        x = m.ones(2, 2, requires_grad=True)

        def loss():
            y = x + 2
            z = y * y * 3
            return z.mean()
        loss = _forward(forward, loss)

        def run():
            out = loss()
            out.backward()
        return run
    if lib == "autograd":
        from autograd import grad

        def f(x):
            y = x + 2
            return (y * y * 3).mean()
        g = grad(f)
        xa = np.ones((2, 2), np.float32)
        return lambda: g(xa)
    if lib == "mygrad":
        import mygrad as mg
        x = mg.tensor(np.ones((2, 2), np.float32))

        def run():
            y = x + 2
            out = (y * y * 3).mean()
            out.backward()
        return run
    return None


# 3 --------------------------------------------------------------------------------------
def deep_chain(lib, steps=200, forward=None):
    xs = _rng().standard_normal(16).astype(np.float32)
    if lib in ("numgrad", "torch"):
        m = module(lib)
        x = m.tensor(xs, requires_grad=True)

        def loss():
            y = x
            for _ in range(steps):
                y = (y * 1.01 + 0.01).tanh()
            return y.sum()
        loss = _forward(forward, loss)

        def run():
            loss().backward()
        return run
    if lib == "autograd":
        import autograd.numpy as anp
        from autograd import grad

        def f(y):
            for _ in range(steps):
                y = anp.tanh(y * 1.01 + 0.01)
            return y.sum()
        g = grad(f)
        return lambda: g(xs)
    if lib == "mygrad":
        import mygrad as mg
        x = mg.tensor(xs)

        def run():
            y = x
            for _ in range(steps):
                y = mg.tanh(y * 1.01 + 0.01)
            y.sum().backward()
        return run
    return None


# 4 --------------------------------------------------------------------------------------
def mlp_step(lib, batch=128, device="cpu", width=(784, 256, 10), forward=None):
    if lib not in ("numgrad", "torch"):
        return None
    m = module(lib)
    m.manual_seed(0)
    n_in, n_out = width[0], width[-1]
    layers = []
    for a, b in zip(width[:-2], width[1:-1]):
        layers += [m.nn.Linear(a, b), m.nn.ReLU()]
    model = m.nn.Sequential(*layers, m.nn.Linear(width[-2], n_out)).to(device)
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = m.nn.CrossEntropyLoss()
    x = m.tensor(_rng().random((batch, n_in)).astype(np.float32), device=device)
    y = m.tensor(_rng().integers(0, n_out, batch), device=device)
    net = _forward(forward, model)

    def run():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    return run


# 15 -------------------------------------------------------------------------------------
MLP_WIDE = (784, 1024, 1024, 10)
MLP_WIDE_SMALL = (784, 64, 64, 10)


def mlp_wide(batch):
    """``mlp_step`` for an MLP 784-1024-1024-10 (ReLU, SGD) at ``batch``: at batch 1 its
    products are matrix-vector products and outer-product weight gradients, at 1024 large
    matrix products (hidden width 64 when small)."""
    def make(lib, forward=None, small=False):
        return mlp_step(lib, batch=batch, width=MLP_WIDE_SMALL if small else MLP_WIDE,
                        forward=forward)
    make.__name__ = f"mlp_wide_b{batch}"
    return make


# 5 --------------------------------------------------------------------------------------
def elementwise_1m(lib, n=1_000_000, forward=None):
    if lib not in ("numgrad", "torch"):
        return None
    m = module(lib)
    x = m.tensor(_rng().standard_normal(n).astype(np.float32), requires_grad=True)
    loss = _forward(forward, lambda: ((x * 2 + 1).tanh() * x.sigmoid() - x.exp() * 0.1).sum())

    def run():
        y = loss()
        y.backward()
        g, x.grad = x.grad, None
        return y.detach(), g  # returned: a compiler may not skip work nobody sees
    return run


# 6 --------------------------------------------------------------------------------------
def cross_entropy_1024x1000(lib, forward=None):
    if lib not in ("numgrad", "torch"):
        return None
    m = module(lib)
    logits = m.tensor(_rng().standard_normal((1024, 1000)).astype(np.float32),
                      requires_grad=True)
    target = m.tensor(_rng().integers(0, 1000, 1024))
    ce = _forward(forward, lambda: m.nn.functional.cross_entropy(logits, target))

    def run():
        loss = ce()
        loss.backward()
        g, logits.grad = logits.grad, None
        return loss.detach(), g  # returned: a compiler may not skip work nobody sees
    return run


# 7 --------------------------------------------------------------------------------------
def cnn_step(lib, batch=64, size=28, device="cpu", channels=(16, 32), forward=None):
    if lib not in ("numgrad", "torch"):
        return None
    m = module(lib)
    nn = m.nn
    m.manual_seed(0)
    out_hw = (size // 2 - 2)
    c1, c2 = channels
    model = nn.Sequential(nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(c1, c2, 3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(c2 * out_hw * out_hw, 10)).to(device)
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(_rng().random((batch, 1, size, size)).astype(np.float32), device=device)
    y = m.tensor(_rng().integers(0, 10, batch), device=device)
    net = _forward(forward, model)

    def run():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    return run


# 8-12: models (``models.py``) --------------------------------------------------------------
# Each takes ``small``: the same program at reduced sizes (the CI smoke run, the loss tests).
GPT_FULL = {"n_layer": 4, "n_head": 4, "n_embd": 128, "block_size": 64}
GPT_SMALL = {"n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16}
VOCAB = 65


def _model(m, make):
    """``make(m)`` built under ``m.manual_seed(0)``. PyTorch's copy then takes numgrad's
    initial weights through NumPy: numgrad draws PyTorch's random numbers for the same seed
    (float32 ``normal_`` bit for bit on x86 PyTorch builds, a few ulp apart on others), and
    the two libraries should start from the same weights. The
    global generator is left where the build left it (both libraries draw the same numbers
    there: dropout's masks). A process that has not loaded numgrad (``first_step.py``'s
    PyTorch run) keeps PyTorch's own weights for the seed."""
    m.manual_seed(0)
    model = make(m)
    numgrad = sys.modules.get("numgrad")
    if m.__name__ == "torch" and numgrad is not None:
        state = numgrad.get_rng_state()
        numgrad.manual_seed(0)
        ours = make(numgrad).state_dict()
        numgrad.set_rng_state(state)
        with m.no_grad():
            for k, v in model.state_dict().items():
                v.copy_(m.from_numpy(np.array(ours[k].numpy())))
    return model


def _tokens(batch, block):
    """A fixed batch of random token ids: inputs and the next-token targets."""
    data = _rng().integers(0, VOCAB, (batch, block + 1))
    return data[:, :-1], data[:, 1:]


def _gpt_step(lib, attention, forward, small):
    if lib not in ("numgrad", "torch"):
        return None
    import models
    m = module(lib)
    F = m.nn.functional
    cfg = GPT_SMALL if small else GPT_FULL
    model = _model(m, lambda m: models.gpt(m, vocab=VOCAB, attention=attention, **cfg))
    opt = models.gpt_optimizer(m, model)
    xs, ys = _tokens(4 if small else 16, cfg["block_size"])
    x, y = m.tensor(xs), m.tensor(ys)
    net = _forward(forward, model)

    def run():
        opt.zero_grad(set_to_none=True)
        logits = net(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()
    return run


def gpt_step_sdpa(lib, forward=None, small=False):
    """A nanoGPT-style training step (4 layers, 4 heads, 128 wide, block 64, batch 16,
    vocab 65): attention by ``F.scaled_dot_product_attention(is_causal=True)``, AdamW with
    weight decay on the 2-D weights, gradient norm clipped to 1."""
    return _gpt_step(lib, "sdpa", forward, small)


def gpt_step_manual(lib, forward=None, small=False):
    """``gpt_step_sdpa`` with the attention written out: scaled ``q @ k^T``, the causal mask
    (a registered buffer) by ``masked_fill(-inf)``, softmax, ``@ v``."""
    return _gpt_step(lib, "manual", forward, small)


def gpt_generate(lib, forward=None, small=False):
    """Generate 100 tokens (20 when small) from a 1-token context with the sdpa GPT in eval
    mode, batch 1, under ``no_grad``: the context cropped to the block size, the last
    position's logits, softmax, ``multinomial`` from a generator seeded at the start of each
    call (both libraries draw the same tokens), ``cat``. The model sees a longer sequence at
    every token up to the block size: a compiled model meets a new shape each time."""
    if lib not in ("numgrad", "torch"):
        return None
    import models
    m = module(lib)
    F = m.nn.functional
    cfg = GPT_SMALL if small else GPT_FULL
    new_tokens, block = (20 if small else 100), cfg["block_size"]
    model = _model(m, lambda m: models.gpt(m, vocab=VOCAB, attention="sdpa", **cfg))
    model.eval()
    net = _forward(forward, model)
    start = m.zeros((1, 1), dtype=m.long)
    g = m.Generator()

    def run():
        g.manual_seed(1337)
        idx = start
        with m.no_grad():
            for _ in range(new_tokens):
                context = idx if idx.size(1) <= block else idx[:, -block:]
                logits = net(context)[:, -1, :]
                probs = F.softmax(logits, dim=-1)
                idx = m.cat((idx, m.multinomial(probs, 1, generator=g)), dim=1)
        return idx
    return run


def lstm_step(lib, forward=None, small=False):
    """A char-LSTM language-model step: Embedding(65, 64), LSTM(64, 256, 2 layers,
    batch_first), Linear(256, 65); sequence 64, batch 32, Adam(lr 2e-3)."""
    if lib not in ("numgrad", "torch"):
        return None
    import models
    m = module(lib)
    F = m.nn.functional
    embed, hidden, seq, batch = (16, 32, 16, 4) if small else (64, 256, 64, 32)
    model = _model(m, lambda m: models.char_lstm(m, vocab=VOCAB, embed=embed, hidden=hidden))
    opt = m.optim.Adam(model.parameters(), lr=2e-3)
    xs, ys = _tokens(batch, seq)
    x, y = m.tensor(xs), m.tensor(ys)
    net = _forward(forward, model)

    def run():
        opt.zero_grad()
        logits = net(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.detach()
    return run


def encoder_step(lib, forward=None, small=False, dropout=0.1):
    """A 2-layer ``nn.TransformerEncoder`` (d_model 128, 4 heads, feed-forward 512, dropout
    0.1, batch_first) on a float input (batch 16, sequence 64), a linear head to 10 classes
    on the sequence mean, cross-entropy, Adam; train mode, so dropout draws masks from the
    global generator (seeded once here: both libraries draw the same masks). ``dropout``:
    its probability (the tests also run it at 0)."""
    if lib not in ("numgrad", "torch"):
        return None
    import models
    m = module(lib)
    F = m.nn.functional
    d_model, nhead, ff, seq, batch = (32, 2, 64, 16, 4) if small else (128, 4, 512, 64, 16)
    model = _model(m, lambda m: models.encoder_classifier(
        m, d_model=d_model, nhead=nhead, dim_feedforward=ff, dropout=dropout))
    model.train()
    opt = m.optim.Adam(model.parameters())
    x = m.tensor(_rng().standard_normal((batch, seq, d_model)).astype(np.float32))
    y = m.tensor(_rng().integers(0, 10, batch))
    net = _forward(forward, model)

    def run():
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return run


# GPT-2 small: 124M parameters (the output head tied to the token embedding)
GPT2_FULL = {"vocab": 50257, "n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024}
GPT2_SMALL = dict(GPT_SMALL, vocab=VOCAB)


def gpt2_build(lib, forward=None, small=False):
    """Build a GPT-2-sized model (``GPT2_FULL``; ``GPT_SMALL`` sizes when small) under
    ``manual_seed(0)``: ``nn.Linear``'s and ``nn.Embedding``'s own initialisation, then
    nanoGPT's N(0, 0.02) weights, zero biases and N(0, 0.02 / sqrt(2 * n_layer)) residual
    projections. Nearly all of it is random fills (about 240M normals and 125M uniforms),
    and numgrad draws PyTorch's numbers for the seed. Nothing to compile."""
    if lib not in ("numgrad", "torch") or forward is not None:
        return None
    import models
    m = module(lib)
    cfg = GPT2_SMALL if small else GPT2_FULL

    def run():
        m.manual_seed(0)
        return models.gpt(m, **cfg)
    return run


# 14 -------------------------------------------------------------------------------------
def tiny_ops_chain(lib, forward=None, small=False, steps=300, tags=5):
    """About 10,000 tiny ops, forward and backward: a BiLSTM-CRF's forward algorithm over a
    300-step sentence with 5 tags (per step and tag: a row of the transitions, one emission
    element, two adds and a ``logsumexp`` over the 5-vector; the gold path's score by
    indexing, add, mul, exp and sum). Per-op overhead, not kernels, sets its time (30 steps
    when small)."""
    if lib not in ("numgrad", "torch"):
        return None
    m = module(lib)
    steps = 30 if small else steps
    rng = _rng()
    feats = m.tensor(rng.standard_normal((steps, tags)), dtype=m.float32, requires_grad=True)
    trans = m.tensor(rng.standard_normal((tags, tags)), dtype=m.float32, requires_grad=True)
    gold = [int(t) for t in rng.integers(0, tags, steps)]

    def loss():
        alpha = trans[0] * 0.0
        score = feats[0, 0] * 0.0
        prev = 0
        for i in range(steps):
            feat = feats[i]
            alpha = m.stack([m.logsumexp(alpha + trans[j] + feat[j], 0) for j in range(tags)])
            tag = gold[i]
            score = score + trans[tag, prev] + feat[tag] * 1.0 + (feat * 0.01).exp().sum()
            prev = tag
        return m.logsumexp(alpha, 0) - score
    loss = _forward(forward, loss)

    def run():
        loss().backward()
    return run


WORKLOADS = {
    "1_seeds_5x5": seeds_5x5,
    "2_seeds_2x2": seeds_2x2,
    "3_deep_chain_200x16": deep_chain,
    "4_mlp_step_784_256_10_b128": mlp_step,
    "5_elementwise_1M": elementwise_1m,
    "6_cross_entropy_1024x1000": cross_entropy_1024x1000,
    "7_cnn_step_28x28_b64": cnn_step,
    "8_gpt_step_sdpa": gpt_step_sdpa,
    "9_gpt_step_manual": gpt_step_manual,
    "10_gpt_generate_100": gpt_generate,
    "11_lstm_step": lstm_step,
    "12_encoder_step": encoder_step,
    "13_gpt2_build_124M": gpt2_build,
    "14_tiny_ops_chain_10k": tiny_ops_chain,
    "15_mlp_wide_b1": mlp_wide(1),
    "15_mlp_wide_b16": mlp_wide(16),
    "15_mlp_wide_b128": mlp_wide(128),
    "15_mlp_wide_b1024": mlp_wide(1024),
}

SMALL = ("1_seeds_5x5", "2_seeds_2x2", "3_deep_chain_200x16")

# the model workloads: they take ``small`` (reduced sizes, for CI's smoke run and the tests)
MODELS = ("8_gpt_step_sdpa", "9_gpt_step_manual", "10_gpt_generate_100", "11_lstm_step",
          "12_encoder_step", "13_gpt2_build_124M", "14_tiny_ops_chain_10k", "15_mlp_wide_b1",
          "15_mlp_wide_b16", "15_mlp_wide_b128", "15_mlp_wide_b1024")

# workloads with nothing to compile but a model's forward (or nothing at all: a model's
# construction): no whole-step compiled variant
FORWARD_ONLY = ("10_gpt_generate_100", "13_gpt2_build_124M")


def build(name, lib, small=False):
    """``WORKLOADS[name](lib)``, where ``lib`` may also be "numgrad.compile" or "torch.compile":
    the same step compiled whole and called until it runs compiled (numgrad traces on the first
    call of a signature, checks a replay against the second and replays from the third);
    "numgrad.compile fwd" or "torch.compile fwd": the forward form, the loss function or the
    model compiled and the backward and optimizer step outside; or "jax.jit", the step written
    for JAX (``jax_workloads.py``). None where ``lib`` has no such variant of the workload (a
    whole-step compile of a ``FORWARD_ONLY`` one, a workload with no JAX twin). ``small``
    runs the ``MODELS`` at their reduced sizes."""
    kw = {"small": True} if small and name in MODELS else {}
    base = COMPILED.get(lib)
    if base is None:
        return WORKLOADS[name](lib, **kw)
    if lib == "jax.jit":
        from jax_workloads import JAX
        make = JAX.get(WORKLOADS[name].__name__)
        if make is None:
            return None
        run = make()
        run()  # traced and compiled by XLA
        return run
    if lib.endswith(" fwd"):  # the forward form: the loss or model compiled, backward outside
        run = WORKLOADS[name](base, forward=module(base).compile, **kw)
        if run is None:
            return None
        for _ in range(3):
            run()
        return run
    if name in FORWARD_ONLY:
        return None
    run = WORKLOADS[name](base, **kw)
    if run is None:
        return None
    compiled = module(base).compile(run)
    for _ in range(3):
        compiled()
    return compiled
