"""SubsetRandomSampler, WeightedRandomSampler, histogram's default bins and
multiprocessing.spawn against PyTorch."""

import os

import numpy as np
import pytest
from conftest import raised, requires_torch, torch
from spawn_helpers import rank_writes_or_raises

import numgrad


def _samples(m):
    data = m.utils.data
    m.manual_seed(0)
    g = m.Generator().manual_seed(3)
    return [list(data.SubsetRandomSampler([5, 6, 7, 8])),
            list(data.SubsetRandomSampler(range(10), generator=g)),
            list(data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 7)),
            list(data.WeightedRandomSampler((0.9, 0.4, 0.05, 0.2, 0.3, 0.1), 5,
                                            replacement=False, generator=g)),
            len(data.WeightedRandomSampler([1.0, 2.0], 9)),
            len(data.SubsetRandomSampler([1, 2, 3]))]


@requires_torch
def test_samplers_draw_pytorchs_indices():
    assert _samples(numgrad) == _samples(torch)


@requires_torch
@pytest.mark.parametrize("args", [([1.0, 2.0], 0), ([1.0, 2.0], True), ([1.0, 2.0], 3, 1),
                                  ([[1.0, 2.0]], 3)])
def test_weighted_sampler_errors(args):
    assert (raised(numgrad.utils.data.WeightedRandomSampler, *args)
            == raised(torch.utils.data.WeightedRandomSampler, *args))


@requires_torch
def test_histogram_default_bins_with_density():
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    ours = numgrad.histogram(numgrad.tensor(x), density=True)
    theirs = torch.histogram(torch.tensor(x), density=True)
    assert tuple(ours[0].shape) == (100,)
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy(), rtol=1e-6, atol=1e-6)


def test_spawn_runs_each_rank_and_reports_a_childs_exception(tmp_path):
    mp = numgrad.multiprocessing
    assert mp.Queue is not None and mp.get_context is not None  # the stdlib's names
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(rank_writes_or_raises, args=(str(tmp_path),), nprocs=2)
    assert info.value.error_index == 1
    text = str(info.value)
    assert text.startswith("\n\n-- Process 1 terminated with the following error:\nTraceback")
    assert text.endswith("ValueError: boom in rank 1\n")
    assert (tmp_path / "rank0").read_text().startswith("rank 0 of pid ")
    assert info.value.pid not in (None, os.getpid())
