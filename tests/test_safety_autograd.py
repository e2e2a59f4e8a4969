"""What user code hands the autograd engine and the optimizers: hook results, custom Function
gradients, ``.grad``/``.data`` assignments, ``grad_outputs``, optimizer gradients and state
(also from a loaded state dict). Nothing may reach a kernel with a shape it would read or write
outside of: each case runs under PyTorch and numgrad and must raise the same exception class
with the same message (or give the same values), and a refused optimizer step leaves the
parameter unchanged."""

import functools

import pytest
from conftest import requires_torch, torch

import numgrad as ng


def _outcome(m, case):
    try:
        return "ok", case(m)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__, str(e)


def _values(t):
    """A tensor's values as nested lists rounded for comparison (None stays None)."""
    if t is None:
        return None
    v = t.detach().tolist()
    return _round(v)


def _round(v):
    if isinstance(v, list):
        return [_round(x) for x in v]
    return "nan" if v != v else round(v, 4)


def same_as_torch(case):
    ours, theirs = _outcome(ng, case), _outcome(torch, case)
    assert ours == theirs, f"\nnumgrad: {ours}\ntorch:   {theirs}"
    return ours


# ----------------------------------------------------------------------------------------
# tensor hooks (register_hook on leaves and non-leaves, autograd.grad, retain_grad)
# ----------------------------------------------------------------------------------------

HOOK_RESULTS = {
    "smaller": lambda m, g: g[:2],
    "bigger": lambda m, g: m.ones(4),
    "reshaped": lambda m, g: g.reshape(3, 1),
    "broadcastable": lambda m, g: m.ones(1),
    "0-d": lambda m, g: m.tensor(1.0),
    "double": lambda m, g: g.double(),
    "long": lambda m, g: g.long(),
    "list": lambda m, g: [1.0, 2.0, 3.0],
    "int": lambda m, g: 5,
    "scaled": lambda m, g: g * 3,
    "requires_grad": lambda m, g: m.ones(3, requires_grad=True),
}


def _tensor_hook_case(result, on_leaf):
    """A hook returning ``result`` on the leaf itself or on a tensor made from it."""
    def case(m):
        p = m.ones(3, requires_grad=True)
        y = p if on_leaf else p * 2

        def hook(g):
            return result(m, g)
        y.register_hook(hook)
        (y * 2).sum().backward()
        return _values(p.grad)
    return case


def _grad_hook_case(result, on_leaf):
    def case(m):
        p = m.ones(3, requires_grad=True)
        y = p * 2

        def hook(g):
            return result(m, g)
        (p if on_leaf else y).register_hook(hook)
        return [_values(g) for g in m.autograd.grad((y * 2).sum(), p)]
    return case


@requires_torch
@pytest.mark.parametrize("name", list(HOOK_RESULTS))
def test_tensor_hook_results_are_checked_as_in_pytorch(name):
    for on_leaf in (True, False):
        same_as_torch(_tensor_hook_case(HOOK_RESULTS[name], on_leaf))
        same_as_torch(_grad_hook_case(HOOK_RESULTS[name], on_leaf))


class _CallableHook:
    def __call__(self, g):
        return g[:2]


class _Holder:
    def method(self, g):
        return g[:2]


@requires_torch
@pytest.mark.parametrize("hook", [
    _CallableHook(), functools.partial(lambda g, k: g[:2], k=1), _Holder().method,
    lambda g: g[:2]], ids=["callable", "partial", "method", "lambda"])
def test_hook_names_in_messages_match_pytorch(hook):
    def case(m):
        p = m.ones(3, requires_grad=True)
        p.register_hook(hook)
        (p * 2).sum().backward()
    assert same_as_torch(case)[0] == "RuntimeError"


@requires_torch
def test_retain_grad_and_hooks_keep_pytorch_order_and_checks():
    def order(m):
        p = m.ones(3, requires_grad=True)
        y = p * 2
        y.register_hook(lambda g: g * 3)
        y.retain_grad()
        y.register_hook(lambda g: g * 5)
        (y * 2).sum().backward()
        return _values(y.grad), _values(p.grad)
    assert same_as_torch(order)[0] == "ok"

    def refused(m):
        p = m.ones(3, requires_grad=True)
        y = p * 2
        y.retain_grad()
        y.register_hook(lambda g: g[:2])
        (y * 2).sum().backward()
    assert same_as_torch(refused)[0] == "RuntimeError"


