"""``numgrad.utils.data``: Dataset, TensorDataset, Subset, random_split, samplers and
DataLoader, in PyTorch's submodules (``dataset``, ``sampler``, ``dataloader``)."""

from numgrad.utils.data.dataloader import DataLoader, default_collate, default_convert
from numgrad.utils.data.dataset import (
    ConcatDataset,
    Dataset,
    Subset,
    TensorDataset,
    random_split,
)
from numgrad.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "RandomSampler", "Sampler",
           "SequentialSampler", "Subset", "TensorDataset", "default_collate", "default_convert",
           "random_split"]
