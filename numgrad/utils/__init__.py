"""``numgrad.utils``: data loading."""

from numgrad.utils import data, dlpack  # noqa: F401

__all__ = ["data", "dlpack"]