def test_nonleaf_hook_rebinding_data_to_another_size_is_refused():
    # PyTorch fails later, in the next op; numgrad stops it before the next node runs
    p = ng.ones(3, requires_grad=True)
    y = p * ng.ones(3)

    def hook(g):
        g.data = ng.ones(2)
    y.register_hook(hook)
    with pytest.raises(RuntimeError, match="hook 'hook' has changed the size of value"):
        (y * 2).sum().backward()


# ----------------------------------------------------------------------------------------
# node hooks (grad_fn.register_hook / register_prehook, AccumulateGrad, post-accumulate)
# ----------------------------------------------------------------------------------------

NODE_HOOK_RESULTS = {
    "smaller": lambda m, gs: (gs[0][:2],) + tuple(gs[1:]),
    "too many": lambda m, gs: tuple(gs) + (gs[0],),
    "too few": lambda m, gs: tuple(gs[:-1]),
    "list": lambda m, gs: list(gs),
    "tensor": lambda m, gs: gs[0],
    "float item": lambda m, gs: (1.0,) + tuple(gs[1:]),
    "double": lambda m, gs: (gs[0].double(),) + tuple(gs[1:]),
    "reshaped": lambda m, gs: (gs[0].reshape(1, 3),) + tuple(gs[1:]),
    "None item": lambda m, gs: (None,) + tuple(gs[1:]),
    "scaled": lambda m, gs: tuple(g * 3 for g in gs),
}


def _node_hook_case(result, kind):
    def case(m):
        p = m.ones(3, requires_grad=True)
        q = m.ones(3, requires_grad=True)
        y = p * q
        if kind == "post":
            def hook(grad_inputs, grad_outputs):
                return result(m, grad_inputs)
            y.grad_fn.register_hook(hook)
        else:
            def hook(grad_outputs):
                return result(m, grad_outputs)
            y.grad_fn.register_prehook(hook)
        (y * 2).sum().backward()
        return _values(p.grad), _values(q.grad)
    return case


@requires_torch
@pytest.mark.parametrize("kind", ["pre", "post"])
@pytest.mark.parametrize("name", list(NODE_HOOK_RESULTS))
def test_node_hook_results_are_checked_as_in_pytorch(name, kind):
    same_as_torch(_node_hook_case(NODE_HOOK_RESULTS[name], kind))


@requires_torch
@pytest.mark.parametrize("kind,result", [
    ("pre", lambda m, go: (go[0][:2],)), ("pre", lambda m, go: (go[0].double(),)),
    ("pre", lambda m, go: (go[0] * 10,)), ("post", lambda m, go: (go[0][:2],)),
    ("post", lambda m, go: ())])
def test_accumulate_grad_node_hooks_match_pytorch(kind, result):
    def case(m):
        p = m.ones(3, requires_grad=True)
        y = p * 2
        acc = y.grad_fn.next_functions[0][0]
        p.register_hook(lambda g: g * 3)  # runs first, as a tensor pre-hook of acc
        if kind == "pre":
            acc.register_prehook(lambda go: result(m, go))
        else:
            acc.register_hook(lambda gi, go: result(m, go))
        y.sum().backward()
        return _values(p.grad)
    same_as_torch(case)


def _set_grad_small(m, t):
    t.grad = m.ones(2)


def _set_grad_data_small(m, t):
    t.grad.data = m.ones(2)


@requires_torch
@pytest.mark.parametrize("hook", [
    lambda m, t: m.ones(2), lambda m, t: m.ones(3), lambda m, t: [1], _set_grad_small,
    _set_grad_data_small], ids=["smaller", "tensor", "list", "grad=", "grad.data="])
def test_post_accumulate_grad_hooks_match_pytorch(hook):
    def case(m):
        p = m.ones(3, requires_grad=True)
        p.register_post_accumulate_grad_hook(lambda t: hook(m, t))
        (p * 2).sum().backward()
        return _values(p.grad)
    same_as_torch(case)


@requires_torch
def test_prehook_dropping_the_gradient_skips_the_node():
    def case(m):
        p = m.ones(3, requires_grad=True)
        y = p.exp()
        y.grad_fn.register_prehook(lambda go: (None,))
        y.sum().backward()
        return _values(p.grad)
    assert same_as_torch(case) == ("ok", None)


