"""``numgrad.utils.tensorboard``: PyTorch's ``SummaryWriter`` on the ``tensorboard`` package.

Optional: ``pip install tensorboard`` (or ``pip install "numgrad[tensorboard]"``). Importing
``numgrad`` never imports this package or ``tensorboard``.
"""


def _check_tensorboard():
    try:
        import tensorboard
    except ImportError:
        raise ImportError(
            "TensorBoard logging requires TensorBoard version 1.15 or above "
            '(pip install tensorboard, or pip install "numgrad[tensorboard]")') from None
    version = getattr(tensorboard, "__version__", "0")
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) < (1, 15):
        raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")


_check_tensorboard()
del _check_tensorboard

from numgrad.utils.tensorboard.writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
