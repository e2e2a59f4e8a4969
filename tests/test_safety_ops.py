"""Bad input to tensor ops gets PyTorch's exception, never a crash or a silent result.

Each case is one function of the library module (``numgrad`` or ``torch``), run under both:
numgrad must raise the class written in the table (so the test means something without
PyTorch) and, when PyTorch is installed, the same class and message as PyTorch.
"""

import numpy as np
import pytest

import numgrad as ng
from tests.conftest import torch


def _setitem(value_fn, key_fn=lambda t: slice(None), n=8):
    def run(t):
        x = t.zeros(n)
        x[key_fn(t)] = value_fn(t)
        return x
    return run


def _inplace_on_expanded(t):
    x = t.ones(1).expand(3)
    x.add_(1)
    return x


def _setitem_expanded(t):
    x = t.ones(1).expand(3)
    x[:] = t.tensor([1.0, 2.0, 3.0])
    return x


ERRORS = [
    # scatter/gather: indices and sizes are checked before (or inside) the kernel
    ("scatter_add index past the end", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([5]), t.ones(1))),
    ("scatter_add huge index", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([10**8]), t.ones(1))),
    ("scatter_add negative index", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([-1]), t.ones(1))),
    ("scatter_add index larger than src", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([0, 1]), t.ones(1))),
    ("scatter_add index larger than self off dim", RuntimeError,
     lambda t: t.zeros(3, 2).scatter_add(0, t.tensor([[0, 1, 1]]), t.ones(1, 3))),
    ("scatter_add float index", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([0.0]), t.ones(1))),
    ("scatter_add index of more dims", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([[0]]), t.ones(1))),
    ("scatter_add src of more dims", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([0]), t.ones(1, 1))),
    ("scatter_add src of another dtype", RuntimeError,
     lambda t: t.zeros(3).scatter_add(0, t.tensor([0]), t.ones(1, dtype=t.float64))),
    ("gather index past the end", RuntimeError,
     lambda t: t.zeros(3).gather(0, t.tensor([3]))),
    ("gather float index", RuntimeError, lambda t: t.zeros(3).gather(0, t.tensor([0.0]))),
    ("gather bool index", RuntimeError, lambda t: t.zeros(3).gather(0, t.tensor([True]))),
    ("index_select past the end", IndexError,
     lambda t: t.index_select(t.zeros(3), 0, t.tensor([3]))),
    ("index_select negative", IndexError,
     lambda t: t.index_select(t.zeros(3), 0, t.tensor([-1]))),
    ("index_select float index", RuntimeError,
     lambda t: t.index_select(t.zeros(3), 0, t.tensor([0.0]))),
    ("tensor index past the end", IndexError, lambda t: t.zeros(3)[t.tensor([3])]),
    ("int index past the end", IndexError, lambda t: t.zeros(3)[3]),
    ("select past the end", IndexError, lambda t: t.zeros(3).select(0, 3)),
    # item assignment: the value must broadcast to the target
    ("x[:] = more dims", RuntimeError, _setitem(lambda t: t.ones(2, 4))),
    ("x[:] = more dims, large", RuntimeError, _setitem(lambda t: t.ones(2, 4), n=100000)),
    ("x[0:8] = 2 values", RuntimeError,
     _setitem(lambda t: t.tensor([1.0, 2.0]), lambda t: slice(0, 8))),
    ("x[idx] = wrong length", RuntimeError,
     _setitem(lambda t: t.ones(3), lambda t: t.tensor([0, 1]))),
    ("x[idx] = 1 with idx past the end", IndexError,
     _setitem(lambda t: 1.0, lambda t: t.tensor([8]))),
    ("x[mask] with a short mask", IndexError,
     _setitem(lambda t: 1.0, lambda t: t.tensor([True, False]))),
    # in-place writes to memory that holds one element twice
    ("add_ on an expanded tensor", RuntimeError, _inplace_on_expanded),
    ("x[:] = v on an expanded tensor", RuntimeError, _setitem_expanded),
    ("add_ with a larger operand", RuntimeError, lambda t: t.zeros(3).add_(t.ones(2, 3))),
    ("add_ with a mismatched operand", RuntimeError, lambda t: t.zeros(3).add_(t.ones(2))),
    # integer division by zero has no value
    ("int // 0", RuntimeError, lambda t: t.tensor([1]) // 0),
    ("int % 0", RuntimeError, lambda t: t.tensor([1]) % 0),
    ("int // tensor with a zero", RuntimeError, lambda t: t.tensor([5, 3]) // t.tensor([2, 0])),
    ("int remainder tensor zero", RuntimeError,
     lambda t: t.tensor([1]).remainder(t.tensor([0]))),
    ("int div trunc by 0", RuntimeError, lambda t: t.tensor([1]).div(0, rounding_mode="trunc")),
    ("int div floor by 0", RuntimeError, lambda t: t.tensor([1]).div(0, rounding_mode="floor")),
    # sizes and dtypes of factories
    ("zeros(-1)", RuntimeError, lambda t: t.zeros(-1)),
    ("ones(2, -1)", RuntimeError, lambda t: t.ones(2, -1)),
    ("empty(-3)", RuntimeError, lambda t: t.empty(-3)),
    ("rand(2, -1)", RuntimeError, lambda t: t.rand(2, -1)),
    ("full((-1,), 1.)", RuntimeError, lambda t: t.full((-1,), 1.0)),
    ("randint(3, (-1,))", RuntimeError, lambda t: t.randint(3, (-1,))),
    ("randperm(-1)", RuntimeError, lambda t: t.randperm(-1)),
    ("eye(-1)", RuntimeError, lambda t: t.eye(-1)),
    ("eye(2, -1)", RuntimeError, lambda t: t.eye(2, -1)),
    ("eye(2.5)", TypeError, lambda t: t.eye(2.5)),
    ("ones(3, dtype='float32')", TypeError, lambda t: t.ones(3, dtype="float32")),
    ("tensor(..., dtype='float32')", TypeError, lambda t: t.tensor([1.0], dtype="float32")),
    ("zeros_like(..., dtype='float32')", TypeError,
     lambda t: t.zeros_like(t.ones(2), dtype="float32")),
    ("ones(3, dtype=3)", TypeError, lambda t: t.ones(3, dtype=3)),
    ("arange step 0", RuntimeError, lambda t: t.arange(0, 10, 0)),
    ("arange wrong sign", RuntimeError, lambda t: t.arange(10, 0, 1)),
    ("arange to inf", RuntimeError, lambda t: t.arange(0, float("inf"))),
    ("linspace -1 steps", RuntimeError, lambda t: t.linspace(0, 1, -1)),
    ("uniform_ from > to", RuntimeError, lambda t: t.ones(3).uniform_(2, 1)),
    ("normal_ with std < 0", RuntimeError, lambda t: t.ones(3).normal_(0, -1)),
    ("bernoulli_ with p > 1", RuntimeError, lambda t: t.ones(3).bernoulli_(1.5)),
    ("init.uniform_ a > b", RuntimeError, lambda t: t.nn.init.uniform_(t.ones(3), 2, 1)),
    ("requires_grad_(2)", TypeError, lambda t: t.ones(2).requires_grad_(2)),
    ("type of an unknown name", ValueError, lambda t: t.ones(3).type("torch.FooTensor")),
    ("autograd.grad of an int", RuntimeError,
     lambda t: t.autograd.grad(t.ones(2, requires_grad=True).sum(), [3])),
    ("autograd.grad of no inputs", RuntimeError,
     lambda t: t.autograd.grad([t.ones(2, requires_grad=True).sum()], [], allow_unused=True)),
    ("set_grad_enabled(3)", TypeError, lambda t: t.set_grad_enabled(3)),
    # shape ops
    ("split(0)", RuntimeError, lambda t: t.ones(3).split(0)),
    ("split(-1)", RuntimeError, lambda t: t.ones(3).split(-1)),
    ("split sizes of another sum", RuntimeError, lambda t: t.ones(3).split([1, 1])),
    ("split negative sizes", RuntimeError, lambda t: t.ones(3).split([-1, 4])),
    ("chunk(0)", RuntimeError, lambda t: t.ones(3).chunk(0)),
    ("unflatten to another size", RuntimeError, lambda t: t.ones(3).unflatten(0, (2, 2))),
    ("narrow past the end", RuntimeError, lambda t: t.ones(3).narrow(0, 2, 2)),
    ("view to another size", RuntimeError, lambda t: t.ones(3).view(4)),
    ("reshape two -1", RuntimeError, lambda t: t.ones(3).reshape(-1, -1)),
    ("expand to another size", RuntimeError, lambda t: t.ones(3).expand(4)),
    ("empty of 2**124 elements", RuntimeError, lambda t: t.empty(2**62, 2**62)),
    ("zeros of 2**63 bytes", RuntimeError, lambda t: t.zeros(2**61)),
    ("full of 2**63 bytes", RuntimeError, lambda t: t.full((2**60,), 1.0, dtype=t.float64)),
    ("randn of 2**63 bytes", RuntimeError, lambda t: t.randn(2**40, 2**21)),
    ("randint of 2**63 bytes", RuntimeError, lambda t: t.randint(0, 5, (2**60,))),
    ("new_zeros(-1)", RuntimeError, lambda t: t.ones(2).new_zeros(-1)),
    ("new_ones of 2**63 bytes", RuntimeError, lambda t: t.ones(2).new_ones(2**61)),
    ("tensor of an int past int64", ValueError, lambda t: t.tensor([2**63])),
    ("tensor of a huge int", ValueError, lambda t: t.tensor(2**70)),
    ("tensor holding None", RuntimeError, lambda t: t.tensor([1.5, None])),
    ("tensor of a str", TypeError, lambda t: t.tensor([1, "a"])),
    ("tensor of a list of str", ValueError, lambda t: t.tensor(["a"])),
    ("tensor of an object", RuntimeError, lambda t: t.tensor(object())),
    ("tensor of a dict", RuntimeError, lambda t: t.tensor({1: 2})),
    ("tensor of many-element tensors", ValueError,
     lambda t: t.tensor([t.ones(2), t.ones(2)])),
    ("tensor of 300 as uint8", RuntimeError, lambda t: t.tensor([300], dtype=t.uint8)),
    ("tensor of inf as int64", RuntimeError, lambda t: t.tensor([float("inf")], dtype=t.int64)),
    ("full of 2**40 as int32", RuntimeError, lambda t: t.full((2,), 2**40, dtype=t.int32)),
    ("full of 1e40 as float32", RuntimeError, lambda t: t.full((2,), 1e40, dtype=t.float32)),
    ("full of nan as int64", RuntimeError, lambda t: t.full((2,), float("nan"), dtype=t.int64)),
    ("scalar_tensor of 1e30 as int32", RuntimeError,
     lambda t: t.scalar_tensor(1e30, dtype=t.int32)),
    ("ragged tensor", ValueError, lambda t: t.tensor([[1, 2], [3]])),
    ("from_numpy big-endian", ValueError,
     lambda t: t.from_numpy(np.ones(3, dtype=">f4"))),
    ("tensor of big-endian", ValueError, lambda t: t.tensor(np.ones(3, dtype=">f4"))),
    ("from_numpy of a list", TypeError, lambda t: t.from_numpy([1, 2])),
    ("reshape 0 elements with -1", RuntimeError, lambda t: t.ones(0).reshape(0, -1)),
    ("stack of nothing", RuntimeError, lambda t: t.stack([])),
    ("cat of nothing", ValueError, lambda t: t.cat([])),
    ("expand past int64 elements", RuntimeError, lambda t: t.zeros(3).expand(2**62, 3)),
    # Python numbers past what PyTorch's argument parser takes
    ("float times 2**64", OverflowError, lambda t: t.zeros(3) * 2**64),
    ("int64 times 2**70", OverflowError, lambda t: t.zeros(3, dtype=t.int64) * 2**70),
    ("2**70 minus a tensor", OverflowError, lambda t: 2**70 - t.zeros(3)),
    ("times -2**63 - 1", OverflowError, lambda t: t.zeros(3) * (-2**63 - 1)),
    ("pow 2**64", OverflowError, lambda t: t.zeros(3).pow(2**64)),
    ("compare with 2**70", OverflowError, lambda t: t.zeros(3) == 2**70),
    ("clamp max 2**70", OverflowError, lambda t: t.zeros(3).clamp(max=2**70)),
    ("clamp min 1e300 on float32", RuntimeError, lambda t: t.zeros(3).clamp(min=1e300)),
    ("clamp min of a str", TypeError, lambda t: t.zeros(3).clamp(min="a")),
    ("fill_ 2**70", OverflowError, lambda t: t.zeros(3).fill_(2**70)),
    ("fill_ a str", TypeError, lambda t: t.zeros(3).fill_("a")),
    ("masked_fill a str", TypeError,
     lambda t: t.zeros(3).masked_fill(t.tensor([True, False, True]), "a")),
    # keys
    ("int key past int64", ValueError, lambda t: t.zeros(3)[2**63]),
    ("list key past int64", ValueError, lambda t: t.zeros(3)[[2**63]]),
    ("index arrays that do not broadcast", IndexError, lambda t: t.ones(2, 3)[[0, 1], [0, 1, 2]]),
    ("float key", IndexError, lambda t: t.ones(3)[1.5]),
    ("str key", TypeError, lambda t: t.ones(3)["a"]),
    ("slice step 0", ValueError, lambda t: t.ones(3)[::0]),
    ("negative slice step", ValueError, lambda t: t.ones(3)[::-1]),
    ("masked_select with a short mask", RuntimeError,
     lambda t: t.ones(3).masked_select(t.tensor([True, False]))),
    ("masked_select with an int mask", RuntimeError,
     lambda t: t.ones(3).masked_select(t.tensor([1, 0, 1]))),
    ("masked_fill with an int mask", RuntimeError,
     lambda t: t.ones(3).masked_fill(t.tensor([1, 0, 1]), 0.0)),
    # arguments of arithmetic and products
    ("add alpha of a str", TypeError, lambda t: t.ones(3).add(t.ones(3), alpha="a")),
    ("add_ alpha of a str", TypeError, lambda t: t.ones(3).add_(t.ones(3), alpha="a")),
    ("int add float alpha", RuntimeError,
     lambda t: t.ones(3, dtype=t.int64).add(1, alpha=0.5)),
    ("int sub float alpha", RuntimeError,
     lambda t: t.ones(3, dtype=t.int64).sub(t.ones(3, dtype=t.int64), alpha=0.5)),
    ("float add bool alpha", RuntimeError, lambda t: t.ones(3).add(1, alpha=True)),
    ("bmm of other batch sizes", RuntimeError, lambda t: t.ones(2, 3, 4).bmm(t.ones(3, 4, 5))),
    ("bmm of other inner sizes", RuntimeError, lambda t: t.ones(2, 3, 4).bmm(t.ones(2, 5, 4))),
    ("mm of other inner sizes", RuntimeError, lambda t: t.ones(2, 3).mm(t.ones(4, 2))),
    ("matmul 1-D of other sizes", RuntimeError, lambda t: t.matmul(t.ones(3), t.ones(4))),
    # reductions
    ("argmax of nothing", IndexError, lambda t: t.ones(0).argmax()),
    ("max of nothing", RuntimeError, lambda t: t.ones(0).max()),
    ("mean with an int dtype", RuntimeError, lambda t: t.ones(3).mean(dtype=t.int64)),
    ("mean of ints", RuntimeError, lambda t: t.ones(3, dtype=t.int64).mean()),
    ("sum over a dim out of range", IndexError, lambda t: t.ones(3).sum(1)),
    ("softmax over a dim out of range", IndexError, lambda t: t.ones(2, 3).softmax(2)),
]

# PyTorch's argument parser lists every overload in these messages: the class is compared
CLASS_ONLY = {"clamp min of a str", "fill_ a str", "masked_fill a str"}

VALUES = [
    ("split(0) of an empty dim", lambda t: t.ones(0).split(0)[0]),
    ("scatter_add with a 0-dim index", lambda t: t.zeros(3).scatter_add(0, t.tensor(1), t.ones(1))),
    ("scatter_add on a 0-dim tensor",
     lambda t: t.zeros(()).scatter_add(0, t.tensor(0), t.full((), 2.0))),
    ("gather with an int32 index", lambda t: t.arange(3.0).gather(0, t.tensor([2], dtype=t.int32))),
    ("x[idx] = broadcast value", _setitem(lambda t: t.tensor([2.0]), lambda t: t.tensor([0, 5]))),
    ("int // nonzero", lambda t: t.tensor([7, -7]) // t.tensor([2, 2])),
    ("float // 0 is inf", lambda t: t.tensor([1.0]) // 0),
    ("float div trunc by 0", lambda t: t.tensor([1.0, -1.0]).div(0, rounding_mode="trunc")),
    ("ones(3, dtype=float)", lambda t: t.ones(3, dtype=float)),
    ("type by name", lambda t: t.ones(3).type("torch.LongTensor")),
    ("full of -1 as uint8 wraps", lambda t: t.full((2,), -1, dtype=t.uint8)),
    ("tensor of -129 as uint8 wraps", lambda t: t.tensor([-129, 255], dtype=t.uint8)),
    ("tensor of one-element tensors", lambda t: t.tensor([[t.ones(1)], [t.full((), 2.0)]])),
    ("full of 2.7 as int64 truncates", lambda t: t.full((2,), 2.7, dtype=t.int64)),
    ("float times 2**63 (uint64 range)", lambda t: t.ones(3) * 2**63),
    ("int64 plus 2**63 wraps", lambda t: t.zeros(3, dtype=t.int64) + 2**63),
    ("tensor of 1e40 as float32 is inf", lambda t: t.tensor([1e40], dtype=t.float32)),
    ("softmax without dim", lambda t: t.nn.Softmax()(t.arange(24.0).reshape(2, 3, 4))),
    ("log_softmax without dim", lambda t: t.nn.functional.log_softmax(t.arange(6.0).view(2, 3))),
    ("in-place op on a read-only NumPy buffer",
     lambda t: t.from_numpy(np.frombuffer(b"\x00" * 16, dtype=np.float32)).add_(1)),
    ("as_tensor of a read-only NumPy buffer",
     lambda t: t.as_tensor(np.frombuffer(b"\x00" * 16, dtype=np.float32)).mul_(2)),
]


def _outcome(fn, lib):
    try:
        return ("value", fn(lib))
    except Exception as e:  # noqa: BLE001 - the point is which exception
        return ("raised", type(e), str(e))


@pytest.mark.parametrize("name,cls,fn", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_input_raises_pytorchs_error(name, cls, fn):
    got = _outcome(fn, ng)
    assert got[0] == "raised", f"{name}: numgrad returned {got[1]!r}"
    assert got[1] is cls, f"{name}: {got[1].__name__}: {got[2]}"
    if torch is not None:
        want = _outcome(fn, torch)
        assert want[0] == "raised" and want[1] is cls, "the table disagrees with PyTorch"
        if name not in CLASS_ONLY:
            assert got[2] == want[2]


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
@pytest.mark.parametrize("name,fn", VALUES, ids=[c[0] for c in VALUES])
def test_edge_cases_that_work_match_pytorch(name, fn):
    got = fn(ng)
    if torch is None:
        assert got.numpy() is not None
        return
    want = fn(torch)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)  # exact for integers


def test_scatter_add_error_leaves_input_unchanged():
    x = ng.zeros(3)
    with pytest.raises(RuntimeError):
        x.scatter_add(0, ng.tensor([0, 7]), ng.ones(2))
    np.testing.assert_array_equal(x.numpy(), np.zeros(3, np.float32))


def test_gather_backward_scatters_into_a_gradient_of_the_input_shape():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.gather(0, ng.tensor([2, 2, 0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 2.0])


@pytest.mark.parametrize("make", [lambda t: t.zeros(2**62, dtype=t.bool),
                                  lambda t: t.empty(2**61, dtype=t.uint8),
                                  lambda t: t.arange(0, 2**61, dtype=t.uint8)])
def test_allocation_failure_is_pytorchs_runtime_error(make):
    # more than the address space: the allocation fails whatever the overcommit policy
    libs = [ng] if torch is None else [ng, torch]
    for lib in libs:
        with pytest.raises(RuntimeError, match="DefaultCPUAllocator: can't allocate memory"):
            make(lib)


@pytest.mark.skipif(torch is None, reason="compares with PyTorch")
@pytest.mark.parametrize("tensor_value", [False, True])
def test_masked_fill_broadcasts_self_and_sums_its_gradient(tensor_value):
    out = {}
    for lib in (ng, torch):
        x = lib.tensor([4.0, 3.0], requires_grad=True)
        v = lib.tensor(0.5, requires_grad=True) if tensor_value else 0.5
        y = x.masked_fill(lib.tensor([[True], [False]]), v)
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        out[lib] = (y.detach().numpy(), x.grad.numpy(), v.grad.item() if tensor_value else None)
    for a, b in zip(out[ng], out[torch]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(torch is None, reason="compares with PyTorch")
def test_number_remainder_and_fill_of_an_expanded_view_raise_at_backward():
    for lib in (ng, torch):
        x = lib.tensor(0.3, requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for aten::remainder"):
            (2 % x).backward()
        leaf = lib.tensor([0.3], requires_grad=True)
        c = leaf.clone()
        c.expand(2).fill_(2.5)  # allowed forward, as in PyTorch
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            c.sum().backward()


def test_logsumexp_of_empty_rows_is_minus_inf():
    # the kernel reads no element of an empty row (the sanitizer found it reading x[0])
    out = ng.logsumexp(ng.zeros(0, 2), [])
    assert out.shape == () and out.item() == -np.inf
    np.testing.assert_array_equal(ng.zeros(2, 0).logsumexp(1).numpy(), [-np.inf, -np.inf])


@pytest.mark.parametrize("data, dtype", [
    ([1, 2**63], None), ([1, 2**63], "int64"), ([1, -2**63 - 1], None), ([[1, 2**70]], None),
    ([True, 2**63], None), ([2**63 - 1], None), ([1.5, 2**63], None), ([1, 2**64], "float32"),
    ([1, 2**63], "float64")])
def test_python_ints_beyond_int64(data, dtype):
    """An int outside int64 in Python data raises PyTorch's overflow error unless the tensor
    is floating (a float in the data, or a float dtype); it used to wrap or become a float."""
    def run(lib):
        return lib.tensor(data, dtype=getattr(lib, dtype) if dtype else None)
    flat = [v for row in data for v in (row if isinstance(row, list) else [row])]
    floating = dtype in ("float32", "float64") or any(isinstance(v, float) for v in flat)
    if not floating and any(not -2**63 <= v < 2**63 for v in flat):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            run(ng)
    elif floating:
        np.testing.assert_array_equal(run(ng).numpy(), np.array(data, dtype=np.float64).astype(
            np.float32 if dtype != "float64" else np.float64))
    if torch is not None:
        try:
            expected = run(torch)
        except ValueError:
            with pytest.raises(ValueError, match="Overflow when unpacking long long"):
                run(ng)
        else:
            got = run(ng)
            assert str(got.dtype) == str(expected.dtype)
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
