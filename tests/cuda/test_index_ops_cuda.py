"""index_add / index_copy / index_fill on a CUDA tensor (the GPU's scatter-add and put after
the host's index check; an add in a dtype without a GPU atomic on a host copy) against the
same ops on the CPU: values, negative fill indices, repeated indices, errors."""

import numpy as np
import pytest

import numgrad as ng


def _cases(rng):
    for dt in (ng.float32, ng.int64):
        for shape, d in (((4, 5, 3), 1), ((6,), 0), ((3, 1), -1)):
            x = ng.tensor(rng.standard_normal(shape) * 4).to(dt)
            idx = ng.tensor(rng.integers(0, x.shape[d], 5))  # repeats: adds accumulate
            sshape = list(shape)
            sshape[d] = 5
            yield x, d, idx, ng.tensor(rng.standard_normal(sshape) * 4).to(dt)


@pytest.mark.parametrize("name", ["index_add", "index_copy", "index_fill"])
def test_index_writes_match_cpu(name, rng):
    for x, d, idx, src in _cases(rng):
        arg = 3 if name == "index_fill" else src
        carg = 3 if name == "index_fill" else src.to("cuda")
        want = getattr(x, name)(d, idx, arg)
        got = getattr(x.to("cuda"), name)(d, idx.to("cuda"), carg).cpu()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    x = ng.arange(12.0).reshape(3, 4)
    neg = ng.tensor([-1, 0, -4])
    np.testing.assert_array_equal(x.to("cuda").index_fill(1, neg.to("cuda"), 7).cpu().numpy(),
                                  x.index_fill(1, neg, 7).numpy())


@pytest.mark.parametrize("dt", ["int16", "uint8", "bool"])
def test_index_add_without_gpu_atomic(dt, rng):
    x = ng.tensor(rng.integers(0, 3, (3, 4))).to(getattr(ng, dt))
    src = ng.tensor(rng.integers(0, 3, (3, 3))).to(getattr(ng, dt))
    idx = ng.tensor([0, 3, 0])
    for name in ("index_add", "index_copy"):
        want = getattr(x, name)(1, idx, src)
        got = getattr(x.to("cuda"), name)(1, idx.to("cuda"), src.to("cuda")).cpu()
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_bad_index_raises_as_on_cpu():
    x, src = ng.zeros(3, 4), ng.ones(3, 2)
    for name, error in (("index_add", RuntimeError), ("index_copy", IndexError)):
        msgs = []
        for t, i, s in ((x, ng.tensor([0, 4]), src),
                        (x.to("cuda"), ng.tensor([0, 4]).to("cuda"), src.to("cuda"))):
            with pytest.raises(error) as e:
                getattr(t, name)(1, i, s)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
