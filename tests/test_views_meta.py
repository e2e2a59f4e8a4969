"""Views' creation metadata and the one node of split/chunk/unbind, against PyTorch.

The same code runs under PyTorch and numgrad and must give the same values, node names and
gradients, or raise the same exception class with the same message: in-place changes of the
pieces of split/chunk/unbind (and views of them), of views made under no_grad or
inference_mode or returned by a custom Function, and uses of such views after their base
changed; then a hypothesis search over random sequences of view and in-place ops.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad

torch = pytest.importorskip("torch")


def _outcome(fn, lib):
    try:
        return ("ok", fn(lib))
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return ("raised", type(e).__name__, str(e))


def _name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _x(lib):
    return lib.arange(12.0).reshape(4, 3).requires_grad_()


# ---------------------------------------------------------------------------- fixed cases
def piece_inplace(lib):
    p, q = (_x(lib) * 2).split(2)
    q.mul_(2)


def sizes_piece_inplace(lib):
    p, q = (_x(lib) * 2).split([1, 3])
    q.mul_(2)


def chunk_piece_inplace(lib):
    p, q = (_x(lib) * 2).chunk(2)
    p.add_(1)


def unbind_piece_inplace(lib):
    (_x(lib) * 2).unbind(1)[2].add_(1)


def piece_of_leaf_inplace(lib):
    _x(lib).split(2)[1].mul_(2)


def view_of_piece_inplace(lib):
    p, q = (_x(lib) * 2).split(2)
    q[1:].mul_(2)


def piece_setitem(lib):
    p, q = (_x(lib) * 2).split(2)
    q[0] = 1.0


def piece_of_plain_tensor_inplace_with_grad(lib):
    p, q = lib.ones(4, 3).split(2)
    q.mul_(lib.ones(2, 3, requires_grad=True))


def base_inplace_then_backward(lib):
    x = _x(lib)
    y = x * 2
    p, q = y.split(2)
    y.mul_(3)
    (p.sum() + q.sum()).backward()


def base_inplace_then_view_of_piece(lib):
    y = _x(lib) * 2
    p, q = y.split(2)
    r = q[1]
    y.add_(1)
    return _name(r)


def piece_inplace_no_grad_then_use(lib):
    y = _x(lib) * 2
    p, q = y.split(2)
    with lib.no_grad():
        q.mul_(2)
    return _name(p)


def piece_detach_inplace(lib):
    p, q = (_x(lib) * 2).split(2)
    q.detach().mul_(2)
    return q.is_leaf


def base_inplace_pieces_unused(lib):
    x = _x(lib)
    y = x * 2
    p, q = y.split(2)
    y.add_(1)
    y.sum().backward()
    return x.grad.tolist(), p.requires_grad, q.output_nr


def no_grad_view_inplace(lib):
    y = _x(lib) * 2
    with lib.no_grad():
        v = y[0]
    v.mul_(2)


def no_grad_view_of_leaf_inplace(lib):
    x = _x(lib)
    with lib.no_grad():
        v = x[0]
    v.mul_(2)


def no_grad_view_base_inplace(lib):
    y = _x(lib) * 2
    with lib.no_grad():
        v = y[0]
    y.mul_(2)
    return v.grad_fn


def no_grad_split_base_inplace(lib):
    y = _x(lib) * 2
    with lib.no_grad():
        p, q = y.split(2)
    y.mul_(2)
    return _name(p)


def no_grad_split_inplace(lib):
    y = _x(lib) * 2
    with lib.no_grad():
        p, q = y.split(2)
    q.mul_(2)


def no_grad_view_requires_grad(lib):
    """A view made under no_grad (or inference mode) requires grad as its base does, has no
    grad_fn, records nodes when used, and passes no gradient back."""
    x = lib.arange(12.0).reshape(4, 3).clone().requires_grad_()
    with lib.no_grad():
        v, (p, _) = x[1], x.split(2)
        u = _x(lib)[1]  # a view of a leaf view: its base (arange's) requires no grad
    with lib.inference_mode():
        w = x[2]
    v.requires_grad_(False)
    y, z = v * 2, v[1:]
    edges = [n for n, _ in y.grad_fn.next_functions + z.grad_fn.next_functions]
    y.sum().backward()
    return (v.requires_grad, v.is_leaf, v.grad_fn, p.requires_grad, w.requires_grad,
            _name(y), _name(z), edges, v.grad, x.grad, x.detach()[1].requires_grad,
            u.requires_grad)


def inference_view_inplace(lib):
    y = _x(lib) * 2
    with lib.inference_mode():
        v = y[0]
    v.mul_(2)


def inference_view_base_inplace(lib):
    y = _x(lib) * 2
    with lib.inference_mode():
        v = y[0]
    y.mul_(2)
    return v.grad_fn


def stale_view_read_under_no_grad(lib):
    x = _x(lib)
    y = x * 2
    v = y[0]
    y.mul_(2)
    with lib.no_grad():
        name = _name(v)
    (v * 1).sum().backward()
    return name, x.grad.tolist()


def _identity_function(lib, as_view):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.view(-1) if as_view else a

        @staticmethod
        def backward(ctx, g):
            return g.view(4, 3) if as_view else g

    return F


def custom_function_view_inplace(lib):
    _identity_function(lib, True).apply(_x(lib) * 2).mul_(2)


def custom_function_input_inplace(lib):
    _identity_function(lib, False).apply(_x(lib) * 2).mul_(2)


def node_names_and_outputs(lib):
    x = _x(lib)
    y = x * 2
    ps = y.split(1)
    return ([_name(p) for p in y.chunk(3)], [_name(p) for p in x.split([1, 3])],
            [_name(p) for p in y.unbind(1)], [p.output_nr for p in ps],
            ps[0].grad_fn is ps[3].grad_fn, type(ps[0].grad_fn.next_functions[0][0]).__name__,
            [_name(p) for p in lib.ones(2, 0, requires_grad=True).chunk(3, 1)],
            _name(ps[1][0]), _name(ps[1].t()), ps[1][0].output_nr)


def saved_values(lib):
    x = _x(lib)
    a = x.split(2, -1)[0].grad_fn
    b = x.split([1, 3])[0].grad_fn
    c = x.unbind(1)[0].grad_fn
    return (a._saved_dim, tuple(a._saved_self_sym_sizes), a._saved_split_size,
            tuple(b._saved_split_sizes), c._saved_dim)


def node_called(lib):
    ps = (_x(lib) * 2).split(2)
    us = (_x(lib) * 2).unbind(0)
    return (ps[0].grad_fn(lib.ones(2, 3), None).tolist(),
            us[0].grad_fn(lib.ones(3), None, None, lib.full((3,), 2.0)).tolist())


def grad_of_some_pieces(lib):
    x = _x(lib)
    ps = (x * 2).split(1)
    gx = lib.autograd.grad(ps[1].sum() * 3, x)[0].tolist()
    z = ps[1].sum() * 3 + (ps[2] * ps[2]).sum()
    return gx, [g.tolist() for g in lib.autograd.grad(z, [ps[1], ps[2]])]


def hooks_and_retain_grad(lib):
    x = _x(lib)
    p, q = (x * 2).split(2)
    seen = []
    p.register_hook(lambda g: seen.append(("p", tuple(g.shape))))
    q.register_hook(lambda g: g * 10)
    p.retain_grad()
    p.grad_fn.register_prehook(
        lambda gs: seen.append(("pre", [None if g is None else tuple(g.shape) for g in gs])))
    (p.sum() + q.sum()).backward()
    return seen, x.grad.tolist(), p.grad.tolist()


def retain_graph_twice(lib):
    x = _x(lib)
    p, q, r = (x * 2).unbind(1)
    z = (p * q).sum() + r.sum()
    z.backward(retain_graph=True)
    z.backward()
    return x.grad.tolist()


def double_backward(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    p, q = (x * x).split(2)
    g, = lib.autograd.grad((p * q).sum(), x, create_graph=True)
    g.sum().backward()
    return g.tolist(), x.grad.tolist()


def absent_pieces_and_dim1(lib):
    x = _x(lib)
    a, b, c = (x * 1).split([1, 0, 2], 1)
    ((a * 2).sum() + (c * c).sum()).backward()
    y = _x(lib)
    (y.chunk(2)[1] * 5).sum().backward()
    return x.grad.tolist(), y.grad.tolist()


def fan_in_with_pieces(lib):
    x = _x(lib)
    y = x * 2
    p, q = y.split([3, 1])
    u = y.unbind(1)
    z = (y * y).sum() + (p * 3).sum() + (u[2] * u[0]).sum() + q.sum()
    z.backward()
    return x.grad.tolist()


CASES = [piece_inplace, sizes_piece_inplace, chunk_piece_inplace, unbind_piece_inplace,
         piece_of_leaf_inplace, view_of_piece_inplace, piece_setitem,
         piece_of_plain_tensor_inplace_with_grad, base_inplace_then_backward,
         base_inplace_then_view_of_piece, piece_inplace_no_grad_then_use, piece_detach_inplace,
         base_inplace_pieces_unused, no_grad_view_inplace, no_grad_view_of_leaf_inplace,
         no_grad_view_base_inplace, no_grad_split_base_inplace, no_grad_split_inplace,
         no_grad_view_requires_grad, inference_view_inplace, inference_view_base_inplace,
         stale_view_read_under_no_grad,
         custom_function_view_inplace, custom_function_input_inplace, node_names_and_outputs,
         saved_values, node_called, grad_of_some_pieces, hooks_and_retain_grad,
         retain_graph_twice, double_backward, absent_pieces_and_dim1, fan_in_with_pieces]


@pytest.mark.parametrize("case", CASES, ids=lambda f: f.__name__)
def test_matches_torch(case):
    assert _outcome(case, numgrad) == _outcome(case, torch)


# ---------------------------------------------------------------------- random sequences
_VIEWS = ("split", "chunk", "unbind", "select", "slice", "view", "transpose")
_STEP = st.one_of(
    st.tuples(st.just("view"), st.integers(0, 9), st.sampled_from(_VIEWS), st.integers(0, 5),
              st.integers(0, 5), st.booleans()),
    st.tuples(st.just("inplace"), st.integers(0, 9), st.booleans(), st.booleans()),
    st.tuples(st.just("read"), st.integers(0, 9)))


def _view(t, op, a, b):
    """The views ``op`` makes of ``t`` (a list), or None where it does not apply."""
    nd = t.dim()
    if nd == 0:
        return None
    d = a % nd
    n = t.shape[d]
    if op == "split" and n:
        return list(t.split(1 + b % n, d))
    if op == "chunk":
        return list(t.chunk(1 + b % 3, d))
    if op == "unbind":
        return list(t.unbind(d))
    if op == "select" and n:
        return [t.select(d, b % n)]
    if op == "slice":
        lo = b % (n + 1)
        return [t[(slice(None),) * d + (slice(lo, lo + 1 + a % 2),)]]
    if op == "view" and t.is_contiguous():
        return [t.view(-1)]
    if op == "transpose":
        return [t.transpose(0, d)]
    return None


def _program(lib, plan):
    """Run ``plan`` on a pool of tensors (a leaf, a non-leaf, then the views the steps make):
    what the grad_fn reads saw and the leaf's gradient of a loss over the pool's tensors made
    with grad mode on. Views made under no_grad stay out of the loss and are not viewed again
    with grad mode on: PyTorch marks them as requiring grad through their base (with no
    edge to it), numgrad does not."""
    x = lib.arange(24.0).reshape(2, 3, 4).clone().requires_grad_()
    pool = [(x, True), (x * 1.5, True)]  # (tensor, made with grad mode on)
    seen = []
    for step in plan:
        t, tracked = pool[step[1] % len(pool)]
        if step[0] == "view":
            _, _, op, a, b, grad = step
            if grad and not tracked:
                continue  # PyTorch's view of it records a node with no edge; numgrad's none
            with lib.set_grad_enabled(grad):
                views = _view(t, op, a, b)
            pool += [(v, tracked and grad) for v in views or ()]
        elif step[0] == "inplace":
            _, _, grad, mul = step
            with lib.set_grad_enabled(grad):
                t.mul_(-1.5) if mul else t.add_(0.25)
        else:
            seen.append(_name(t))
    loss = x.sum() * 0.5
    for i, (t, tracked) in enumerate(pool):
        if tracked and t.requires_grad:
            w = np.linspace(-1.0, 1.0, t.numel(), dtype=np.float32).reshape(tuple(t.shape))
            loss = loss + (t * lib.tensor(w + i)).sum()
    loss.backward()
    return seen, np.asarray(x.grad.tolist())


@settings(max_examples=80, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=7))
def test_random_view_programs_match_torch(plan):
    ours = _outcome(lambda lib: _program(lib, plan), numgrad)
    ref = _outcome(lambda lib: _program(lib, plan), torch)
    assert ours[0] == ref[0], (ours, ref)
    if ours[0] == "raised":
        assert ours == ref
    else:
        assert ours[1][0] == ref[1][0]
        np.testing.assert_allclose(ours[1][1], ref[1][1], rtol=1e-5, atol=1e-4)
