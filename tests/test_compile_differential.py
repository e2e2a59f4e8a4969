"""numgrad.compile against eager, by search: hypothesis writes programs and the sequences of
calls they get, and every compiled call must return what the same call returns eagerly (values,
gradients, parameters, errors), or run eagerly. A compiled function may replay only what it
can prove it replays right; a sequence is made to catch one that replays what it should not:

* calls repeat their inputs (a trace is checked against its second call), then change them:
  the values of a float tensor, of an index tensor (sometimes out of range), of a mask, the
  numbers in a settings dict and in a module attribute, a tuple argument, a module's
  ``training`` flag, the number of arguments;
* programs are chains of ops that read those inputs (indexing with a tensor, ``index_select``,
  ``gather``, ``embedding``, masks, ``x[i] = v``, dims and shapes given as tuples, dropout,
  BatchNorm), in the whole-step form (``backward()``, ``clip_grad_norm_`` and an SGD, Adam or
  AdamW step inside) and the forward form (the model compiled, its backward outside).
"""

import warnings

import numpy as np
import pytest

import numgrad
import numgrad.nn as nn
import numgrad.nn.functional as F

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

N, D = 6, 4  # rows and columns of the float input
L = 3  # length of the index tensor


# one op of a program: (name, what it reads); each maps a 2-D (rows, D) tensor to another
OPS = ("tanh", "add_cfg", "mul_attr", "index", "index_neg", "index_select", "gather",
       "mask_fill", "where", "setitem", "embedding", "sum_dims", "reshape", "permute",
       "dropout", "norm", "clamp_cfg", "softmax", "cat_index", "linear")


class Program(nn.Module):
    """A chain of ops; its state (a Linear, a BatchNorm, an embedding table, ``scale``) is
    the module's, so an eager twin can be made from the same weights."""

    def __init__(self, ops):
        super().__init__()
        self.ops = list(ops)
        self.lin = nn.Linear(D, D)
        self.norm = nn.BatchNorm1d(D)
        self.emb = nn.Embedding(N, D)
        self.scale = 1.5

    def forward(self, x, i, m, cfg, dims):
        h = x
        for op in self.ops:
            h = _apply(self, op, h, i, m, cfg, dims)
        return h


def _apply(mod, op, h, i, m, cfg, dims):
    rows = h.shape[0]
    if op == "tanh":
        return h.tanh()
    if op == "add_cfg":
        return h + cfg["shift"]
    if op == "mul_attr":
        return h * mod.scale
    if op == "index":
        return h[i % rows] * 2 if rows else h
    if op == "index_neg":
        return h[i] if rows >= N else h  # i may be negative or out of range: eager raises
    if op == "index_select":
        return h.index_select(0, i.abs() % rows) if rows else h
    if op == "gather":
        j = (i.abs() % D).reshape(1, -1).expand(rows, L)
        return h.gather(1, j).sum(1, keepdim=True).expand(rows, D) + h
    if op == "mask_fill":
        return h.masked_fill(m[:rows], cfg["fill"]) if rows <= N else h
    if op == "where":
        return numgrad.where(m[:rows], h, h * 0.5) if rows <= N else h
    if op == "setitem":
        y = h.clone()
        if rows:
            y[i % rows] = cfg["fill"]
        return y
    if op == "embedding":
        return mod.emb(i.abs() % N) + h.mean(0, keepdim=True)
    if op == "sum_dims":
        return h.sum(dims).reshape(1, -1).expand(2, D) if tuple(dims) == (0,) else \
            h.sum(dims, keepdim=True).expand(rows, D)
    if op == "reshape":
        return h.reshape(-1).reshape(rows, D)
    if op == "permute":
        return h.permute(1, 0).permute(1, 0).contiguous() * 1.0
    if op == "dropout":
        return F.dropout(h, 0.25, training=mod.training)
    if op == "norm":
        return mod.norm(h) if rows > 1 else h
    if op == "clamp_cfg":
        return h.clamp(min=cfg["lo"])
    if op == "softmax":
        return h.softmax(dims[-1] if dims else -1)
    if op == "cat_index":
        return numgrad.cat([h, h[i % rows]]) if rows else h
    if op == "linear":
        return mod.lin(h)
    raise AssertionError(op)


def _twins(ops, seed):
    numgrad.manual_seed(seed)
    a = Program(ops)
    b = Program(ops)
    b.load_state_dict(a.state_dict())
    return a, b


# what changes between the calls of a sequence
CHANGES = ("nothing", "x", "index", "index_bad", "mask", "cfg", "attr", "dims", "mode",
           "inplace_param")


OPTIMIZERS = ("sgd", "adam", "adamw_clip")


@st.composite
def sequences(draw):
    ops = draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=4))
    changes = ["nothing"] + draw(st.lists(st.sampled_from(CHANGES), min_size=3, max_size=6))
    return ops, changes, draw(st.integers(0, 2**16)), draw(st.sampled_from(OPTIMIZERS))


