"""numgrad.func (torch.func) against PyTorch: grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian, vmap, functional_call; argnums, pytrees, has_aux, composition (vmap(grad),
grad(grad), jacrev(jacrev)), Jacobians against float64 finite differences, the per-sample
gradients recipe on a tiny MLP, and PyTorch's errors."""

import numpy as np
import pytest
from conftest import raised
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

torch = pytest.importorskip("torch")
import torch.func as tfunc  # noqa: E402

LIBS = ((ng, ng.func), (torch, tfunc))
RNG = np.random.default_rng(0)
A = RNG.standard_normal(3)
B = RNG.standard_normal(3)
M = RNG.standard_normal((2, 3))
X4 = RNG.standard_normal((4, 3))


def _np(tree):
    if isinstance(tree, (tuple, list)):
        return [_np(t) for t in tree]
    if isinstance(tree, dict):
        return {k: _np(v) for k, v in tree.items()}
    return tree.detach().numpy() if hasattr(tree, "detach") else tree


def _same(a, b):
    a, b = _np(a), _np(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    else:
        assert a == b


def both(run):
    """``run(T, F)`` under numgrad and under PyTorch; the results must agree."""
    r = [run(T, F) for T, F in LIBS]
    _same(r[0], r[1])
    return r[0]


def _f(T, x, y):
    return (x.sin() * y).sum() + (x * x).sum()


# ----------------------------------------------------------------------------------------
# grad, grad_and_value
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(argnums):
    g = both(lambda T, F: F.grad(lambda x, y: _f(T, x, y), argnums=argnums)(
        T.tensor(A), T.tensor(B)))
    assert isinstance(g, tuple) == isinstance(argnums, tuple)


def test_grad_pytree_has_aux_and_value():
    def run(T, F):
        def f(p, x):
            out = (p["w"] @ x + p["b"][0]).tanh().sum()
            return out, {"o": out * 2, "n": (x[0],)}
        p = {"w": T.tensor(M), "b": [T.tensor(B[:2])]}
        g, aux = F.grad(f, has_aux=True)(p, T.tensor(A))
        gv, (v, aux2) = F.grad_and_value(f, has_aux=True)(p, T.tensor(A))
        assert isinstance(aux2["n"], tuple) and not aux["o"].requires_grad
        assert not g["w"].requires_grad and v.grad_fn is None
        return g, aux["o"], gv, v
    both(run)


def test_grad_of_unused_input_is_zero_and_kwargs_pass_through():
    both(lambda T, F: F.grad(lambda x, y, *, s: (x * s).sum(), argnums=(0, 1))(
        T.tensor(A), T.tensor(B), s=2.0))


def test_grad_nests_and_connects_to_outer_graph():
    def run(T, F):
        x = T.tensor(A, requires_grad=True)
        gg = F.grad(lambda x: F.grad(lambda y: (y ** 3).sum())(x).sum())(x.detach())
        g = F.grad(lambda y: (y.sin() * x).sum())(T.tensor(B))  # closes over x
        assert g.requires_grad
        (dx,) = T.autograd.grad(g.sum(), x)
        h = F.grad(lambda y: (y ** 3).sum())(x)  # x itself requires grad
        (dh,) = T.autograd.grad(h.sum(), x)
        return gg, g, dx, dh
    both(run)


def test_grad_under_no_grad_is_detached():
    def run(T, F):
        x = T.tensor(A, requires_grad=True)
        with T.no_grad():
            g = F.grad(lambda y: (y ** 3).sum())(x)
        assert not g.requires_grad
        return g
    both(run)


def test_grad_errors():
    def cases(T, F):
        f = lambda x, y: (x * y).sum()  # noqa: E731
        x, y = T.tensor(A), T.tensor(B)
        return [raised(F.grad(f, argnums=2), x, y), raised(F.grad(f, argnums=(0, 0)), x, y),
                raised(F.grad(f, argnums=()), x, y), raised(F.grad(f, argnums=1.0), x, y),
                raised(F.grad(f, argnums=[0]), x, y), raised(F.grad(f, argnums=-3), x, y),
                raised(F.grad(lambda x: x * 2), x),
                raised(F.grad(lambda x: 1.0), x),
                raised(F.grad(lambda x: x.sum(), has_aux=True), x),
                raised(F.grad(lambda x: (x.sum(), 3), has_aux=True), x),
                raised(F.grad(lambda x: x.sum()), 1.0)]
    r = [cases(T, F) for T, F in LIBS]
    assert r[0] == r[1]
    assert all(c is not None for c in r[0])


# ----------------------------------------------------------------------------------------
# vjp, jvp
# ----------------------------------------------------------------------------------------


def test_vjp_pytree_output_and_has_aux():
    def run(T, F):
        def f(x, y):
            return {"a": x.exp() * y, "b": (x @ y,)}, x.sum()
        out, fn, aux = F.vjp(f, T.tensor(A), T.tensor(B), has_aux=True)
        g = fn({"a": T.tensor(B), "b": (T.tensor(2.0),)})
        assert isinstance(g, tuple) and len(g) == 2 and not g[0].requires_grad
        return out, g, aux
    both(run)


def test_vjp_errors():
    def cases(T, F):
        x = T.tensor(A)
        _, fn = F.vjp(lambda x: (x * 2, x), x)
        return [raised(F.vjp, lambda x: x.long(), x),
                raised(F.vjp, lambda x: (x, 2), x),
                raised(F.vjp, lambda x: x, x, has_aux=True),
                raised(F.vjp, lambda x: x, 1.0)]
    r = [cases(T, F) for T, F in LIBS]
    assert r[0] == r[1]


def test_jvp_values_pytrees_and_aux():
    def run(T, F):
        def f(x, p):
            return (x.tanh() * p["s"]).cumsum(0), (x @ p["m"].t()).sigmoid()
        primals = (T.tensor(A), {"s": T.tensor(B), "m": T.tensor(M)})
        tangents = (T.tensor(B), {"s": T.tensor(A), "m": T.tensor(M[::-1].copy())})
        out, tan = F.jvp(f, primals, tangents)
        out2, tan2, aux = F.jvp(lambda x: (x.exp(), x.sum()), (T.tensor(A),), (T.tensor(B),),
                                has_aux=True)
        indep = F.jvp(lambda x: T.ones(2) * 3, (T.tensor(A),), (T.tensor(B),))
        return out, tan, out2, tan2, aux, indep
    both(run)


def test_jvp_errors():
    def cases(T, F):
        x = T.tensor(A)
        return [raised(F.jvp, lambda x: x, [x], [x]),
                raised(F.jvp, lambda x: x, (x,), (T.ones(2),)),
                raised(F.jvp, lambda x: x, (), ()),
                raised(F.jvp, lambda x: x, (1.0,), (1.0,)),
                raised(F.jvp, lambda x: T.ones(2), (x,), (x,), strict=True),
                raised(F.jvp, lambda x: 2, (x,), (x,))]
    r = [cases(T, F) for T, F in LIBS]
    assert r[0] == r[1]


def test_jvp_over_grad_is_a_hessian_vector_product():
    both(lambda T, F: F.jvp(F.grad(lambda x: (x.sin() * x).sum() ** 2), (T.tensor(A),),
                            (T.tensor(B),)))


# ----------------------------------------------------------------------------------------
# jacobians, hessian
# ----------------------------------------------------------------------------------------


def _fd_jacobian(f, x, eps=1e-6):
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((f(x + e) - f(x - e)) / (2 * eps))
    return np.stack(cols, -1)


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_vs_torch_and_finite_differences(jac):
    def run(T, F):
        f = lambda x, w: (w @ x.exp()).softmax(0)  # noqa: E731
        return getattr(F, jac)(f, argnums=(0, 1))(T.tensor(A), T.tensor(M))
    jx, jw = both(run)
    with ng.no_grad():
        num = _fd_jacobian(lambda a: (ng.tensor(M) @ ng.tensor(a).exp()).softmax(0).numpy(), A)
    np.testing.assert_allclose(jx.numpy(), num, atol=1e-7)
    assert tuple(jw.shape) == (2, 2, 3)


def test_jacobian_pytree_output_has_aux_and_nesting():
    def run(T, F):
        def f(x):
            return {"s": x.sin(), "p": (x * x).sum()}, x.max()
        jac, aux = F.jacrev(f, has_aux=True)(T.tensor(A))
        jj = F.jacrev(F.jacrev(lambda x: (x ** 3).prod()))(T.tensor(A))
        jf = F.jacfwd(F.jacrev(lambda x: x.tanh().sum()))(T.tensor(A))
        return jac, aux, jj, jf
    both(run)


def test_hessian_vs_finite_differences():
    def run(T, F):
        return F.hessian(lambda x, y: (x.sin() * y).sum() * x.pow(2).sum(), argnums=(0, 1))(
            T.tensor(A), T.tensor(B))
    h = both(run)

    def gradient(a):
        x = ng.tensor(a, requires_grad=True)
        (g,) = ng.autograd.grad((x.sin() * ng.tensor(B)).sum() * x.pow(2).sum(), x)
        return g.numpy()
    np.testing.assert_allclose(h[0][0].numpy(), _fd_jacobian(gradient, A), atol=1e-6)


def test_grad_of_grad_matches_finite_differences():
    F = ng.func
    d2 = F.grad(lambda x: F.grad(lambda y: y.sin() * y.exp())(x))(ng.tensor(0.7, dtype=ng.float64))
    fd = _fd_jacobian(lambda a: np.cos(a) * np.exp(a) + np.sin(a) * np.exp(a), np.array(0.7))
    np.testing.assert_allclose(d2.item(), fd.item(), rtol=1e-7)


# ----------------------------------------------------------------------------------------
# vmap
# ----------------------------------------------------------------------------------------


def test_vmap_in_dims_out_dims_pytrees():
    def run(T, F):
        r1 = F.vmap(lambda x, y: x @ y, in_dims=(0, None))(T.tensor(X4), T.tensor(A))
        r2 = F.vmap(lambda x, y: (x * y, x.sum()), in_dims=(1, 0), out_dims=(1, 0))(
            T.tensor(X4), T.tensor(A))
        r3 = F.vmap(lambda d: d["a"] + d["b"][0], in_dims=({"a": 0, "b": [-1]},))(
            {"a": T.tensor(X4[:2]), "b": [T.tensor(M.T.copy())]})
        r4 = F.vmap(F.vmap(lambda a, b: a * b))(T.tensor(X4), T.tensor(X4))
        r5 = F.vmap(lambda x, s: x * s, in_dims=(0, None))(T.tensor(A), 3.0)
        r6 = F.vmap(lambda x, c: (x + c, c * 2), in_dims=(0, None), out_dims=(0, None))(
            T.tensor(X4), T.tensor(A))
        r7 = F.vmap(lambda x, y: (x * 2, x.sum() + y))(T.ones(0, 3), T.ones(0))
        r8 = F.vmap(F.grad(lambda x: x.sin().sum()), in_dims=1)(T.ones(3, 0))
        assert tuple(r7[0].shape) == (0, 3) and tuple(r8.shape) == (0, 3)
        return r1, r2, r3, r4, r5, r6, r7, r8
    both(run)


def test_vmap_errors():
    def cases(T, F):
        x, y = T.tensor(X4), T.tensor(A)

        def f(a, b):
            return a + b
        return [raised(F.vmap(f, in_dims=[0, 0]), x, y),
                raised(F.vmap(f, in_dims=(0, 0, 0)), x, y),
                raised(F.vmap(f), x, y),
                raised(F.vmap(f, in_dims=(0, 2)), x, y),
                raised(F.vmap(f, in_dims=(None, None)), x, y),
                raised(F.vmap(f, in_dims=(0, 0.5)), x, y),
                raised(F.vmap(f, in_dims=(0, 0)), x, 1.0),
                raised(F.vmap(f)),
                raised(F.vmap, f, randomness="sometimes"),
                raised(F.vmap, f, chunk_size=0),
                raised(F.vmap(lambda a: 2.0), x),
                raised(F.vmap(lambda a: (a, a), out_dims=(0, 0, 0)), x),
                raised(F.vmap(lambda a: a * 2, out_dims=None), x)]
    r = [cases(T, F) for T, F in LIBS]
    assert r[0] == r[1]
    assert all(c is not None for c in r[0])


def test_vmap_randomness_modes_as_pytorchs():
    """'error' raises PyTorch's error on any draw (jacfwd too, jacrev does not); 'same'
    repeats one draw; 'different' draws per element: PyTorch's numbers for one seed, and its
    generator state after."""
    import threading

    def random_ops(T):
        return {"rand": lambda a: a + T.rand(3), "randint": lambda a: T.randint(0, 9, (3,)),
                "randperm": lambda a: T.randperm(3), "dropout": lambda a: T.nn.functional.
                dropout(a + 1, 0.5), "uniform_": lambda a: a.clone().uniform_(),
                "randn": lambda a: T.randn(3) + a}

    def cases(T, F):
        x, out = T.zeros(4, 3), []
        for f in random_ops(T).values():
            out.append(raised(F.vmap(f), x))
            for mode in ("same", "different"):
                T.manual_seed(0)
                out.append((F.vmap(f, randomness=mode)(x).tolist(), T.rand(1).item()))
        out.append(raised(F.jacfwd(lambda a: a * T.rand(3)), T.ones(3)))
        out.append(raised(F.jacrev(lambda a: a * T.rand(3)), T.ones(3)))
        return out
    r = [cases(T, F) for T, F in LIBS]
    assert r[0] == r[1]
    assert r[0][0][0] == "RuntimeError" and "randomness error mode" in r[0][0][1]
    drawn = []  # another thread draws as usual while a vmap forbids draws on this one

    def other():
        drawn.append(ng.rand(1))

    def f(a):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        return a * 2
    assert ng.func.vmap(f)(ng.ones(2)).tolist() == [2.0, 2.0] and len(drawn) == 2


# ----------------------------------------------------------------------------------------
# functional_call and the per-sample gradients recipe
# ----------------------------------------------------------------------------------------


def _mlp(T, seed=0):
    rng = np.random.default_rng(seed)
    m = T.nn.Sequential(T.nn.Linear(3, 5), T.nn.Tanh(), T.nn.Linear(5, 2))
    with T.no_grad():
        for p in m.parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
    return m.double()


def test_per_sample_gradients_recipe():
    """The torch.func tutorial's recipe: functional_call + vmap(grad(loss))."""
    rng = np.random.default_rng(1)
    xs, ts = rng.standard_normal((6, 3)), rng.integers(0, 2, 6)

    def run(T, F):
        model = _mlp(T)
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def loss(params, buffers, x, t):
            out = F.functional_call(model, (params, buffers), (x.unsqueeze(0),))
            return T.nn.functional.cross_entropy(out, t.unsqueeze(0))
        g = F.vmap(F.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, T.tensor(xs),
                                                            T.tensor(ts))
        assert model.training and all(p.requires_grad for p in model.parameters())
        return g
    g = both(run)
    # each per-sample gradient is that sample's ordinary backward
    model = _mlp(ng)
    ng.nn.functional.cross_entropy(model(ng.tensor(xs[2:3])), ng.tensor(ts[2:3])).backward()
    np.testing.assert_allclose(g["0.weight"][2].numpy(), model[0].weight.grad.numpy())


def test_functional_call_ties_strict_and_errors():
    def tied(T):
        lin = T.nn.Linear(3, 3).double()
        with T.no_grad():
            lin.weight.copy_(T.tensor(M[:, :3].repeat(2, 0)[:3]))
            lin.bias.fill_(0.1)
        return T.nn.Sequential(lin, T.nn.Tanh(), lin)  # one Linear under two names

    def run(T, F):
        w, x = T.tensor(np.ones((3, 3)) * 0.5), T.tensor(A)
        out = F.functional_call(tied(T), {"0.weight": w}, x)
        out2 = F.functional_call(tied(T), {"0.weight": w}, args=(x,), tie_weights=False)
        m = tied(T)
        errs = [raised(F.functional_call, m, {"nope": w}, (x,), strict=True),
                raised(F.functional_call, m, ({"0.bias": w}, {"0.bias": w}), (x,)),
                raised(F.functional_call, m, [1], (x,)),
                raised(F.functional_call, m, 3, (x,)),
                raised(F.functional_call, m, {"0.weight": w, "2.weight": w * 2}, (x,))]
        return out, out2, errs
    both(run)
    m = tied(ng)
    before = m[0].weight
    ng.func.functional_call(m, {"0.weight": ng.ones(3, 3, dtype=ng.float64)}, ng.tensor(A))
    assert m[0].weight is before and m[2].weight is before  # the module's own are back


def test_functional_call_buffers_updated_in_place():
    def run(T, F):
        bn = T.nn.BatchNorm1d(3).double()
        state = {k: v.clone() for k, v in bn.named_buffers()}
        out = F.functional_call(bn, state, (T.tensor(X4),))
        return out, state, bn.running_mean, int(bn.num_batches_tracked)
    both(run)


def test_model_ensembling_recipe():
    """The torch.func ensembling recipe: stack_module_state + vmap(functional_call)."""
    def run(T, F):
        models = [_mlp(T, seed) for seed in range(3)]
        params, buffers = F.stack_module_state(models)
        assert params["0.weight"].shape == (3, 5, 3) and params["0.weight"].is_leaf
        assert params["0.weight"].requires_grad

        def call(p, b, x):
            return F.functional_call(models[0], (p, b), (x,))
        out = F.vmap(call, in_dims=(0, 0, None))(params, buffers, T.tensor(X4))
        out.sum().backward()
        errs = [raised(F.stack_module_state, []),
                raised(F.stack_module_state, [models[0], models[1].eval()]),
                raised(F.stack_module_state, [models[0], T.nn.Linear(3, 5)])]
        return out, params["2.bias"].grad, errs
    both(run)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_jvp_vjp_and_jacobian_agree(n, m, seed):
    """<u, J v> = <J^T u, v> = u^T (jacrev J) v for any sizes and values."""
    rng = np.random.default_rng(seed)
    w = ng.tensor(rng.standard_normal((m, n)))
    x, v, u = (ng.tensor(rng.standard_normal(k)) for k in (n, n, m))

    def f(x):
        return (w @ x.tanh()).exp() * x.sum()
    F = ng.func
    _, jv = F.jvp(f, (x,), (v,))
    _, vjp_fn = F.vjp(f, x)
    (ju,) = vjp_fn(u)
    jac = F.jacrev(f)(x).numpy()
    np.testing.assert_allclose(jv.numpy(), jac @ v.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ju.numpy(), u.numpy() @ jac, rtol=1e-9, atol=1e-12)


def test_nn_utils_stateless_functional_call_warns_and_delegates():
    def run(T, F):
        m = _mlp(T)
        w = {"2.bias": T.tensor(B[:2])}
        with pytest.warns(FutureWarning, match="drop-in replacement") as rec:
            out = T.nn.utils.stateless.functional_call(m, w, (T.tensor(A),))
        return out, str(rec[0].message)
    both(run)


# ----------------------------------------------------------------------------------------
# vmap(grad(f)): the batched per-sample-gradient path against the loop and torch.func
# ----------------------------------------------------------------------------------------

_ACTS = ("ReLU", "Tanh", "Sigmoid", "GELU")


def _psg(T, F, layers, loss, xs, ys, extra=None, loop=False):
    """vmap(grad(loss_fn), in_dims=(None, 0, 0)) of the recipe over ``layers(T)`` (with
    ``loop``: grad per sample, stacked; PyTorch's vmap refuses data-dependent branches)."""
    T.manual_seed(0)
    model = T.nn.Sequential(*layers(T))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_fn(p, x, y):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        if extra is not None:
            out = extra(T, x, out)
        return loss(T)(out, y.unsqueeze(0))
    if loop:
        gs = [F.grad(loss_fn)(params, T.tensor(x), T.tensor(y)) for x, y in zip(xs, ys)]
        return {k: T.stack([g[k] for g in gs]) for k in params}
    return F.vmap(F.grad(loss_fn), in_dims=(None, 0, 0))(params, T.tensor(xs),
                                                          T.tensor(ys))


def _fast_loop_torch(monkeypatch, *args, fast=True, branchy=False):
    """The numgrad result with the fast path (asserting whether it was taken), with the
    loop forced, and torch.func's; all three must agree."""
    from numgrad.func import _batched
    orig, taken = _batched.per_sample_grads, []

    def spy(*a, **k):
        r = orig(*a, **k)
        taken.append(r is not None)
        return r
    monkeypatch.setattr(_batched, "per_sample_grads", spy)
    got = _psg(ng, ng.func, *args)
    assert taken == [fast]
    monkeypatch.setattr(_batched, "per_sample_grads", lambda *a, **k: None)
    loop = _psg(ng, ng.func, *args)
    monkeypatch.setattr(_batched, "per_sample_grads", orig)
    ref = _psg(torch, tfunc, *args, loop=branchy)
    assert list(got) == list(loop) == list(ref)
    for k in ref:
        assert got[k].shape == loop[k].shape == tuple(ref[k].shape)
        np.testing.assert_allclose(got[k].numpy(), loop[k].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[k].numpy(), ref[k].numpy(), rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(conv=st.booleans(), act=st.sampled_from(_ACTS), hidden=st.integers(1, 5),
       batch=st.integers(1, 5), mse=st.booleans(), reduction=st.sampled_from(["mean", "sum"]),
       smoothing=st.sampled_from([0.0, 0.1]), bias=st.booleans(), seed=st.integers(0, 99))
def test_vmap_grad_batched_path_matches_loop_and_torch(conv, act, hidden, batch, mse,
                                                       reduction, smoothing, bias, seed):
    """Random MLPs and small CNNs, every supported activation and loss: the one batched
    pass gives the loop's and torch.func's per-sample gradients."""
    rng = np.random.default_rng(seed)
    c = 3
    if conv:
        xs = rng.standard_normal((batch, 2, 5, 5)).astype(np.float32)

        def layers(T):
            return [T.nn.Conv2d(2, hidden, 3, bias=bias), getattr(T.nn, act)(),
                    T.nn.Conv2d(hidden, 2, 2, stride=2, padding=1), T.nn.Flatten(),
                    T.nn.Linear(2 * 2 * 2, c, bias=bias)]
    else:
        xs = rng.standard_normal((batch, 4)).astype(np.float32)

        def layers(T):
            return [T.nn.Linear(4, hidden, bias=bias), getattr(T.nn, act)(),
                    T.nn.Linear(hidden, c)]
    if mse:
        ys = rng.standard_normal((batch, c)).astype(np.float32)

        def loss(T):
            return lambda o, t: T.nn.functional.mse_loss(o, t, reduction=reduction)
    else:
        ys = rng.integers(0, c, batch)

        def loss(T):
            return lambda o, t: T.nn.functional.cross_entropy(
                o, t, reduction=reduction, label_smoothing=smoothing)
    with pytest.MonkeyPatch.context() as mp:
        _fast_loop_torch(mp, layers, loss, xs, ys)


def _mlp_layers(T):
    return [T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 2)]


def _ce(T):
    return T.nn.functional.cross_entropy


_XS = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
_YS = np.array([0, 1, 1, 0])


@pytest.mark.parametrize("case", ["op", "branch", "equal", "layer", "closure"])
def test_vmap_grad_outside_the_batched_path_loops_and_matches_torch(monkeypatch, case):
    """An extra op, a data-dependent Python branch (on a host read or torch.equal), an
    unsupported layer, a closed-over tensor: the probe sees it and vmap loops."""
    layers, extra = _mlp_layers, None
    if case == "op":
        def extra(T, x, out):
            return out * 2
    elif case == "branch":
        def extra(T, x, out):
            return out if float(x.sum()) > 0 else out.neg()
    elif case == "equal":
        def extra(T, x, out):
            return out if T.equal(x, x.abs()) else out
    elif case == "layer":
        def layers(T):
            return [T.nn.Linear(3, 4), T.nn.ELU(), T.nn.Linear(4, 2)]
    else:
        def extra(T, x, out):
            return out + T.ones(2)
    _fast_loop_torch(monkeypatch, layers, _ce, _XS, _YS, extra, fast=False,
                     branchy=case in ("branch", "equal"))


def test_vmap_grad_batched_path_edges(monkeypatch):
    """An ignored target (nan as PyTorch) and an out-of-range one (an error) loop;
    the tutorial's (params, buffers, x, t) form takes the batched path."""
    _fast_loop_torch(monkeypatch, _mlp_layers, _ce, _XS, np.array([0, -100, 1, 0]),
                     fast=False)
    # the loop's error is cross_entropy's own (PyTorch's batched rule words it otherwise)
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        _psg(ng, ng.func, _mlp_layers, _ce, _XS, np.array([0, 5, 1, 0]))
    from numgrad.func import _batched
    calls = []
    orig = _batched.per_sample_grads
    monkeypatch.setattr(_batched, "per_sample_grads",
                        lambda *a, **k: calls.append(orig(*a, **k)) or calls[-1])
    test_per_sample_gradients_recipe()
    assert calls and calls[0] is not None


def test_vmap_grad_batched_path_by_structure(monkeypatch):
    """A loss module (nn.CrossEntropyLoss) takes the batched path; a custom module class and
    a Conv2d fed a 3-d (unbatched) sample loop, and still match torch.func."""
    _fast_loop_torch(monkeypatch, _mlp_layers, lambda T: T.nn.CrossEntropyLoss(), _XS, _YS)

    def custom(T):
        class Scaled(T.nn.Linear):
            def forward(self, x):
                return super().forward(x) * 0.5
        return [T.nn.Linear(3, 4), T.nn.Tanh(), Scaled(4, 2)]
    _fast_loop_torch(monkeypatch, custom, _ce, _XS, _YS, fast=False)
    xs = np.random.default_rng(4).standard_normal((3, 4, 4)).astype(np.float32)

    def conv(T):  # each sample (4, 4) unsqueezed is one 1x4x4 image, not a batch of one
        return [T.nn.Conv2d(1, 2, 3), T.nn.Flatten(0), T.nn.Linear(8, 2)]

    def mse(T):
        return lambda o, t: T.nn.functional.mse_loss(o, t.squeeze(0))
    _fast_loop_torch(monkeypatch, conv, mse, xs, np.ones((3, 2), np.float32), fast=False)


def test_vmap_grad_probe_leaves_inputs_alone():
    """A function that changes its sample in place loops, and the probe's change does not
    reach the caller's tensor (each sample is doubled once, as torch.func does)."""

    def run(T, F):
        T.manual_seed(0)
        model = T.nn.Sequential(*_mlp_layers(T))
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss_fn(p, x, y):
            x.mul_(2)
            return _ce(T)(F.functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))
        xs = T.tensor(_XS)
        g = F.vmap(F.grad(loss_fn), in_dims=(None, 0, 0))(params, xs, T.tensor(_YS))
        return g, xs
    (g, xs), (gt, xt) = run(ng, ng.func), run(torch, tfunc)
    np.testing.assert_allclose(xs.numpy(), xt.numpy())
    for k in gt:
        np.testing.assert_allclose(g[k].numpy(), gt[k].numpy(), rtol=1e-5, atol=1e-6)
