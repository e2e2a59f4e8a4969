"""``numgrad.nn.parallel``: ``DistributedDataParallel`` over ``numgrad.distributed``."""

from numgrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