def _optimizer(name, params):
    if name == "sgd":
        return numgrad.optim.SGD(params, lr=0.1, momentum=0.5)
    if name == "adam":
        return numgrad.optim.Adam(params, lr=0.01)
    return numgrad.optim.AdamW(params, lr=0.01)


def _inputs(rng):
    return {
        "x": rng.standard_normal((N, D)).astype(np.float32),
        "i": rng.integers(-N, N, L),
        "m": rng.random((N, D)) < 0.5,
        "cfg": {"shift": float(rng.integers(-3, 4)) / 2, "fill": float(rng.integers(-2, 3)),
                "lo": float(rng.integers(-2, 1)) / 4},
        "scale": float(rng.integers(1, 4)),
        "dims": (1,),
        "training": True,
    }


def _change(state, what, rng):
    s = dict(state, cfg=dict(state["cfg"]))
    if what == "x":
        s["x"] = rng.standard_normal((N, D)).astype(np.float32)
    elif what == "index":
        s["i"] = rng.integers(-N, N, L)
    elif what == "index_bad":
        s["i"] = np.array([0, N + int(rng.integers(0, 3)), 1])
    elif what == "mask":
        s["m"] = rng.random((N, D)) < 0.5
    elif what == "cfg":
        s["cfg"][str(rng.choice(["shift", "fill", "lo"]))] = float(rng.integers(-4, 5)) / 2
    elif what == "attr":
        s["scale"] = float(rng.integers(1, 5)) / 2
    elif what == "dims":
        s["dims"] = [(1,), (0,), (0, 1), [1], [0, 1]][int(rng.integers(0, 5))]
    elif what == "mode":
        s["training"] = not s["training"]
    elif what == "inplace_param":
        s["bump"] = s.get("bump", 0) + 1
    return s


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as exc:  # the same class of error is what must come out of both
        return "error", type(exc)


def _same(a, b):
    if isinstance(a, numgrad.Tensor):
        return isinstance(b, numgrad.Tensor) and a.dtype is b.dtype and a.shape == b.shape \
            and np.array_equal(a.detach().numpy(), b.detach().numpy(), equal_nan=True)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _setup(mod, s):
    mod.scale = s["scale"]
    mod.train(s["training"])
    bump = s.get("bump", 0)
    if bump != getattr(mod, "_bumped", 0):
        with numgrad.no_grad():
            mod.lin.bias.add_(0.25 * (bump - getattr(mod, "_bumped", 0)))
        mod._bumped = bump


def _args(s):
    return (numgrad.tensor(s["x"], requires_grad=True), numgrad.tensor(s["i"]),
            numgrad.tensor(s["m"]), s["cfg"], s["dims"])


def _check_sequence(ops, changes, seed, opt_name, form, fuse):
    rng = np.random.default_rng(seed)
    eager, twin = _twins(ops, seed)
    opt_e = _optimizer(opt_name, eager.parameters())
    opt_c = _optimizer(opt_name, twin.parameters())
    clip = opt_name.endswith("clip")

    def step_of(model, opt):
        def step(x, i, m, cfg, dims):
            opt.zero_grad()
            out = model(x, i, m, cfg, dims)
            loss = (out * out).mean()
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return loss.detach(), out.detach(), x.grad
        return step

    def fwd_of(model):
        def run(x, i, m, cfg, dims):
            out = model(x, i, m, cfg, dims)
            loss = (out * out).mean()
            loss.backward()
            return loss.detach(), out.detach(), x.grad
        return run

    options = {"fuse": fuse}
    if form == "step":
        run_e = step_of(eager, opt_e)
        run_c = numgrad.compile(step_of(twin, opt_c), options=options)
    else:
        run_e = fwd_of(eager)
        run_c = fwd_of(numgrad.compile(twin, options=options))
    state = _inputs(rng)
    for k, what in enumerate(changes):
        state = _change(state, what, rng)
        for mod in (eager, twin):
            _setup(mod, state)
        numgrad.manual_seed(seed + k)
        want = _outcome(run_e, *_args(state))
        numgrad.manual_seed(seed + k)
        got = _outcome(run_c, *_args(state))
        assert want[0] == got[0] and (want[0] == "error" and want[1] is got[1] or
                                      want[0] == "ok" and _same(want[1], got[1])), \
            f"call {k} ({what}) of {ops}, {form}: eager {want}, compiled {got}"
        for p, q in zip(eager.parameters(), twin.parameters()):
            assert _same(p, q), f"call {k} ({what}) of {ops}: parameters differ"
        for p, q in zip(eager.buffers(), twin.buffers()):
            assert _same(p, q), f"call {k} ({what}) of {ops}: buffers differ"


_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


@settings(max_examples=60, **_SETTINGS)
@given(seq=sequences(), form=st.sampled_from(["step", "fwd"]))
def test_compiled_programs_equal_eager(seq, form):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_sequence(*seq, form, fuse=False)


@settings(max_examples=12, **_SETTINGS)
@given(seq=sequences(), form=st.sampled_from(["step", "fwd"]))
def test_fused_compiled_programs_equal_eager(seq, form):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_sequence(*seq, form, fuse=True)