# ----------------------------------------------------------------------------------------
# custom Functions, backward(gradient=...), autograd.grad(grad_outputs=...)
# ----------------------------------------------------------------------------------------

FUNCTION_GRADS = {
    "smaller": lambda m, g: g[:2],
    "bigger": lambda m, g: m.ones(4),
    "not broadcastable": lambda m, g: m.ones(3, 1),
    "summed back": lambda m, g: m.ones(2, 3),
    "0-d": lambda m, g: m.ones(()),
    "double": lambda m, g: g.double(),
    "long": lambda m, g: g.long(),
    "list": lambda m, g: [1.0, 2.0, 3.0],
    "float": lambda m, g: 1.0,
    "too many": lambda m, g: (g, g),
    "extra Nones": lambda m, g: (g, None),
    "list of one": lambda m, g: [g],
    "None": lambda m, g: None,
}


def _function_case(result, n_inputs=1, second_requires_grad=True):
    def case(m):
        class X(m.autograd.Function):
            @staticmethod
            def forward(ctx, *xs):
                return xs[0] * 2

            @staticmethod
            def backward(ctx, g):
                return result(m, g)
        x = m.ones(3, requires_grad=True)
        rest = [m.ones(3, requires_grad=second_requires_grad) for _ in range(n_inputs - 1)]
        X.apply(x, *rest).sum().backward()
        return _values(x.grad)
    return case


@requires_torch
@pytest.mark.parametrize("name", list(FUNCTION_GRADS))
def test_custom_function_gradients_are_checked_as_in_pytorch(name):
    same_as_torch(_function_case(FUNCTION_GRADS[name]))


@requires_torch
@pytest.mark.parametrize("result,requires", [
    (lambda m, g: g, True), (lambda m, g: (g,), True), (lambda m, g: (g, g[:1]), True),
    (lambda m, g: (g, [1]), True), (lambda m, g: (g, g[:1]), False),
    (lambda m, g: (g, [1]), False)],
    ids=["too few", "too few tuple", "second wrong", "second list",
         "wrong but not required", "list not required"])
def test_custom_function_with_two_inputs(result, requires):
    same_as_torch(_function_case(result, 2, requires))


@requires_torch
@pytest.mark.parametrize("grad", [
    lambda m: m.ones(2), lambda m: m.ones(1, 3), lambda m: m.ones(()),
    lambda m: m.ones(3, dtype=m.float64), lambda m: m.ones(3, dtype=m.long)],
    ids=["smaller", "1x3", "0-d", "double", "long"])
def test_seed_gradients_are_checked_as_in_pytorch(grad):
    def backward(m):
        x = m.ones(3, requires_grad=True)
        (x * 2).backward(grad(m))
        return _values(x.grad)

    def autograd_grad(m):
        x = m.ones(3, requires_grad=True)
        return [_values(g) for g in m.autograd.grad(x * 2, x, grad_outputs=[grad(m)])]
    same_as_torch(backward)
    same_as_torch(autograd_grad)


# ----------------------------------------------------------------------------------------
# .grad and .data assignments
# ----------------------------------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("value", [
    lambda m: m.ones(2), lambda m: m.ones(1, 3), lambda m: m.ones(3, dtype=m.float64),
    lambda m: m.ones(3, dtype=m.long), lambda m: m.ones(2, dtype=m.float64),
    lambda m: [1.0, 2.0, 3.0], lambda m: 1.0, lambda m: m.ones(3, requires_grad=True)],
    ids=["smaller", "1x3", "double", "long", "double smaller", "list", "float", "requires"])
def test_grad_assignment_matches_pytorch(value):
    def case(m):
        x = m.ones(3, requires_grad=True)
        x.grad = value(m)
        return _values(x.grad)
    same_as_torch(case)


@requires_torch
@pytest.mark.parametrize("value", [
    lambda m: m.ones(2), lambda m: m.ones(3, dtype=m.float64),
    lambda m: m.ones(3, dtype=m.long), lambda m: [1.0], lambda m: None],
    ids=["smaller", "double", "long", "list", "None"])
def test_data_assignment_matches_pytorch(value):
    def case(m):
        x = m.ones(3, requires_grad=True)
        x.data = value(m)
        return list(x.shape), str(x.dtype)
    same_as_torch(case)


