"""``embedding_bag`` over prepared bags: the host-side description of the bags
(``numgrad.ops.embedding_bag.Bags``) handed to the declared op ``_embedding_bag``
(``EmbeddingBagBackward0``, ``numgrad/ops/embedding_bag.py``), whose forward and gradients run
the kernels of ``numgrad.kernels.embedding_bag`` on either device."""

from numgrad.ops import embedding_bag as EBO


def embedding_bag_op(flat, weight, bags, mode, per_sample_weights, padding_idx):
    """The (B, D) bag reductions of ``weight`` rows at the int ``flat`` indices (checked in
    range); ``bags`` lists each bag's (start, stop) positions in ``flat``."""
    psw_shape = tuple(per_sample_weights.shape) if per_sample_weights is not None else None
    prepared = EBO.Bags(flat, bags, mode, padding_idx, weight._data.shape[0], psw_shape)
    return EBO._embedding_bag(weight, per_sample_weights, prepared)
