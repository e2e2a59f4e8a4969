"""Property-based tests: random shapes, broadcasts, dtypes, views, dims and indices thrown at
every op, run under numgrad and under PyTorch. Each example must either raise in both (the
same exception class) or succeed in both with equal results (values, dtypes, shapes and
``requires_grad``), equal in-place effects, and, when the result has a gradient, equal input
gradients for the same random output gradient.

* Inputs: 0-4 dims of sizes 0-5; float32/float64/int64/int32/uint8/bool; seen through views
  (permuted, stepped, offset, expanded) of a leaf, or of a clone for in-place ops; specials
  (nan, inf, -0) in some float examples; values on a coarse grid, so ties happen.
* The ops are the rows of the tables below: ``Op(name, strategy, call)``, where
  ``strategy`` draws the arguments (``Arr`` for a tensor argument, index arrays, Python
  values) and ``call(L, *args)`` runs the op under ``L`` (``torch`` or ``numgrad``).
* Known numgrad bugs are ``xfail(strict=False)`` on their own row (``bug=``), with the
  reason: remove the mark once fixed.

Select with ``pytest -m properties`` (marker ``properties``). Examples are derandomized (CI
runs the same ones every time) and no example database is written.
"""

import math
import operator
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [requires_torch, pytest.mark.properties]

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
I64, I32, U8, BOOL = (np.dtype(t) for t in (np.int64, np.int32, np.uint8, np.bool_))
FLOATS = [F32, F64]
ALL = [F32, F64, I64, I32, U8, BOOL]
NUMERIC = [F32, F64, I64, I32, U8]
SIDE = st.sampled_from([1, 2, 3, 0, 4, 5])  # shrinks towards size 1
SEED = st.integers(0, 2**31 - 1)
EXAMPLES = 25  # per op; the whole file runs in about two minutes once kernels are compiled
# CI's sanitizer pass (NUMBA_BOUNDSCHECK=1) runs the first half of each row's examples: the
# examples are derandomized, so these are the main pass's first ones, now under bounds checks
BOUNDS_PASS = os.environ.get("NUMBA_BOUNDSCHECK") == "1"


def shapes(min_dims=0, max_dims=4):
    return st.lists(SIDE, min_size=min_dims, max_size=max_dims).map(tuple)


# ----------------------------------------------------------------------------------------
# tensor arguments: values, views, leaves
# ----------------------------------------------------------------------------------------


def _values(seed, shape, dtype, special):
    rng = np.random.default_rng(seed)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        return np.asarray(rng.integers(0 if dtype.kind == "u" else -5, 6, shape), dtype)
    v = np.asarray(np.round(rng.standard_normal(shape) * 2, 1), dtype)  # a 0.1 grid: ties
    if special and v.size:
        pick = rng.random(shape) < 0.3
        v[pick] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype),
                             int(pick.sum()))
    return v


def _junk(dtype):
    return np.array(True if dtype == BOOL else 77, dtype)


@dataclass(frozen=True)
class Arr:
    """A tensor argument: leaf ``base`` (requires_grad ``grad``), cloned first if ``clone``,
    then seen through ``view``: ("perm", p) | ("step", d) | ("offset", d) | ("expand", shape)
    | ("contig",). The view holds the op's input values."""

    base: np.ndarray = field(repr=False)
    view: tuple
    grad: bool
    clone: bool = False

    def __repr__(self):
        vals = np.array2string(self.base, threshold=40, separator=",").replace("\n", "")
        return (f"Arr({self.base.dtype}{list(self.base.shape)} view={self.view} "
                f"grad={self.grad}{' clone' if self.clone else ''} base={vals})")


def _with_view(vals, view):
    """The leaf array that ``view`` turns into ``vals``."""
    kind = view[0]
    if kind == "perm":
        return np.ascontiguousarray(vals.transpose(np.argsort(view[1])))
    if kind in ("step", "offset"):
        d = view[1]
        shape = list(vals.shape)
        n = shape[d]
        shape[d] = 2 * n if kind == "step" else n + 1
        base = np.full(shape, _junk(vals.dtype))
        part = slice(None, None, 2) if kind == "step" else slice(1, None)
        key = (slice(None),) * d + (part,)
        base[key] = vals
        return base
    if kind == "expand":
        return np.ascontiguousarray(vals[tuple(slice(0, 1) if s == 1 else slice(None)
                                               for s in view[2])])
    return vals


@st.composite
def _view(draw, shape):
    kinds = ["contig", "contig"]
    if shape:
        kinds += ["step", "offset", "expand"]
    if len(shape) >= 2:
        kinds.append("perm")
    kind = draw(st.sampled_from(kinds))
    if kind == "perm":
        return ("perm", tuple(draw(st.permutations(range(len(shape))))))
    if kind in ("step", "offset"):
        return (kind, draw(st.integers(0, len(shape) - 1)))
    if kind == "expand":
        dims = [d for d, s in enumerate(shape) if s > 1]
        if not dims:
            return ("contig",)
        chosen = draw(st.sets(st.sampled_from(dims), min_size=1))
        # (expand, target shape, mask: 1 where the leaf has size 1)
        return ("expand", shape, tuple(1 if d in chosen else 0 for d in range(len(shape))))
    return ("contig",)


