"""The CUDA twin of a CPU kernel module, for launchers handed CUDA data."""

import importlib


def twin(module):
    return importlib.import_module(f"numgrad.kernels.cuda.{module}")
