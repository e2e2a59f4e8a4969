"""``numgrad.utils``: data loading."""

from numgrad.utils import data  # noqa: F401

__all__ = ["data"]