@requires_torch
@pytest.mark.filterwarnings("ignore:grad and param do not obey")
@pytest.mark.parametrize("setup", [
    lambda m, x: setattr(x.grad, "data", m.ones(2)),
    lambda m, x: setattr(x.grad, "data", m.ones(1)),
    lambda m, x: setattr(x.grad, "data", m.ones(2, 3)),
    lambda m, x: setattr(x.grad, "data", m.ones(3, dtype=m.float64)),
    lambda m, x: setattr(x, "grad", m.ones(1).expand(3))],
    ids=["smaller", "broadcastable", "bigger", "double", "expanded"])
def test_accumulating_into_a_rebound_grad_matches_pytorch(setup):
    def case(m):
        x = m.ones(3, requires_grad=True)
        x.grad = m.ones(3)
        setup(m, x)
        (x * 2).sum().backward()
        return _values(x.grad)
    same_as_torch(case)


# ----------------------------------------------------------------------------------------
# optimizers: gradients and state of the wrong shape, dtype or kind
# ----------------------------------------------------------------------------------------

OPTIMIZERS = {
    "sgd": lambda m, ps: m.optim.SGD(ps, lr=0.1),
    "sgd_maximize": lambda m, ps: m.optim.SGD(ps, lr=0.1, maximize=True),
    "sgd_momentum": lambda m, ps: m.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.2),
    "sgd_nesterov": lambda m, ps: m.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "sgd_wd": lambda m, ps: m.optim.SGD(ps, lr=0.1, weight_decay=0.1),
    "adam": lambda m, ps: m.optim.Adam(ps),
    "adam_wd": lambda m, ps: m.optim.Adam(ps, weight_decay=0.1),
    "adam_amsgrad": lambda m, ps: m.optim.Adam(ps, amsgrad=True),
    "adamw": lambda m, ps: m.optim.AdamW(ps),
    "rmsprop": lambda m, ps: m.optim.RMSprop(ps),
    "rmsprop_wd": lambda m, ps: m.optim.RMSprop(ps, weight_decay=0.1),
    "rmsprop_centered_momentum": lambda m, ps: m.optim.RMSprop(ps, momentum=0.5, centered=True),
}

GRAD_DATA = {
    "smaller": lambda m: m.ones(2),
    "bigger": lambda m: m.ones(4),
    "1x3": lambda m: m.ones(1, 3),
    "3x1": lambda m: m.ones(3, 1),
    "0-d": lambda m: m.tensor(0.5),
    "one": lambda m: m.ones(1),
    "double": lambda m: m.ones(3, dtype=m.float64),
    "long": lambda m: m.ones(3, dtype=m.long),
    "bool": lambda m: m.ones(3, dtype=m.bool),
    "double smaller": lambda m: m.ones(2, dtype=m.float64),
    "non-contiguous": lambda m: m.ones(3, 2)[:, 0] * 0.5,
}


def _step_refused_or_done(m, opt, params):
    """opt.step(); a refused step must leave every parameter as it was (numgrad)."""
    before = [p.detach().tolist() for p in params]
    try:
        opt.step()
    except Exception:
        if m is ng:
            assert [p.detach().tolist() for p in params] == before, "a refused step wrote"
        raise
    return [_values(p) for p in params]


@requires_torch
@pytest.mark.parametrize("opt", list(OPTIMIZERS))
@pytest.mark.parametrize("grad", list(GRAD_DATA))
def test_optimizer_checks_the_gradient_as_pytorch(opt, grad):
    def case(m):
        p = m.ones(3, requires_grad=True)
        o = OPTIMIZERS[opt](m, [p])
        p.grad = m.zeros(3)
        p.grad.data = GRAD_DATA[grad](m)
        return _step_refused_or_done(m, o, [p])
    same_as_torch(case)


@requires_torch
@pytest.mark.parametrize("opt", list(OPTIMIZERS))
@pytest.mark.parametrize("data", [
    lambda m: m.ones(2), lambda m: m.ones(2, 3).t()[0], lambda m: m.ones(1).expand(3)],
    ids=["smaller", "non-contiguous", "expanded"])
def test_optimizer_after_param_data_rebound(opt, data):
    def case(m):
        p = m.ones(3, requires_grad=True)
        o = OPTIMIZERS[opt](m, [p])
        p.grad = m.ones(3)
        p.data = data(m)
        return _step_refused_or_done(m, o, [p])
    same_as_torch(case)


