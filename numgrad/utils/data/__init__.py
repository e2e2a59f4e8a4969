"""``numgrad.utils.data``: datasets, samplers, collate functions and DataLoader (with worker
processes), in PyTorch's submodules (``dataset``, ``sampler``, ``dataloader``)."""

from numgrad.utils.data.dataloader import (
    DataLoader,
    default_collate,
    default_convert,
    get_worker_info,
)
from numgrad.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from numgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
           "default_convert", "get_worker_info", "random_split"]
