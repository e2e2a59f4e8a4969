"""``torch.utils.dlpack``: DLPack capsules in and out (``numgrad/_dlpack.py``)."""

from numgrad._dlpack import DLDeviceType, from_dlpack


def to_dlpack(tensor):
    """A DLPack capsule (the unversioned kind) sharing ``tensor``'s memory; consume it once."""
    return tensor.__dlpack__()


__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