STATE_KEYS = {
    "sgd_momentum": ["momentum_buffer"],
    "adam": ["exp_avg", "exp_avg_sq", "step"],
    "adam_amsgrad": ["max_exp_avg_sq"],
    "adamw": ["exp_avg", "step"],
    "rmsprop": ["square_avg", "step"],
    "rmsprop_centered_momentum": ["momentum_buffer", "grad_avg", "step"],
}

STATE_VALUES = {
    "smaller": lambda m: m.ones(2),
    "bigger": lambda m: m.ones(4),
    "1x3": lambda m: m.ones(1, 3),
    "0-d": lambda m: m.tensor(0.5),
    "one": lambda m: m.ones(1),
    "double": lambda m: m.ones(3, dtype=m.float64),
    "long": lambda m: m.ones(3, dtype=m.long),
    "list": lambda m: [1.0, 2.0, 3.0],
    "float": lambda m: 1.0,
    "None": lambda m: None,
    "str": lambda m: "abc",
    "missing": lambda m: KeyError,
    "non-contiguous": lambda m: m.ones(3, 2)[:, 0] * 0.5,
    "step-like": lambda m: m.tensor([3.0]),
}


def _state_case(opt, key, value, loaded):
    def case(m):
        p = m.ones(3, requires_grad=True)
        o = OPTIMIZERS[opt](m, [p])
        p.grad = m.ones(3) * 0.5
        o.step()
        if loaded:
            sd = o.state_dict()
            state = sd["state"][0]
        else:
            state = o.state[p]
        v = value(m)
        if v is KeyError:
            del state[key]
        else:
            state[key] = v
        if loaded:
            o = OPTIMIZERS[opt](m, [p])
            o.load_state_dict(sd)
        return _step_refused_or_done(m, o, [p])
    return case


@requires_torch
@pytest.mark.parametrize("value", list(STATE_VALUES))
@pytest.mark.parametrize("opt,key", [(o, k) for o, keys in STATE_KEYS.items() for k in keys])
def test_optimizer_checks_its_state_as_pytorch(opt, key, value):
    same_as_torch(_state_case(opt, key, STATE_VALUES[value], loaded=False))
    loaded = _state_case(opt, key, STATE_VALUES[value], loaded=True)
    if value == "str":  # PyTorch's loader turns a str into the repr of a generator
        assert _outcome(ng, loaded)[0] == _outcome(torch, loaded)[0]
    else:
        same_as_torch(loaded)


def _delete(d, k):
    del d[k]


LOADED = {
    "no state": lambda sd: _delete(sd, "state"),
    "no param_groups": lambda sd: _delete(sd, "param_groups"),
    "state is a list": lambda sd: sd.__setitem__("state", []),
    "param_groups not a list": lambda sd: sd.__setitem__("param_groups", 5),
    "one group too many": lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0])),
    "group of another size": lambda sd: sd["param_groups"][0].__setitem__("params", [0]),
    "params swapped": lambda sd: sd["param_groups"][0].__setitem__("params", [1, 0]),
    "group without params": lambda sd: _delete(sd["param_groups"][0], "params"),
    "state for another param": lambda sd: sd["state"].__setitem__(1, sd["state"][0]),
    "state not a dict": lambda sd: sd["state"].__setitem__(0, 5),
    "state a list": lambda sd: sd["state"].__setitem__(0, [1]),
    "empty state": lambda sd: sd["state"].__setitem__(0, {}),
    "unknown state key": lambda sd: sd["state"].__setitem__(7, {}),
    "group without lr": lambda sd: _delete(sd["param_groups"][0], "lr"),
    "group without momentum": lambda sd: _delete(sd["param_groups"][0], "momentum"),
    "betas of one": lambda sd: sd["param_groups"][0].__setitem__("betas", (0.9,)),
    "step as a number": lambda sd: sd["state"][0].__setitem__("step", 3.0),
    "not a dict": lambda sd: [1],
}


@requires_torch
@pytest.mark.parametrize("opt", ["sgd_momentum", "adam", "rmsprop_centered_momentum"])
@pytest.mark.parametrize("change", list(LOADED))
def test_load_state_dict_of_a_crafted_dict_matches_pytorch(opt, change):
    def case(m):
        p, q = m.ones(3, requires_grad=True), m.ones(2, requires_grad=True)
        o = OPTIMIZERS[opt](m, [p, q])
        p.grad, q.grad = m.ones(3), m.ones(2)
        o.step()
        sd = o.state_dict()
        sd = LOADED[change](sd) or sd
        o = OPTIMIZERS[opt](m, [p, q])
        o.load_state_dict(sd)
        o.step()
        return [_values(p), _values(q)], sorted(map(str, o.state_dict()["state"]))
    same_as_torch(case)


