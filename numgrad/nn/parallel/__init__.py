"""``numgrad.nn.parallel``: ``DistributedDataParallel`` over ``numgrad.distributed``, and
``DataParallel`` on one device."""

from numgrad.nn.parallel.data_parallel import DataParallel, data_parallel
from numgrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
