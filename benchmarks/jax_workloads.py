"""The workloads as ``jax.jit`` whole steps (forward, gradient, and the SGD update where the
workload has one), for the compile comparison. Each builder returns a callable that runs one
step and waits for its results. Same shapes and input values as ``workloads.py``; the
initial weights of the models differ (the time does not depend on them)."""

import numpy as np


def _rng():
    return np.random.default_rng(0)


def _ready(x):
    import jax
    return jax.block_until_ready(x)


def seeds_5x5():
    import jax
    xs, ys = _rng().random((5, 5)), _rng().random((5, 5)) + 1
    x, y = (jax.numpy.asarray(a, dtype="float32") for a in (xs, ys))
    step = jax.jit(jax.grad(lambda x, y: (x ** 2 + y ** 3).sum(), argnums=(0, 1)))
    return lambda: _ready(step(x, y))


def seeds_2x2():
    import jax
    x = jax.numpy.ones((2, 2), "float32")

    def f(x):
        y = x + 2
        return (y * y * 3).mean()
    step = jax.jit(jax.grad(f))
    return lambda: _ready(step(x))


def deep_chain(steps=200):
    import jax
    x = jax.numpy.asarray(_rng().standard_normal(16).astype(np.float32))

    def f(y):
        for _ in range(steps):
            y = jax.numpy.tanh(y * 1.01 + 0.01)
        return y.sum()
    step = jax.jit(jax.grad(f))
    return lambda: _ready(step(x))


def _cross_entropy(logits, y):
    import jax
    logp = jax.nn.log_softmax(logits)
    return -logp[np.arange(logits.shape[0]), y].mean()


def _sgd_loop(loss, params, *data, lr=0.01):
    import jax

    @jax.jit
    def step(params, *data):
        g = jax.grad(loss)(params, *data)
        return jax.tree_util.tree_map(lambda p, d: p - lr * d, params, g)

    state = [params]

    def run():
        state[0] = _ready(step(state[0], *data))
    return run


def _init(rng, *shape):
    bound = 1 / np.sqrt(np.prod(shape[1:]))
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def mlp_step(batch=128, width=(784, 256, 10)):
    import jax
    jnp = jax.numpy
    n_in, hidden, n_out = width
    rng = np.random.default_rng(1)
    params = [jnp.asarray(a) for a in (_init(rng, hidden, n_in), _init(rng, hidden, 1)[:, 0],
                                       _init(rng, n_out, hidden), _init(rng, n_out, 1)[:, 0])]
    x = jnp.asarray(_rng().random((batch, n_in)).astype(np.float32))
    y = jnp.asarray(_rng().integers(0, n_out, batch))

    def loss(p, x, y):
        h = jax.nn.relu(x @ p[0].T + p[1])
        return _cross_entropy(h @ p[2].T + p[3], y)
    return _sgd_loop(loss, params, x, y)


def elementwise_1m(n=1_000_000):
    import jax
    jnp = jax.numpy
    x = jnp.asarray(_rng().standard_normal(n).astype(np.float32))

    def f(x):
        return ((jnp.tanh(x * 2 + 1) * jax.nn.sigmoid(x)) - jnp.exp(x) * 0.1).sum()
    step = jax.jit(jax.value_and_grad(f))
    return lambda: _ready(step(x))


def cross_entropy_1024x1000():
    import jax
    logits = jax.numpy.asarray(_rng().standard_normal((1024, 1000)).astype(np.float32))
    target = jax.numpy.asarray(_rng().integers(0, 1000, 1024))
    step = jax.jit(jax.value_and_grad(_cross_entropy))
    return lambda: _ready(step(logits, target))


def cnn_step(batch=64, size=28, channels=(16, 32)):
    import jax
    jnp, lax = jax.numpy, jax.lax
    c1, c2 = channels
    out_hw = size // 2 - 2
    rng = np.random.default_rng(1)
    params = [jnp.asarray(a) for a in (
        _init(rng, c1, 1, 3, 3), np.zeros(c1, np.float32), _init(rng, c2, c1, 3, 3),
        np.zeros(c2, np.float32), _init(rng, 10, c2 * out_hw * out_hw), np.zeros(10, np.float32))]
    x = jnp.asarray(_rng().random((batch, 1, size, size)).astype(np.float32))
    y = jnp.asarray(_rng().integers(0, 10, batch))
    dims = ("NCHW", "OIHW", "NCHW")

    def loss(p, x, y):
        h = lax.conv_general_dilated(x, p[0], (1, 1), ((1, 1), (1, 1)), dimension_numbers=dims)
        h = jax.nn.relu(h + p[1][:, None, None])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = lax.conv_general_dilated(h, p[2], (1, 1), "VALID", dimension_numbers=dims)
        h = jax.nn.relu(h + p[3][:, None, None]).reshape(x.shape[0], -1)
        return _cross_entropy(h @ p[4].T + p[5], y)
    return _sgd_loop(loss, params, x, y)


# by the name of the workload function in ``workloads.py`` each one mirrors
JAX = {f.__name__: f for f in (seeds_5x5, seeds_2x2, deep_chain, mlp_step, elementwise_1m,
                               cross_entropy_1024x1000, cnn_step)}


def one_thread():
    """Ask XLA's CPU backend for one thread (before jax is imported)."""
    import os
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false "
                               "intra_op_parallelism_threads=1").strip()