@st.composite
def tensors(draw, shape=None, dtypes=ALL, min_dims=0, max_dims=4, views=True, clone=False,
            values=None):
    """An ``Arr``: ``values(seed, shape, dtype)`` overrides the default value palette."""
    if shape is None:
        shape = draw(shapes(min_dims, max_dims))
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    seed = draw(SEED)
    special = dtype.kind == "f" and draw(st.sampled_from([False, False, False, True]))
    vals = _values(seed, shape, dtype, special) if values is None else values(seed, shape, dtype)
    view = draw(_view(shape)) if views else ("contig",)
    grad = dtype.kind == "f" and draw(st.sampled_from([True, True, False]))
    if clone is None:
        clone = draw(st.booleans())
    return Arr(_with_view(vals, view), view, grad, clone)


def _apply_view(t, view):
    kind = view[0]
    if kind == "perm":
        return t.permute(*view[1])
    if kind == "step":
        return t[(slice(None),) * view[1] + (slice(None, None, 2),)]
    if kind == "offset":
        return t.narrow(view[1], 1, t.shape[view[1]] - 1)
    if kind == "expand":
        return t.expand(*view[1])
    return t


@dataclass(frozen=True)
class Idx:
    """An index (or mask) tensor argument: no gradient, contiguous."""

    a: np.ndarray

    def __repr__(self):
        return f"Idx({self.a.dtype}{list(self.a.shape)} {self.a.tolist()})"


class _Built:
    """Arguments made for one library, and the leaves and clones they came from."""

    def __init__(self, L):
        self.L = L
        self.leaves, self.clones = [], []

    def __call__(self, a):
        L = self.L
        if isinstance(a, Arr):
            leaf = L.tensor(a.base.copy(), requires_grad=a.grad)
            self.leaves.append(leaf)
            t = leaf
            if a.clone:
                t = leaf.clone()
                self.clones.append(t)
            return _apply_view(t, a.view)
        if isinstance(a, Idx):
            return L.tensor(a.a.copy())
        if isinstance(a, tuple):
            return tuple(self(x) for x in a)
        if isinstance(a, list):
            return [self(x) for x in a]
        if isinstance(a, dict):
            return {k: self(v) for k, v in a.items()}
        return a


# ----------------------------------------------------------------------------------------
# comparing the two runs
# ----------------------------------------------------------------------------------------


def _tol(dtype):
    return {"rtol": 1e-4, "atol": 3e-4} if dtype == F32 else {"rtol": 1e-9, "atol": 1e-9}


def _same(got, want, where):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ng.Tensor), f"{where}: {type(got).__name__}, PyTorch a Tensor"
        g, w = got.detach().numpy(), want.detach().numpy()
        assert (g.dtype, g.shape) == (w.dtype, w.shape), \
            f"{where}: {g.dtype}{list(g.shape)}, PyTorch {w.dtype}{list(w.shape)}"
        assert got.requires_grad == want.requires_grad, f"{where}: requires_grad differs"
        try:
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, equal_nan=True, **_tol(w.dtype))
            else:
                np.testing.assert_array_equal(g, w)
        except AssertionError as e:
            raise AssertionError(f"{where}: values differ {e}") from None
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), \
            f"{where}: {got!r}, PyTorch {want!r}"
        for k, (a, b) in enumerate(zip(got, want)):
            _same(a, b, f"{where}[{k}]")
    elif isinstance(want, float) and math.isnan(want):
        assert isinstance(got, float) and math.isnan(got), f"{where}: {got!r}, PyTorch nan"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r}, PyTorch {want!r}"


def _builtin(e):
    """The built-in exception class a PyTorch error is caught as."""
    return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def _same_outcome(nerr, terr, what):
    if nerr is None and terr is None:
        return False
    assert nerr is not None, f"{what}: numgrad succeeded, PyTorch raised {terr!r}"
    assert terr is not None, f"{what}: numgrad raised {nerr!r}, PyTorch succeeded"
    assert isinstance(nerr, _builtin(terr)), \
        f"{what}: numgrad raised {nerr!r}, PyTorch {_builtin(terr).__name__}: {terr}"
    return True


def _flat(out):
    if isinstance(out, (ng.Tensor, torch.Tensor)):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return []


def _run(L, op, args):
    b = _Built(L)
    built = b(args)
    err = out = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = op.call(L, *built)
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's below
        err = e
    return out, err, b, built


def _backward(L, b, out, seed):
    """Leaf gradients for a random gradient of every output (and clone) that has one."""
    targets = [t for t in _flat(out) + b.clones if t.requires_grad]
    if not targets:
        return None, None
    rng = np.random.default_rng(seed)
    grads = [L.tensor(np.round(rng.standard_normal(tuple(t.shape)), 2).astype(
        t.detach().numpy().dtype)) for t in targets]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            L.autograd.backward(targets, grads)
    except Exception as e:  # noqa: BLE001
        return None, e
    return [leaf.grad for leaf in b.leaves], None


def check(op, args, seed):
    """Run ``op`` on ``args`` under both libraries and compare everything observable."""
    tout, terr, tb, targs = _run(torch, op, args)
    nout, nerr, nb, nargs = _run(ng, op, args)
    if _same_outcome(nerr, terr, "call"):
        return
    _same(nout, tout, "result")
    if op.inplace:
        assert (nout is nargs[0]) == (tout is targs[0]), "in-place op must return self"
        _same(nargs[0], targs[0], "written tensor")
    _same(nb.clones, tb.clones, "clones")
    _same([leaf.detach() for leaf in nb.leaves], [leaf.detach() for leaf in tb.leaves],
          "leaves")
    tg, terr = _backward(torch, tb, tout, seed)
    ng_, nerr = _backward(ng, nb, nout, seed)
    if _same_outcome(nerr, terr, "backward") or tg is None:
        assert ng_ is None or all(g is None for g in ng_), "numgrad made gradients"
        return
    assert ng_ is not None, "numgrad's result has no gradient"
    for k, (a, b) in enumerate(zip(ng_, tg)):
        assert (a is None) == (b is None), f"grad of leaf {k}: {a!r}, PyTorch {b!r}"
        if b is not None:
            _same(a, b, f"grad of leaf {k}")


