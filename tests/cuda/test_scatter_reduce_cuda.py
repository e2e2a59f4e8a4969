"""scatter_reduce and scatter on a CUDA tensor (device kernels: atomic adds, compare-and-swap
loops for prod/amax/amin, the last writer's put for a plain scatter) against the same ops on
the CPU: every mode, include_self both ways, every dtype, repeated indices, NaN, bad indices
and gradients."""

import numpy as np
import pytest

import numgrad as ng

MODES = ["sum", "prod", "mean", "amax", "amin"]
DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _pair(rng, dt, shape, d, n):
    """(self, index, src) with n values per line along d, repeated indices among them."""
    sshape = list(shape)
    sshape[d] = n
    if dt in ("float32", "float64"):
        x, src = rng.uniform(-2, 2, shape), rng.uniform(-2, 2, sshape)
    else:  # small values: products stay in range
        x, src = rng.integers(0, 3, shape), rng.integers(0, 3, sshape)
    idx = rng.integers(0, shape[d], sshape)
    t = getattr(ng, dt)
    return ng.tensor(x).to(t), ng.tensor(idx), ng.tensor(src).to(t)


def _both(x, d, idx, src, mode, include_self):
    want = x.scatter_reduce(d, idx, src, mode, include_self=include_self)
    got = x.cuda().scatter_reduce(d, idx.cuda(), src.cuda(), mode, include_self=include_self)
    assert got.is_cuda and got.dtype == want.dtype
    return got.cpu().numpy(), want.numpy()


@pytest.mark.parametrize("mode", MODES)
def test_scatter_reduce_matches_cpu(mode, rng):
    for dt in DTYPES:
        if mode == "mean" and dt == "bool":
            continue
        for shape, d, n in (((3, 4), 1, 6), ((7,), 0, 9), ((2, 3, 2), 0, 4)):
            x, idx, src = _pair(rng, dt, shape, d, n)
            for include_self in (True, False):
                got, want = _both(x, d, idx, src, mode, include_self)
                if dt.startswith("float") and mode in ("sum", "prod", "mean"):
                    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{dt} {include_self}")


@pytest.mark.parametrize("mode", MODES)
def test_scatter_reduce_nan_propagates_as_on_cpu(mode):
    nan = float("nan")
    x = ng.tensor([[1.0, nan, 3.0, -0.0], [nan, 2.0, -1.0, 4.0]])
    src = ng.tensor([[nan, 5.0, -2.0, 0.5, -0.0], [1.0, 1.0, nan, -3.0, 2.0]])
    idx = ng.tensor([[0, 0, 2, 1, 3], [3, 3, 1, 1, 0]])
    for include_self in (True, False):
        got, want = _both(x, 1, idx, src, mode, include_self)
        np.testing.assert_array_equal(got, want)  # NaN where the CPU has NaN
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_scatter_reduce_into_non_contiguous_operands(rng):
    x = ng.tensor(rng.uniform(-1, 1, (4, 5)))
    src = ng.tensor(rng.uniform(-1, 1, (6, 4)))
    idx = ng.tensor(rng.integers(0, 5, (4, 3)))  # transposed: (3, 4) into x.t()'s (5, 4)
    for mode in ("amax", "sum"):
        want = x.t().scatter_reduce(0, idx.t(), src.t(), mode, include_self=False)
        got = x.cuda().t().scatter_reduce(0, idx.cuda().t(), src.cuda().t(), mode,
                                          include_self=False).cpu()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dt", ["float32", "int64", "bool"])
def test_scatter_last_write_wins_as_on_cpu(dt, rng):
    x, idx, src = _pair(rng, dt, (3, 5), 1, 8)  # each line writes its slots several times
    want = x.scatter(1, idx, src)
    got = x.cuda().scatter(1, idx.cuda(), src.cuda()).cpu()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = x.scatter(1, idx, 1)
    np.testing.assert_array_equal(x.cuda().scatter(1, idx.cuda(), 1).cpu().numpy(),
                                  want.numpy())


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_reduce_matches_cpu(reduce, rng):
    x, idx, src = _pair(rng, "float64", (3, 4), 0, 5)
    want = x.scatter(0, idx, src, reduce=reduce)
    got = x.cuda().scatter(0, idx.cuda(), src.cuda(), reduce=reduce).cpu()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_bad_index_raises_as_on_cpu():
    x, src = ng.zeros(3, 4), ng.ones(3, 2)
    msgs = []
    for t, i, s in ((x, ng.tensor([[0, 4]] * 3), src),
                    (x.cuda(), ng.tensor([[0, 4]] * 3).cuda(), src.cuda())):
        for mode in ("amax", None):
            with pytest.raises(RuntimeError) as e:
                t.scatter_reduce(1, i, s, mode) if mode else t.scatter(1, i, s)
            msgs.append(str(e.value))
    assert msgs[:2] == msgs[2:]


@pytest.mark.parametrize("mode", ["prod", "amax", "mean"])
def test_scatter_reduce_gradients_match_cpu(mode, rng):
    x = rng.uniform(-1, 1, (3, 4))
    x[0, 1] = 0.0  # a zero for prod's masked gradient
    src = rng.uniform(-1, 1, (3, 5))
    src[1, :2] = x[1].max()  # ties with self for amax's shared gradient
    idx = rng.integers(0, 4, (3, 5))
    grads = []
    for dev in ("cpu", "cuda"):
        xt = ng.tensor(x, device=dev, requires_grad=True)
        st = ng.tensor(src, device=dev, requires_grad=True)
        out = xt.scatter_reduce(1, ng.tensor(idx, device=dev), st, mode, include_self=True)
        out.backward(ng.ones_like(out))
        grads.append((xt.grad.cpu().numpy(), st.grad.cpu().numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
