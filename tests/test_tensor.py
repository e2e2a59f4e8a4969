"""Tensor attributes, conversions, factories and PyTorch's error messages."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng


def both(fn):
    return fn(ng), (fn(torch) if torch is not None else None)


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to capture any class
        return type(e), str(e)
    return None


# Each case runs under both libraries; the class and the full message must be PyTorch's.
ERROR_CASES = {
    "bcast": lambda m: m.ones(2) + m.ones(4),
    "bcast_dim1": lambda m: m.ones(3, 2) + m.ones(4, 3),
    "mm_shapes": lambda m: m.ones(2, 3) @ m.ones(4, 5),
    "mm_fn": lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)),
    "mv_shapes": lambda m: m.ones(2, 3) @ m.ones(4),
    "dot_shapes": lambda m: m.ones(3) @ m.ones(4),
    "vm_shapes": lambda m: m.ones(3) @ m.ones(4, 5),
    "matmul_0d": lambda m: m.tensor(1.0) @ m.ones(4, 5),
    "matmul_dtype": lambda m: m.ones(2, 2) @ m.ones(2, 2, dtype=m.float64),
    "numpy_requires_grad": lambda m: m.ones(2, requires_grad=True).numpy(),
    "int_requires_grad_": lambda m: m.ones(2, dtype=m.int64).requires_grad_(),
    "int_requires_grad_factory": lambda m: m.tensor([1, 2], requires_grad=True),
    "nonleaf_requires_grad_false": lambda m: setattr(m.ones(2, requires_grad=True) * 2,
                                                     "requires_grad", False),
    "grad_wrong_size": lambda m: setattr(m.ones(2, 3, requires_grad=True), "grad", m.ones(3)),
    "grad_wrong_type": lambda m: setattr(m.ones(2, 3, requires_grad=True), "grad", 3),
    "item_many": lambda m: m.ones(6).item(),
    "view_incompatible": lambda m: m.ones(2, 3).t().view(6),
    "view_bad_size": lambda m: m.ones(2, 3).view(4),
    "reshape_bad_size": lambda m: m.ones(2, 3).reshape(4),
    "reshape_two_minus1": lambda m: m.ones(2, 3).reshape(-1, -1),
    "dim_out_of_range": lambda m: m.ones(2, 3).sum(2),
    "transpose_out_of_range": lambda m: m.ones(2, 3).transpose(0, 3),
    "cat_sizes": lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]),
    "cat_empty": lambda m: m.cat([]),
    "stack_sizes": lambda m: m.stack([m.ones(2, 3), m.ones(2, 4)]),
    "index_oob": lambda m: m.ones(2, 3)[5],
    "index_oob_dim1": lambda m: m.ones(2, 3)[0, 7],
    "too_many_indices": lambda m: m.ones(2, 3)[0, 0, 0],
    "index_list_oob": lambda m: m.ones(2, 3)[[0, 5]],
    "mask_shape": lambda m: m.ones(2, 3)[m.ones(3, dtype=m.bool)],
    "index_float": lambda m: m.ones(2, 3)[m.tensor([0.5])],
    "index_0d": lambda m: m.tensor(1.0)[0],
    "negative_step": lambda m: m.ones(3)[::-1],
    "expand_bad": lambda m: m.ones(2, 3).expand(4, 3, 2),
    "len_0d": lambda m: len(m.tensor(1.0)),
    "iter_0d": lambda m: iter(m.tensor(1.0)),
    "bool_many": lambda m: bool(m.ones(2)),
    "float_many": lambda m: float(m.ones(2)),
    "mean_int": lambda m: m.ones(2, dtype=m.int64).mean(),
    "max_empty": lambda m: m.ones(0).max(),
    "zero_leaf": lambda m: m.ones(2, requires_grad=True).zero_(),
    "pow_neg_int": lambda m: m.tensor([2]) ** -1,
    "ragged": lambda m: m.tensor([[1, 2], [3]]),
    "string": lambda m: m.tensor("a"),
    "dup_dims": lambda m: m.ones(2, 3).sum((0, 0)),
    "retain_grad_no_grad": lambda m: m.ones(2).retain_grad(),
    "bool_neg": lambda m: -m.tensor([True]),
    "bool_sub": lambda m: m.tensor([True]) - m.tensor([False]),
    "permute_len": lambda m: m.ones(2, 3).permute(0),
    "squeeze_dim": lambda m: m.ones(2, 3).squeeze(3),
    "where_shapes": lambda m: m.where(m.ones(2, dtype=m.bool), m.ones(3), m.ones(2)),
    "clamp_none": lambda m: m.ones(2).clamp(),
    "gather_bad_index": lambda m: m.gather(m.ones(2, 3), 1, m.tensor([[0], [5]])),
}


@requires_torch
@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_errors_match_pytorch(name):
    fn = ERROR_CASES[name]
    ours = error_of(lambda: fn(ng))
    theirs = error_of(lambda: fn(torch))
    assert theirs is not None
    assert ours is not None, f"numgrad raised nothing, PyTorch raised {theirs}"
    assert ours[0] is theirs[0], (ours, theirs)
    assert ours[1] == theirs[1]


def test_error_messages_without_torch():
    """The key messages, spelled out, so they are checked even without PyTorch."""
    assert error_of(lambda: ng.ones(2) + ng.ones(4)) == (
        RuntimeError, "The size of tensor a (2) must match the size of tensor b (4) at "
        "non-singleton dimension 0")
    assert error_of(lambda: ng.ones(2, 3) @ ng.ones(4, 5)) == (
        RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    assert error_of(lambda: ng.ones(2, requires_grad=True).numpy()) == (
        RuntimeError, "Can't call numpy() on Tensor that requires grad. Use "
        "tensor.detach().numpy() instead.")
    assert error_of(lambda: ng.tensor([1, 2], requires_grad=True)) == (
        RuntimeError, "Only Tensors of floating point and complex dtype can require gradients")


# --------------------------------------------------------------------------- attributes


def test_attributes():
    x = ng.rand(2, 3, requires_grad=True)
    assert x.shape == (2, 3) and repr(x.shape) == "torch.Size([2, 3])"
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-1) == 3
    assert x.dim() == 2 and x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert x.dtype is ng.float32 and repr(x.dtype) == "torch.float32"
    assert repr(x.device) == "device(type='cpu')" and x.device == "cpu"
    assert x.is_leaf and x.requires_grad and x.grad is None and x.grad_fn is None
    assert ng.float is ng.float32 and ng.double is ng.float64 and ng.long is ng.int64


def test_data_and_detach_share_storage():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d[0] = 5.0
    assert x.detach().tolist() == [5.0, 2.0]
    y = x.detach()
    y[1] = 7.0
    assert x.tolist() == [5.0, 7.0]
    assert x._version == y._version == 1


def test_item_tolist_numpy_array():
    x = ng.tensor([[1.5, 2.0]])
    assert x[0, 0].item() == 1.5
    assert x.tolist() == [[1.5, 2.0]]
    a = x.numpy()
    a[0, 1] = 9
    assert x[0, 1].item() == 9.0  # numpy() shares memory
    assert np.asarray(x).shape == (1, 2)
    assert float(ng.tensor([3.0])) == 3.0 and int(ng.tensor(4)) == 4


def test_grad_setter_and_zero():
    x = ng.ones(2, requires_grad=True)
    x.grad = ng.full((2,), 3.0)
    assert x.grad.tolist() == [3.0, 3.0]
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0]
    x.grad = None
    assert x.grad is None
    with ng.no_grad():
        x.zero_()
    assert x.tolist() == [0.0, 0.0]


def test_requires_grad_setter_on_leaf():
    a = ng.randn(3, 4)
    a.requires_grad = True
    assert a.requires_grad
    b = ng.randn(3, 4).requires_grad_()
    assert b.requires_grad


def test_numpy_interop_operators():
    x = ng.tensor([1.0, 2.0])
    assert (np.float64(2.0) * x).tolist() == [2.0, 4.0]
    assert (x + np.float32(1)).dtype is ng.float32


# --------------------------------------------------------------------------- factories


@requires_torch
def test_factory_dtypes_match_pytorch():
    cases = [
        lambda m: m.tensor([1, 2]), lambda m: m.tensor([1.0, 2]), lambda m: m.tensor(3.5),
        lambda m: m.tensor(True), lambda m: m.tensor([[True, False]]),
        lambda m: m.tensor(np.array([1.0, 2.0])), lambda m: m.tensor(np.arange(3, dtype=np.int32)),
        lambda m: m.zeros(2, 3), lambda m: m.ones((2, 3), dtype=m.float64),
        lambda m: m.full((2,), 1.5), lambda m: m.full((2,), 7), lambda m: m.arange(5),
        lambda m: m.arange(0, 1, 0.25), lambda m: m.arange(1.0, 4.0), lambda m: m.linspace(0, 1, 5),
        lambda m: m.eye(3), lambda m: m.eye(2, 3), lambda m: m.zeros_like(m.ones(2, dtype=m.int64)),
        lambda m: m.ones_like(m.ones(2), dtype=m.float64), lambda m: m.full_like(m.ones(2), 3),
        lambda m: m.empty(2, 0), lambda m: m.tensor([]),
    ]
    for f in cases:
        ours, theirs = both(f)
        assert str(ours.dtype) == str(theirs.dtype)
        assert tuple(ours.shape) == tuple(theirs.shape)
        if ours.numel() and f is not cases[-2]:
            assert_close(ours, theirs, atol=1e-7)


@requires_torch
def test_random_streams_match_pytorch():
    for seed in (0, 3, 12345, 2**40 + 7):
        def draw(m, seed=seed):
            m.manual_seed(seed)
            return [m.rand(5), m.rand(3, dtype=m.float64), m.randn(20, dtype=m.float64),
                    m.randn(3, 2), m.randn(1), m.randn(1), m.randint(0, 10, (8,)),
                    m.randint(3, 10, (2, 2)), m.randperm(9), m.rand(17, 2)]
        ours, theirs = both(draw)
        for a, b in zip(ours, theirs):
            assert str(a.dtype) == str(b.dtype)
            assert_close(a, b, rtol=3e-7, atol=3e-7)


def test_manual_seed_is_reproducible():
    ng.manual_seed(42)
    a = ng.randn(4, 4)
    ng.manual_seed(42)
    b = ng.randn(4, 4)
    assert a.tolist() == b.tolist()
    g = ng.Generator().manual_seed(1)
    assert ng.rand(3, generator=g).shape == (3,)


def test_from_numpy_shares_memory_and_as_tensor():
    a = np.zeros(3)
    t = ng.from_numpy(a)
    a[1] = 2
    assert t.tolist() == [0.0, 2.0, 0.0] and t.dtype is ng.float64
    assert ng.as_tensor(a).numpy() is a or np.shares_memory(ng.as_tensor(a).numpy(), a)
    assert ng.tensor(a).numpy() is not a
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
        ng.from_numpy(np.array([object()]))


def test_tensor_of_tensor_warns_and_copies():
    x = ng.ones(2)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        y = ng.tensor(x)
    y[0] = 3
    assert x.tolist() == [1.0, 1.0]


def test_legacy_tensor_constructor():
    assert ng.Tensor([1, 2]).dtype is ng.float32
    assert ng.Tensor(2, 3).shape == (2, 3)


def test_inplace_allowed_on_leaf_under_no_grad():
    w = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        w.fill_(0.5)
        w[0] = 2.0
    assert w.tolist() == [2.0, 0.5, 0.5]
    assert w.requires_grad and w.is_leaf


def test_setitem_advanced_and_mask():
    x = ng.zeros(3, 4)
    x[[0, 2], 1] = 5.0
    x[x == 0] = -1.0
    expected = np.full((3, 4), -1.0, np.float32)
    expected[[0, 2], 1] = 5.0
    assert_close(x, expected)
    x[1:, ::2] = ng.tensor([7.0, 8.0])
    expected[1:, ::2] = [7.0, 8.0]
    assert_close(x, expected)