def test_refused_steps_leave_parameters_and_state_unchanged():
    for name in OPTIMIZERS:
        p = ng.ones(3, requires_grad=True)
        opt = OPTIMIZERS[name](ng, [p])
        p.grad = ng.ones(3)
        opt.step()
        snapshot = p.detach().tolist(), {k: v.tolist() for k, v in opt.state[p].items()}
        p.grad.data = ng.ones(2)
        with pytest.raises(RuntimeError):
            opt.step()
        assert (p.detach().tolist(), {k: v.tolist() for k, v in opt.state[p].items()}) \
            == snapshot, name


def test_loaded_state_of_the_wrong_shape_never_reaches_a_kernel(tmp_path):
    p = ng.ones(1000, requires_grad=True)
    opt = ng.optim.Adam([p])
    p.grad = ng.ones(1000)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = ng.ones(10)
    sd["state"][0]["exp_avg_sq"] = ng.ones(10)
    ng.save(sd, tmp_path / "opt.ngt")
    opt2 = ng.optim.Adam([p])
    opt2.load_state_dict(ng.load(tmp_path / "opt.ngt"))
    before = p.detach().tolist()
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        opt2.step()
    assert p.detach().tolist() == before


def test_empty_parameters_step_without_reading_them():
    for name in OPTIMIZERS:
        p = ng.ones(0, requires_grad=True)
        opt = OPTIMIZERS[name](ng, [p])
        p.grad = ng.ones(0)
        opt.step()
        opt.step()
        assert p.shape == (0,)


# ----------------------------------------------------------------------------------------
# legal hooks still change values
# ----------------------------------------------------------------------------------------

def test_same_shape_hooks_change_the_gradient():
    p = ng.ones(3, requires_grad=True)
    q = ng.ones(3, requires_grad=True)
    y = p * q
    z = y * 2
    p.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: g + 1)
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[1] * 0.5))
    z.sum().backward()
    assert p.grad.tolist() == [60.0, 60.0, 60.0]  # ((2 + 1) * 2) * q * 10
    assert q.grad.tolist() == [3.0, 3.0, 3.0]  # ((2 + 1) * 2) * p * 0.5


def test_hook_may_return_its_argument_or_modify_it_in_place():
    p = ng.ones(3, requires_grad=True)
    y = p * 2

    def in_place(g):
        g.mul_(3)
    y.register_hook(in_place)
    y.register_hook(lambda g: g)
    (y * 2).sum().backward()
    assert p.grad.tolist() == [12.0, 12.0, 12.0]


def test_hook_results_held_elsewhere_are_not_adopted_as_grad():
    # accumulating into a tensor the user still holds would change it (PyTorch copies it)
    held = ng.ones(3)
    p = ng.ones(3, requires_grad=True)
    p.register_hook(lambda g: held)
    (p * 2).sum().backward()
    (p * 2).sum().backward()
    assert held.tolist() == [1.0, 1.0, 1.0]
    assert p.grad.tolist() == [2.0, 2.0, 2.0]
    q, r = ng.ones(3, requires_grad=True), ng.ones(3, requires_grad=True)
    y = q + r  # passes the hook's tensor on as is
    y.register_hook(lambda g: held)
    y.sum().backward()
    (q + r).sum().backward()
    assert held.tolist() == [1.0, 1.0, 1.0]
    assert q.grad.tolist() == [2.0, 2.0, 2.0]


@requires_torch
def test_same_shape_hooks_match_pytorch():
    def case(m):
        p = m.ones(3, requires_grad=True)
        q = m.ones(3, requires_grad=True)
        y = p * q
        p.register_hook(lambda g: g * 10)
        y.register_hook(lambda g: g + 1)
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[1] * 0.5))
        def double_grad(t):
            t.grad.mul_(2)
        p.register_post_accumulate_grad_hook(double_grad)
        (y * 2).sum().backward()
        return _values(p.grad), _values(q.grad)
    assert same_as_torch(case)[0] == "ok"