# ----------------------------------------------------------------------------------------
# the op table
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    name: str
    strategy: st.SearchStrategy
    call: object
    bug: str = ""  # a known numgrad bug: the row is xfail(strict=False) with this reason
    inplace: bool = False
    examples: int = EXAMPLES


def _run_op(op):
    phases = [Phase.explicit, Phase.generate] if op.bug else list(Phase)  # xfail: no shrink
    examples = max(10, op.examples // 2) if BOUNDS_PASS else op.examples

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              phases=phases, print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])
    @given(args=op.strategy, seed=SEED)
    def prop(args, seed):
        check(op, args, seed)

    prop()


def tup(*strategies):
    return st.tuples(*strategies)


# --- elementwise -------------------------------------------------------------------------

UNARY = [
    ("neg", lambda L, x: -x), ("abs", lambda L, x: L.abs(x)), ("exp", lambda L, x: x.exp()),
    ("log", lambda L, x: L.log(x)), ("sqrt", lambda L, x: x.sqrt()),
    ("sin", lambda L, x: L.sin(x)), ("cos", lambda L, x: x.cos()),
    ("tanh", lambda L, x: L.tanh(x)), ("sigmoid", lambda L, x: x.sigmoid()),
    ("relu", lambda L, x: L.relu(x)), ("sign", lambda L, x: x.sign()),
    ("square", lambda L, x: L.square(x)), ("reciprocal", lambda L, x: x.reciprocal()),
    ("floor", lambda L, x: L.floor(x)), ("ceil", lambda L, x: x.ceil()),
    ("trunc", lambda L, x: L.trunc(x)), ("round", lambda L, x: x.round()),
    ("logical_not", lambda L, x: L.logical_not(x)), ("isnan", lambda L, x: L.isnan(x)),
    ("isfinite", lambda L, x: x.isfinite()), ("bitwise_not", lambda L, x: ~x),
    ("pow_2", lambda L, x: x ** 2), ("pow_half", lambda L, x: L.pow(x, 0.5)),
    ("pow_neg", lambda L, x: x ** -1.5), ("pow_3_int", lambda L, x: x.pow(3)),
    ("rpow", lambda L, x: 2 ** x), ("clamp", lambda L, x: x.clamp(-1, 1.5)),
    ("clamp_min", lambda L, x: L.clamp_min(x, 0.5)), ("clamp_max", lambda L, x: x.clamp_max(0)),
    ("clamp_min_only", lambda L, x: L.clamp(x, min=-0.5)),
    ("clip", lambda L, x: x.clip(max=1)), ("add_scalar", lambda L, x: x + 1.5),
    ("mul_int", lambda L, x: x * 3), ("rsub", lambda L, x: 2 - x),
    ("div_scalar", lambda L, x: x / 4),
    ("rdiv", lambda L, x: 1 / x), ("floordiv_s", lambda L, x: x // 2),
    ("mod_s", lambda L, x: x % 3), ("eq_s", lambda L, x: x == 1), ("lt_s", lambda L, x: x < 0.5),
    ("to_float", lambda L, x: x.float()), ("to_long", lambda L, x: x.long()),
    ("to_bool", lambda L, x: x.bool()), ("to_uint8", lambda L, x: x.byte()),
    ("F.softplus", lambda L, x: L.nn.functional.softplus(x)),
    ("F.gelu", lambda L, x: L.nn.functional.gelu(x)),
    ("F.silu", lambda L, x: L.nn.functional.silu(x)),
    ("F.leaky_relu", lambda L, x: L.nn.functional.leaky_relu(x, 0.1)),
]

_ANY = tup(tensors())
ELEMENTWISE = [Op(n, _ANY, f) for n, f in UNARY]


@st.composite
def broadcast_pair(draw, dtypes=ALL, scalar=True, max_dims=4, number_first=False,
                   numbers=(2, -1.5, 0, True, 0.5)):
    """Two arguments of broadcastable (sometimes not) shapes, or a tensor and a number (the
    number first too if ``number_first``: operators)."""
    a = draw(shapes(0, max_dims))
    kind = draw(st.sampled_from(["bcast", "bcast", "same", "bad", "scalar"] if scalar
                                else ["bcast", "bcast", "same", "bad"]))
    if kind == "scalar":
        pair = (draw(tensors(a, dtypes)), draw(st.sampled_from(numbers)))
        return pair[::-1] if number_first and draw(st.booleans()) else pair
    b = list(a)
    if kind == "bcast":
        b = b[draw(st.integers(0, len(b))):]
        b = [1 if draw(st.booleans()) else s for s in b]
        if draw(st.booleans()):
            a, b = tuple(b), list(a)
    elif kind == "bad" and b:
        d = draw(st.integers(0, len(b) - 1))
        b[d] = draw(st.sampled_from([s for s in (2, 3, 4) if s != b[d]]))
    return draw(tensors(tuple(a), dtypes)), draw(tensors(tuple(b), dtypes))


OPERATORS = [
    ("add", lambda L, a, b: a + b), ("sub", lambda L, a, b: a - b),
    ("mul", lambda L, a, b: a * b), ("div", lambda L, a, b: a / b),
    ("pow", lambda L, a, b: a ** b), ("eq", lambda L, a, b: a == b),
    ("lt", lambda L, a, b: a < b), ("gt", lambda L, a, b: a > b),
    ("floor_divide", lambda L, a, b: a // b), ("remainder", lambda L, a, b: a % b),
    ("bitwise_and", lambda L, a, b: a & b), ("bitwise_or", lambda L, a, b: a | b),
    ("bitwise_xor", lambda L, a, b: a ^ b),
    ("bitwise_left_shift", lambda L, a, b: a << b),
    ("bitwise_right_shift", lambda L, a, b: a >> b),
]
BINARY = [
    ("sub_fn", lambda L, a, b: L.sub(a, b)), ("div_fn", lambda L, a, b: L.div(a, b)),
    ("div_floor", lambda L, a, b: L.div(a, b, rounding_mode="floor")),
    ("div_trunc", lambda L, a, b: L.div(a, b, rounding_mode="trunc")),
    ("pow_fn", lambda L, a, b: L.pow(a, b)), ("maximum", lambda L, a, b: L.maximum(a, b)),
    ("minimum", lambda L, a, b: L.minimum(a, b)), ("ne", lambda L, a, b: L.ne(a, b)),
    ("le", lambda L, a, b: L.le(a, b)), ("ge", lambda L, a, b: L.ge(a, b)),
    ("logical_and", lambda L, a, b: L.logical_and(a, b)),
    ("logical_or", lambda L, a, b: L.logical_or(a, b)),
    ("logical_xor", lambda L, a, b: L.logical_xor(a, b)),
    ("add_alpha", lambda L, a, b: L.add(a, b, alpha=2)),
    ("rsub_fn", lambda L, a, b: L.rsub(a, b)),
    ("clamp_tensor", lambda L, a, b: L.clamp(a, b, None)),
    ("isclose", lambda L, a, b: L.isclose(a, b)),
    ("isclose_tol", lambda L, a, b: a.isclose(b, rtol=0.1, atol=0.05, equal_nan=True)),
    ("allclose", lambda L, a, b: L.allclose(a, b, 0.01, 0.1)),
    ("equal", lambda L, a, b: a.equal(b)),
    ("type_as", lambda L, a, b: a.type_as(b)),
]
_NUMBERS = (2, -1.5, 0, 0.5)  # not True: PyTorch's True ** x fails its backward (an assert)
ELEMENTWISE += [Op(n, broadcast_pair(number_first=True, numbers=_NUMBERS), f)
                for n, f in OPERATORS]
ELEMENTWISE += [Op(n, broadcast_pair(numbers=_NUMBERS), f) for n, f in BINARY]
ELEMENTWISE.append(Op("mse_loss", broadcast_pair(scalar=False),
                      lambda L, a, b: L.nn.functional.mse_loss(a, b)))


@st.composite
def where_args(draw):
    a, b = draw(broadcast_pair(scalar=False))
    c = draw(tensors(draw(shapes(0, 3)), [BOOL, BOOL, U8]))
    return c, a, b


ELEMENTWISE += [
    Op("where", where_args(), lambda L, c, a, b: L.where(c, a, b)),
    Op("clamp_tensors", where_args(), lambda L, c, a, b: L.clamp(a, b, c)),
]

# --- reductions ----------------------------------------------------------------------------


@st.composite
def with_dim(draw, dtypes=ALL, tuples=True, none=True, keepdim=True, min_dims=0):
    x = draw(tensors(dtypes=dtypes, min_dims=min_dims))
    n = len(_shape(x))
    one = st.integers(-max(n, 1) - 1, max(n, 1))  # one out of range on either side
    choices = [one, one]
    if tuples:
        choices.append(st.lists(one, max_size=3).map(tuple))
    if none:
        choices.append(st.none())
    dim = draw(st.one_of(*choices))
    return (x, dim, draw(st.booleans())) if keepdim else (x, dim)


def _shape(a):
    v = a.view
    if v[0] == "perm":
        return tuple(a.base.shape[i] for i in v[1])
    if v[0] == "expand":
        return v[1]
    s = list(a.base.shape)
    if v[0] == "step":
        s[v[1]] = (s[v[1]] + 1) // 2
    elif v[0] == "offset":
        s[v[1]] -= 1
    return tuple(s)


def _dimmed(fn, none_call):
    """Call ``fn(x, dim, keepdim)``, or ``none_call(x)`` when dim is None."""
    def call(L, x, dim, keepdim=False):
        return none_call(L, x) if dim is None else fn(L, x, dim, keepdim)
    return call


REDUCTIONS = [
    Op("sum", with_dim(), _dimmed(lambda L, x, d, k: x.sum(d, keepdim=k), lambda L, x: x.sum())),
    Op("mean", with_dim(), _dimmed(lambda L, x, d, k: L.mean(x, d, keepdim=k),
                                   lambda L, x: x.mean())),
    Op("amax", with_dim(none=False), lambda L, x, d, k: L.amax(x, d, keepdim=k)),
    Op("amin", with_dim(none=False), lambda L, x, d, k: x.amin(d, keepdim=k)),
    Op("max_dim", with_dim(tuples=False), _dimmed(lambda L, x, d, k: x.max(d, keepdim=k),
                                                  lambda L, x: x.max())),
    Op("min_dim", with_dim(tuples=False), _dimmed(lambda L, x, d, k: L.min(x, d, keepdim=k),
                                                  lambda L, x: L.min(x))),
    Op("argmax", with_dim(tuples=False), lambda L, x, d, k: x.argmax(d, keepdim=k)),
    Op("argmin", with_dim(tuples=False), lambda L, x, d, k: L.argmin(x, d, k)),
    Op("logsumexp", with_dim(none=False), lambda L, x, d, k: L.logsumexp(x, d, keepdim=k)),
    Op("norm", with_dim(FLOATS), _dimmed(lambda L, x, d, k: x.norm(dim=d, keepdim=k),
                                         lambda L, x: x.norm())),
    Op("norm_p1", with_dim(FLOATS), lambda L, x, d, k: L.norm(x, 1, d, k)),
    Op("norm_inf", with_dim(FLOATS), lambda L, x, d, k: x.norm(float("inf"), d, k)),
    Op("softmax", with_dim(tuples=False, none=False, keepdim=False),
       lambda L, x, d: L.softmax(x, d)),
    Op("log_softmax", with_dim(tuples=False, none=False, keepdim=False),
       lambda L, x, d: x.log_softmax(d)),
    Op("softmax_f64", with_dim(tuples=False, none=False, keepdim=False),
       lambda L, x, d: L.nn.functional.softmax(x, d, dtype=L.float64)),
]


@st.composite
def ce_args(draw):
    shape = draw(st.sampled_from([(3,), (2, 3), (4, 5), (0, 3), (2, 3, 2), (1, 1)]))
    c = shape[0] if len(shape) == 1 else shape[1]
    x = draw(tensors(shape, FLOATS))
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    kind = draw(st.sampled_from(["index", "index", "probs", "bad"]))
    if kind == "probs":
        t = draw(tensors(shape, [x.base.dtype], views=False,
                         values=lambda s, sh, dt: np.random.default_rng(s).random(sh).astype(dt)))
        t = Arr(t.base, t.view, False)
    else:
        lo, hi = (0, c - 1) if kind == "index" else (-101, c)
        rng = np.random.default_rng(draw(SEED))
        t = Idx(np.where(rng.random(tshape) < 0.2, -100, rng.integers(lo, hi + 1, tshape)))
    kw = {"reduction": draw(st.sampled_from(["mean", "sum", "none"])),
          "label_smoothing": draw(st.sampled_from([0.0, 0.0, 0.2]))}
    return x, t, kw


REDUCTIONS.append(Op("cross_entropy", ce_args(),
                     lambda L, x, t, kw: L.nn.functional.cross_entropy(x, t, **kw)))

# --- matmul family -------------------------------------------------------------------------

MM_DTYPES = [F32, F32, F64, I64, BOOL]


@st.composite
def mm_args(draw, kind):
    n, k, m, b = (draw(SIDE) for _ in range(4))
    k2 = k if draw(st.sampled_from([True, True, True, False])) else draw(SIDE)
    if kind == "matmul":
        da, db = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        ba = draw(shapes(da - 2, da - 2)) if da > 2 else ()
        bb = draw(shapes(db - 2, db - 2)) if db > 2 else ()
        sa = ba + ((n, k) if da > 1 else (k,))
        sb = bb + ((k2, m) if db > 1 else (k2,))
    else:
        sa, sb = {"mm": ((n, k), (k2, m)), "mv": ((n, k), (k2,)), "dot": ((k,), (k2,)),
                  "outer": ((n,), (m,)), "bmm": ((b, n, k), (b, k2, m))}[kind]
    dt = draw(st.sampled_from(MM_DTYPES))
    dt2 = dt if draw(st.sampled_from([True, True, True, False])) else draw(st.sampled_from(ALL))
    return draw(tensors(sa, [dt])), draw(tensors(sb, [dt2]))


MATMUL = [
    Op("matmul", mm_args("matmul"), lambda L, a, b: a @ b, examples=40),
    Op("mm", mm_args("mm"), lambda L, a, b: L.mm(a, b)),
    Op("mv", mm_args("mv"), lambda L, a, b: a.mv(b)),
    Op("dot", mm_args("dot"), lambda L, a, b: L.dot(a, b)),
    Op("outer", mm_args("outer"), lambda L, a, b: L.outer(a, b)),
    Op("bmm", mm_args("bmm"), lambda L, a, b: L.bmm(a, b)),
]

# --- shape ops -----------------------------------------------------------------------------


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0] or [1]


@st.composite
def target_shape(draw, shape, minus_one=True):
    """A shape with the same number of elements (or -1 for one dim), or any shape."""
    n = math.prod(shape)
    mode = draw(st.sampled_from(["same", "same", "minus1", "any"] if minus_one else
                                ["same", "same", "any"]))
    if mode == "any":
        return draw(shapes())
    nd = draw(st.integers(0 if n == 1 else 1, 4))
    dims, rest = [], n
    for _ in range(nd - 1):
        d = draw(st.sampled_from(_divisors(rest) if rest else [0, 1, 2, 3]))
        dims.append(d)
        rest = rest // d if d else 0
    if nd:
        dims.append(rest if n else draw(st.sampled_from([0, 1, 2])))
    if n == 0 and 0 not in dims and dims:
        dims[0] = 0
    if mode == "minus1" and dims:
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@st.composite
def x_and(draw, make, dtypes=ALL, min_dims=0, clone=False):
    """(x, *make(draw, shape of x))."""
    x = draw(tensors(dtypes=dtypes, min_dims=min_dims, clone=clone))
    return (x,) + tuple(make(draw, _shape(x)))


def _dim(draw, shape, extra=0):
    n = max(len(shape), 1) + extra
    return draw(st.integers(-n - 1, n))


def _perm(draw, shape):
    if draw(st.sampled_from([True, True, True, False])):
        return tuple(draw(st.permutations(range(len(shape)))))
    return tuple(draw(st.lists(st.integers(-len(shape) - 1, len(shape)), max_size=4)))


def _expand_to(draw, shape):
    out = [(-1 if draw(st.booleans()) else s) if s != 1 else draw(SIDE) for s in shape]
    if draw(st.booleans()):
        out = list(draw(shapes(0, 2))) + out
    if draw(st.sampled_from([False, False, False, True])) and out:
        out[draw(st.integers(0, len(out) - 1))] = draw(st.sampled_from([2, 3, -2]))
    return (tuple(out),)


def _split_arg(draw, shape):
    d = _dim(draw, shape)
    size = shape[d] if shape and -len(shape) <= d < len(shape) else 1
    if draw(st.booleans()):
        sections, rest = [], size
        while rest > 0 and draw(st.booleans()):
            s = draw(st.integers(0, rest))
            sections.append(s)
            rest -= s
        sections.append(rest if draw(st.sampled_from([True, True, True, False])) else rest + 1)
        return sections, d
    return draw(st.integers(0, 4)), d


def _narrow_args(draw, shape):
    d = _dim(draw, shape)
    size = shape[d] if shape and -len(shape) <= d < len(shape) else 1
    start = draw(st.integers(-size - 1, size + 1))
    return d, start, draw(st.integers(-1, size + 1))


def _unflatten_args(draw, shape):
    d = _dim(draw, shape)
    size = shape[d] if shape and -len(shape) <= d < len(shape) else 1
    return d, draw(target_shape((size,)))


SHAPE_OPS = [
    Op("reshape", x_and(lambda dr, s: (dr(target_shape(s)),)), lambda L, x, s: x.reshape(s)),
    Op("reshape_star", x_and(lambda dr, s: dr(target_shape(s, False))),
       lambda L, x, *s: L.reshape(x, s)),
    Op("view", x_and(lambda dr, s: (dr(target_shape(s)),)), lambda L, x, s: x.view(s)),
    Op("flatten", x_and(lambda dr, s: (_dim(dr, s), _dim(dr, s))),
       lambda L, x, a, b: L.flatten(x, a, b)),
    Op("unflatten", x_and(_unflatten_args), lambda L, x, d, s: x.unflatten(d, s)),
    Op("permute", x_and(lambda dr, s: (_perm(dr, s),)), lambda L, x, p: x.permute(*p)),
    Op("permute_fn", x_and(lambda dr, s: (_perm(dr, s),)), lambda L, x, p: L.permute(x, p)),
    Op("transpose", x_and(lambda dr, s: (_dim(dr, s), _dim(dr, s))),
       lambda L, x, a, b: x.transpose(a, b)),
    Op("t", tup(tensors(max_dims=3)), lambda L, x: x.t()),
    Op("mT", tup(tensors(max_dims=4)), lambda L, x: x.mT),
    Op("movedim", x_and(lambda dr, s: (_dim(dr, s), _dim(dr, s))),
       lambda L, x, a, b: L.movedim(x, a, b)),
    Op("squeeze", tup(tensors()), lambda L, x: x.squeeze()),
    Op("squeeze_dim", x_and(lambda dr, s: (_dim(dr, s),)), lambda L, x, d: L.squeeze(x, d)),
    Op("squeeze_dims", x_and(lambda dr, s: (tuple(_dim(dr, s) for _ in range(dr(
        st.integers(0, 2)))),)), lambda L, x, d: x.squeeze(d)),
    Op("unsqueeze", x_and(lambda dr, s: (_dim(dr, s, extra=1),)),
       lambda L, x, d: x.unsqueeze(d)),
    Op("expand", x_and(_expand_to), lambda L, x, s: x.expand(*s)),
    Op("broadcast_to", x_and(_expand_to), lambda L, x, s: L.broadcast_to(x, s)),
    Op("narrow", x_and(_narrow_args), lambda L, x, d, a, n: x.narrow(d, a, n)),
    Op("select", x_and(lambda dr, s: _narrow_args(dr, s)[:2]), lambda L, x, d, i: x.select(d, i)),
    Op("split", x_and(_split_arg), lambda L, x, s, d: x.split(s, d)),
    Op("split_fn", x_and(_split_arg), lambda L, x, s, d: L.split(x, s, dim=d)),
    Op("chunk", x_and(lambda dr, s: (dr(st.integers(0, 4)), _dim(dr, s))),
       lambda L, x, n, d: x.chunk(n, d)),
    Op("unbind", x_and(lambda dr, s: (_dim(dr, s),)), lambda L, x, d: L.unbind(x, d)),
    Op("clone", tup(tensors()), lambda L, x: x.clone()),
    Op("contiguous", tup(tensors()), lambda L, x: x.contiguous()),
    Op("getitem_basic", x_and(lambda dr, s: (dr(basic_key(s)),)), lambda L, x, k: x[k]),
]


@st.composite
def tensor_list(draw, same_shape):
    shape = list(draw(shapes(0, 3)))
    d = _dim(draw, shape)
    out = []
    for _ in range(draw(st.integers(0, 3))):
        s = list(shape)
        if not same_shape and s and -len(s) <= d < len(s):
            s[d] = draw(SIDE)
        if draw(st.sampled_from([False, False, False, False, True])):
            s = draw(shapes(0, 3)) if draw(st.booleans()) else (0,)  # legacy: 1-D empty
        out.append(draw(tensors(tuple(s), draw(st.sampled_from([[F32], [F32], [F64], ALL])))))
    return out, d


SHAPE_OPS += [
    Op("cat", tensor_list(False), lambda L, ts, d: L.cat(ts, d)),
    Op("stack", tensor_list(True), lambda L, ts, d: L.stack(ts, d)),
    Op("hstack", tensor_list(False), lambda L, ts, d: L.hstack(ts)),
    Op("vstack", tensor_list(False), lambda L, ts, d: L.vstack(ts)),
]

# --- indexing ------------------------------------------------------------------------------


def _index_values(rng, shape, size, valid):
    if valid:
        return rng.integers(0, max(size, 1), shape) if size else np.zeros(shape, np.int64)
    return rng.integers(-size - 2, size + 2, shape)


@st.composite
def gather_args(draw, valid, op="gather"):
    x = draw(tensors(min_dims=0, dtypes=[F32, F32, F64, I64, BOOL]))
    s = _shape(x)
    d = _dim(draw, s)
    nd = len(s)
    ok = -max(nd, 1) <= d < max(nd, 1)
    dd = d % max(nd, 1) if ok else 0
    ishape = tuple(draw(st.integers(0, s[i])) if i != dd else draw(SIDE) for i in range(nd))
    if op == "take_along_dim" and draw(st.booleans()):
        ishape = tuple(1 if draw(st.booleans()) else n for n in ishape)
    size = s[dd] if nd else 1
    idx = _index_values(np.random.default_rng(draw(SEED)), ishape, size, valid)
    idt = np.int64 if valid or draw(st.sampled_from([True, True, True, False])) else np.int32
    args = (x, d, Idx(idx.astype(idt)))
    if op == "scatter_add":
        src = draw(tensors(tuple(n + draw(st.integers(0, 1)) for n in ishape),
                           [x.base.dtype]))
        args += (src,)
    return args


@st.composite
def index_select_args(draw, valid):
    x = draw(tensors())
    s = _shape(x)
    d = _dim(draw, s)
    size = s[d] if s and -len(s) <= d < len(s) else 1
    ishape = draw(st.sampled_from([(0,), (1,), (3,), (), (5,)] + ([] if valid else [(2, 2)])))
    idx = _index_values(np.random.default_rng(draw(SEED)), ishape, size, valid)
    return x, d, Idx(idx.astype(draw(st.sampled_from([np.int64, np.int32]))))


@st.composite
def mask_args(draw):
    x, m = draw(broadcast_pair(scalar=False, max_dims=3))
    if draw(st.booleans()):
        x, m = m, x
    m = Idx(m.base.astype(bool) if draw(st.sampled_from([True, True, True, False])) else
            m.base)
    return x, m, draw(st.sampled_from([0.5, -2, True, float("nan")]))


def basic_key(shape):
    return index_key(shape, advanced=False)


@st.composite
def index_key(draw, shape, advanced=True):
    """A tensor-indexing key: ints, slices, None, Ellipsis and (if ``advanced``) index
    tensors, lists and boolean masks; sometimes out of range or with too many items."""
    items, d = [], 0
    kinds = ["int", "slice", "slice", "none", "ellipsis"]
    if advanced:
        kinds += ["tensor", "tensor", "list", "mask"]
    rng = np.random.default_rng(draw(SEED))
    ellipsis = False
    for _ in range(draw(st.integers(0, len(shape) + 1))):
        kind = draw(st.sampled_from(kinds))
        size = shape[d] if d < len(shape) else 1
        if kind == "int":
            items.append(draw(st.integers(-size - 1, size)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            step = draw(st.sampled_from([None, 1, 2, 3, None, 0, -1]))
            items.append(slice(draw(bound), draw(bound), step))
        elif kind == "none":
            items.append(None)
            continue
        elif kind == "ellipsis":
            if ellipsis:
                continue
            ellipsis = True
            items.append(Ellipsis)
            d = len(shape) - (draw(st.integers(0, len(shape) - d)) if d < len(shape) else 0)
            continue
        elif kind in ("tensor", "list"):
            ishape = draw(st.sampled_from([(2,), (1,), (0,), (), (2, 2)]))
            valid = draw(st.sampled_from([True, True, True, False]))
            v = rng.integers(-size, max(size, 1), ishape) if valid else \
                rng.integers(-size - 2, size + 2, ishape)
            items.append(Idx(v) if kind == "tensor" or not ishape else v.tolist())
        elif kind == "mask":
            k = draw(st.integers(1, max(1, min(2, len(shape) - d))))
            mshape = tuple(shape[d:d + k]) if d + k <= len(shape) else (size,)
            if draw(st.sampled_from([False, False, False, True])):
                mshape = tuple(n + 1 for n in mshape)
            items.append(Idx(rng.random(mshape) < 0.5))
            d += k
            continue
        d += 1
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def setitem_args(draw):
    x = draw(tensors(clone=None))
    key = draw(index_key(_shape(x)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target = tuple(torch.zeros(_shape(x))[_Built(torch)(key)].shape)
    except Exception:  # noqa: BLE001 - an invalid key: any value
        target = draw(shapes(0, 2))
    vshape = [1 if draw(st.booleans()) else n for n in target][draw(st.integers(0, len(target))):]
    kind = draw(st.sampled_from(["tensor", "tensor", "number"]))
    value = draw(st.sampled_from([1.5, 0, -2, True])) if kind == "number" else \
        draw(tensors(tuple(vshape), [x.base.dtype, x.base.dtype, F32, I64]))
    if isinstance(value, Arr) and x.base.dtype.kind != "f":
        # PyTorch lets some writes (fill_ of a 0-d value, masked_fill_ of a one-element
        # value) make an integer x require grad, a PyTorch bug (its backward then fails an
        # internal assert): values written into integer tensors carry no gradient here
        value = Arr(value.base, value.view, False, value.clone)
    return x, key, value


def _setitem(L, x, key, value):
    x[key] = value
    return x


INDEXING = [
    Op("gather", gather_args(True), lambda L, x, d, i: L.gather(x, d, i)),
    Op("gather_any", gather_args(False), lambda L, x, d, i: x.gather(d, i)),
    Op("take_along_dim", gather_args(True, "take_along_dim"),
       lambda L, x, d, i: L.take_along_dim(x, i, d)),
    Op("take_along_dim_any", gather_args(False, "take_along_dim"),
       lambda L, x, d, i: x.take_along_dim(i, d)),
    Op("scatter_add", gather_args(True, "scatter_add"),
       lambda L, x, d, i, s: x.scatter_add(d, i, s)),
    Op("scatter_add_any", gather_args(False, "scatter_add"),
       lambda L, x, d, i, s: L.scatter_add(x, d, i, s)),
    Op("index_select", index_select_args(True), lambda L, x, d, i: x.index_select(d, i)),
    Op("index_select_any", index_select_args(False),
       lambda L, x, d, i: L.index_select(x, d, i)),
    Op("masked_fill", mask_args(), lambda L, x, m, v: x.masked_fill(m, v)),
    Op("masked_select", mask_args(), lambda L, x, m, v: L.masked_select(x, m)),
    Op("nonzero", tup(tensors()), lambda L, x: L.nonzero(x)),
    Op("argwhere", tup(tensors()), lambda L, x: L.argwhere(x)),
    Op("getitem", x_and(lambda dr, s: (dr(index_key(s)),)), lambda L, x, k: x[k], examples=60),
    Op("setitem", setitem_args(), _setitem, inplace=True, examples=60),
]

# --- in-place ------------------------------------------------------------------------------


@st.composite
def inplace_pair(draw):
    a, b = draw(broadcast_pair())
    if not isinstance(a, Arr):
        a, b = b, a
    return Arr(a.base, a.view, a.grad, draw(st.booleans())), b


def _inplace_unary(fn):
    return Op(fn.__name__, tup(tensors(clone=None)), fn, inplace=True)


INPLACE = [
    Op("add_", inplace_pair(), lambda L, a, b: a.add_(b), inplace=True),
    Op("sub_", inplace_pair(), lambda L, a, b: a.sub_(b, alpha=2), inplace=True),
    Op("mul_", inplace_pair(), lambda L, a, b: a.mul_(b), inplace=True),
    Op("div_", inplace_pair(), lambda L, a, b: a.div_(b), inplace=True),
    Op("pow_", inplace_pair(), lambda L, a, b: a.pow_(b), inplace=True),
    Op("iadd", inplace_pair(), lambda L, a, b: operator.iadd(a, b), inplace=True),
    Op("imul", inplace_pair(), lambda L, a, b: operator.imul(a, b), inplace=True),
    Op("copy_", inplace_pair(), lambda L, a, b: a.copy_(b), inplace=True),
    Op("masked_fill_", mask_args().map(lambda t: (Arr(t[0].base, t[0].view, t[0].grad, True),)
                                       + t[1:]),
       lambda L, x, m, v: x.masked_fill_(m, v), inplace=True),
]
for _name, _fn in [("exp_", lambda L, x: x.exp_()), ("neg_", lambda L, x: x.neg_()),
                   ("abs_", lambda L, x: x.abs_()), ("sqrt_", lambda L, x: x.sqrt_()),
                   ("relu_", lambda L, x: x.relu_()), ("sigmoid_", lambda L, x: x.sigmoid_()),
                   ("tanh_", lambda L, x: x.tanh_()), ("clamp_", lambda L, x: x.clamp_(-1, 1)),
                   ("clamp_min_", lambda L, x: x.clamp_min_(0)),
                   ("floor_", lambda L, x: x.floor_()), ("round_", lambda L, x: x.round_()),
                   ("square_", lambda L, x: x.square_()), ("zero_", lambda L, x: x.zero_()),
                   ("fill_", lambda L, x: x.fill_(2.5)),
                   ("reciprocal_", lambda L, x: x.reciprocal_())]:
    INPLACE.append(Op(_name, tup(tensors(clone=None)), _fn, inplace=True))


# ----------------------------------------------------------------------------------------
# known numgrad bugs (the lead's files): op name -> reason; the rows are xfail(strict=False)
# ----------------------------------------------------------------------------------------

KNOWN = {}

TABLES = {"elementwise": ELEMENTWISE, "reduction": REDUCTIONS, "matmul": MATMUL,
          "shape": SHAPE_OPS, "indexing": INDEXING, "inplace": INPLACE}


def _rows():
    """Every row of every table, named ``table-op`` (select a table with ``-k elementwise``)."""
    return [pytest.param(op, id=f"{table}-{op.name}",
                         marks=[pytest.mark.xfail(strict=False, reason=op.bug)] if op.bug else [])
            for table, ops in TABLES.items()
            for op in (Op(**{**o.__dict__, "bug": KNOWN.get(o.name, o.bug)}) for o in ops)]


@pytest.mark.parametrize("op", _rows())
def test_op_matches_pytorch(op):
    _run_op(op)
