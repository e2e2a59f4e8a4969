"""The benchmark workloads, each written once for every library that can run it.

``WORKLOADS[name](lib)`` builds the inputs outside the timed region and returns a callable
that runs one iteration (forward + backward unless said), or None when ``lib`` cannot run
that workload. Libraries: "numgrad", "torch" and, on the small workloads, HIPS "autograd"
and "mygrad" when they are installed.
"""

import importlib.util

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
    n_in, hidden, n_out = width
    model = m.nn.Sequential(m.nn.Linear(n_in, hidden), m.nn.ReLU(),
                            m.nn.Linear(hidden, n_out)).to(device)
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


WORKLOADS = {
    "1_seeds_5x5": seeds_5x5,
    "2_seeds_2x2": seeds_2x2,
    "3_deep_chain_200x16": deep_chain,
    "4_mlp_step_784_256_10_b128": mlp_step,
    "5_elementwise_1M": elementwise_1m,
    "6_cross_entropy_1024x1000": cross_entropy_1024x1000,
    "7_cnn_step_28x28_b64": cnn_step,
}

SMALL = ("1_seeds_5x5", "2_seeds_2x2", "3_deep_chain_200x16")


def build(name, lib):
    """``WORKLOADS[name](lib)``, where ``lib`` may also be "numgrad.compile" or "torch.compile":
    the same step compiled whole and called until it runs compiled (numgrad traces on the first
    call of a signature, checks a replay against the second and replays from the third);
    "numgrad.compile fwd" or "torch.compile fwd": the forward form, the loss function or the
    model compiled and the backward and optimizer step outside; or "jax.jit", the step written
    for JAX (``jax_workloads.py``)."""
    base = COMPILED.get(lib)
    if base is None:
        return WORKLOADS[name](lib)
    if lib == "jax.jit":
        from jax_workloads import JAX
        run = JAX[WORKLOADS[name].__name__]()
        run()  # traced and compiled by XLA
        return run
    if lib.endswith(" fwd"):  # the forward form: the loss or model compiled, backward outside
        run = WORKLOADS[name](base, forward=module(base).compile)
        for _ in range(3):
            run()
        return run
    run = WORKLOADS[name](base)
    if run is None:
        return None
    compiled = module(base).compile(run)
    for _ in range(3):
        compiled()
    return compiled
