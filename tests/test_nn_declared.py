"""nn ops declared through the op registry (``numgrad/ops/gelu.py``, ``norms.py``,
``nn_losses.py``, ``batch_norm.py``, the one ``addmm`` of ``fused.py``): first and second
derivatives, their node names and saved values against PyTorch. Forward, backward, gradcheck
and gradgradcheck of each op run from its rows in ``op_cases.py``."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng

CALLS = {
    "gelu": ("F.gelu(x)", [(3, 5)]),
    "gelu_tanh": ("F.gelu(x, approximate='tanh')", [(3, 5)]),
    "layer_norm": ("F.layer_norm(x, (5,), w, b)", [(3, 5), (5,), (5,)]),
    "layer_norm_2d": ("F.layer_norm(x, (2, 5), w, None, 0.01)", [(3, 2, 5), (2, 5)]),
    "linear": ("F.linear(x, w, b)", [(3, 5), (4, 5), (4,)]),
    "addmm": ("m.addmm(b, x, w, beta=0.5, alpha=-2)", [(3, 5), (5, 4), (4,)]),
}


def _run(m, call, arrays):
    ts = [m.tensor(a, requires_grad=True) for a in arrays]
    env = {"m": m, "F": m.nn.functional, "x": ts[0], "w": ts[1] if len(ts) > 1 else None,
           "b": ts[2] if len(ts) > 2 else None}
    out = eval(call, env)
    rng = np.random.default_rng(1)
    g = m.tensor(rng.uniform(-1, 1, tuple(out.shape)), dtype=out.dtype)
    grads = m.autograd.grad(out, ts, g, create_graph=True)
    s = sum((q * m.tensor(rng.uniform(-1, 1, tuple(q.shape)))).sum() for q in grads)
    second = m.autograd.grad(s, ts, allow_unused=True)
    return out, grads, second


@requires_torch
@pytest.mark.parametrize("name", list(CALLS))
def test_first_and_second_derivatives_match_pytorch(name):
    call, shapes = CALLS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-2, 2, s) for s in shapes]
    ours, theirs = _run(ng, call, arrays), _run(torch, call, arrays)
    assert ours[0].grad_fn.name() == theirs[0].grad_fn.name()
    assert_close(ours[0], theirs[0], rtol=1e-12, atol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        assert_close(a, b, rtol=1e-10, atol=1e-12)
    if name.startswith(("gelu", "layer_norm")):  # the fused backward's own node
        assert ours[1][0].grad_fn.name() == theirs[1][0].grad_fn.name()
    for a, b in zip(ours[2], theirs[2]):
        assert (a is None) == (b is None) or float(abs(b).max()) == 0
        if a is not None:
            assert_close(a, b, rtol=1e-9, atol=1e-11)


@requires_torch
def test_saved_values_match_pytorch():
    x = np.random.default_rng(2).uniform(-1, 1, (3, 4))
    for m in (ng, torch):
        a = m.tensor(x, requires_grad=True)
        w = m.tensor(x[:2, :3].copy(), requires_grad=True)  # w.t() is column-major
        node = m.addmm(m.zeros(2, dtype=a.dtype), a.t(), w.t(), alpha=3).grad_fn
        assert (node._saved_alpha, node._saved_beta) == (3, 1)
        assert tuple(node._saved_mat2_sym_strides) == (1, 3)
        assert_close(node._saved_mat1, a.t())
        gelu = m.nn.functional.gelu(a, approximate="tanh").grad_fn
        assert gelu._saved_approximate == "tanh"
        ln = m.nn.functional.layer_norm(a, (4,), a[0], None).grad_fn
        assert tuple(ln._saved_normalized_shape) == (4,)
        assert ln._saved_bias is None


def test_addmm_inputs_by_keyword_record_the_node():
    c, a, b = (ng.ones(*s, requires_grad=True) for s in ((2, 3), (2, 4), (4, 3)))
    out = ng.addmm(c, mat1=a, mat2=b)
    out.sum().backward()
    assert out.grad_fn.name() == "AddmmBackward0"
    assert_close(b.grad, np.full((4, 3), 2.0))
    assert_close(c.grad, np.ones((2, 3)))


def test_linear_weight_gradient_keeps_the_weights_layout():
    x = ng.randn(5, 3)
    w = ng.randn(4, 3, requires_grad=True)
    ng.nn.functional.linear(x, w, ng.zeros(4)).sum().backward()
    assert w.grad.is_contiguous()
    assert_close(w.grad, np.broadcast_to(x.numpy().sum(0), (4, 3)), rtol=1e-6)


@requires_torch
@pytest.mark.parametrize("kwargs", [{"padding_idx": 3}, {"scale_grad_by_freq": True}, {}])
def test_embedding_first_and_second_derivatives_match_pytorch(kwargs):
    rng = np.random.default_rng(3)
    w0, a0 = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))
    g0 = rng.uniform(-1, 1, (2, 3, 3))
    res = []
    for m in (ng, torch):
        w, g = m.tensor(w0, requires_grad=True), m.tensor(g0, requires_grad=True)
        y = m.nn.functional.embedding(m.tensor([[1, 0, 3], [3, 3, 2]]), w, **kwargs)
        gw, = m.autograd.grad(y, w, g, create_graph=True)
        gg, = m.autograd.grad((gw * m.tensor(a0)).sum(), g)
        res.append((y.grad_fn.name(), gw.grad_fn.name(), gw, gg))
    assert res[0][:2] == res[1][:2]
    assert_close(res[0][2], res[1][2], rtol=1e-12, atol=1e-12)
    if kwargs.get("scale_grad_by_freq"):
        # PyTorch's second derivative leaves out the 1 / count scale of the first; numgrad
        # differentiates what it computed: a's rows at the indices, times 1 / count
        idx = np.array([[1, 0, 3], [3, 3, 2]])
        count = np.bincount(idx.ravel(), minlength=4)[idx][..., None]
        assert_close(res[0][3], a0[idx] / count, rtol=1e-12, atol=1e-12)
    else:
        assert_close(res[0][3], res[1][3], rtol=1e-12, atol=1e-12)


def _chain(fn):
    """The node names along the first edges (the graph's shape near the output)."""
    names = []
    while fn is not None and len(names) < 3:
        names.append(fn.name().replace("torch::autograd::", ""))
        fn = fn.next_functions[0][0] if fn.next_functions else None
    return names


LOSS_NORM = [  # (call, input shapes): x, w, b as in CALLS; t the targets of x's batch
    ("F.nll_loss(x, t, reduction='none')", [(5,)]),
    ("F.nll_loss(x, t, w.detach(), ignore_index=1)", [(4, 5), (5,)]),
    ("F.nll_loss(x, t, reduction='none')", [(4, 5, 3)]),
    ("F.cross_entropy(x, t, w.detach(), reduction='sum')", [(2, 5, 3, 2), (5,)]),
    ("F.nll_loss(x, t)", [(2, 5, 2, 1, 2)]),
    ("F.batch_norm(x, None, None, w, b, training=True) ** 2", [(4, 3, 2), (3,), (3,)]),
    ("F.batch_norm(x, w.detach() - 1, w.detach() ** 2, w, b) ** 2", [(4, 3), (3,), (3,)]),
]


@requires_torch
@pytest.mark.parametrize("call,shapes", LOSS_NORM, ids=[f"{c[0]}-{len(c[1][0])}d"
                                                         for c in LOSS_NORM])
def test_nll_and_batch_norm_graphs_match_pytorch(call, shapes):
    """nll_loss by rank (NllLoss2DBackward0 for 4-D, a view of 3-D and 5-D inputs) and batch
    norm: values, node chains, first and second derivatives."""
    rng = np.random.default_rng(3)
    arrays = [rng.uniform(-2, 2, s) for s in shapes]
    xs = shapes[0]
    target = rng.integers(0, 5, xs[:1] + xs[2:] if len(xs) > 1 else ())
    res = []
    for m in (ng, torch):
        ts = [m.tensor(a, requires_grad=True) for a in arrays]
        env = {"m": m, "F": m.nn.functional, "x": ts[0], "t": m.tensor(target),
               "w": ts[1] if len(ts) > 1 else None, "b": ts[2] if len(ts) > 2 else None}
        out = eval(call, env)
        g = m.tensor(np.random.default_rng(4).uniform(0.5, 1.5, tuple(out.shape)),
                     dtype=out.dtype)
        grads = m.autograd.grad(out, ts, g, create_graph=True, allow_unused=True)
        need = [q for q in grads if q is not None and q.requires_grad]
        s = sum((q * q).sum() for q in need)
        res.append((out, grads, m.autograd.grad(s, ts, allow_unused=True),
                    _chain(out.grad_fn), _chain(grads[0].grad_fn)))
    (out, grads, second, chain, gchain), (t_out, t_grads, t_second, t_chain, t_gchain) = res
    assert chain == t_chain and gchain[0] == t_gchain[0]
    assert_close(out, t_out, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads + second, t_grads + t_second):
        assert (a is None) == (b is None)
        if a is not None:
            assert_close(a, b, rtol=1e-9, atol=1e-11)
