"""``nn.utils.rnn``: ``PackedSequence`` and packing, padding and unpacking of variable-length
sequences, with PyTorch's signatures and errors. Built from numgrad ops (``index_select``,
``cat``, ``stack``), so gradients flow through them; the row orders are computed on the host.
The recurrent layers accept a ``PackedSequence`` (``numgrad/nn/modules/_rnn_packed.py``)."""

from collections import namedtuple

import numpy as np

from numgrad import _dtype, _factories
from numgrad.ops import indexing as ix
from numgrad.ops import shape as sh
from numgrad.ops._util import Tensor

_NOT_SORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
               "pack_sequence to sidestep this requirement if you do not need ONNX "
               "exportability.")


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """The steps of a batch of sequences, time-major, without padding: ``data`` holds step
    0 of every sequence, then step 1 of those still running, ...; ``batch_sizes[t]`` counts
    the sequences at step ``t``; ``sorted_indices`` orders the batch by decreasing length
    (None when it already was) and ``unsorted_indices`` undoes that."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        if batch_sizes is None:  # PyTorch's internal form: (data, batch_sizes) as one tuple
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        return type(self)(data, self.batch_sizes,
                          *(None if i is None else i.to(dev)
                            for i in (self.sorted_indices, self.unsorted_indices)))

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def double(self):
        return self.to(_dtype.float64)

    def float(self):
        return self.to(_dtype.float32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _invert(perm):
    inv = np.empty(perm.numel(), np.int64)
    inv[perm.cpu().numpy()] = np.arange(perm.numel())
    return _factories.tensor(inv, device=perm.device)


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1 or lengths.is_cuda:
            where = "cuda:0" if lengths.is_cuda else "cpu"
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {where} {lengths.dtype._legacy.capitalize()}"
                               " tensor")
        return lengths.numpy().astype(np.int64)
    return np.asarray([int(v) for v in lengths], np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (``T x B x *``, or ``B x T x *`` with ``batch_first``) whose
    sequences have the given ``lengths``."""
    n = _lengths_array(lengths)
    if enforce_sorted:
        if np.any(n[1:] > n[:-1]):
            raise RuntimeError(_NOT_SORTED)
        sorted_indices = None
        order = np.arange(n.size)
    else:
        order = np.argsort(-n, kind="stable")
        n = n[order]
        sorted_indices = _factories.tensor(order, device=input.device)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else \
        (input.shape[0], input.shape[1])
    if n.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{n.size} (batch_size={batch})")
    if n.size and n[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if n.size and n[0] > steps:  # PyTorch reads past the input here; numgrad refuses
        raise RuntimeError(f"pack_padded_sequence: a length ({n[0]}) is larger than the "
                           f"padded sequence length ({steps})")
    batch_sizes = np.array([(n > t).sum() for t in range(int(n[0]) if n.size else 0)],
                           np.int64)
    # row (t, order[b]) of the (T*B, *) or (B*T, *) input for each packed position
    rows = [(order[b] * steps + t) if batch_first else (t * batch + order[b])
            for t, bs in enumerate(batch_sizes) for b in range(bs)]
    flat = sh.reshape(input, (steps * batch,) + tuple(input.shape[2:]))
    data = ix.index_select(flat, 0, _factories.tensor(np.asarray(rows, np.int64),
                                                      device=input.device))
    return PackedSequence(data, _factories.tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The padded batch of a ``PackedSequence`` and each sequence's length (in the batch
    order before packing)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    steps = batch_sizes.size
    batch = int(batch_sizes[0]) if steps else 0
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and "
                             f"max sequence length being {steps}")
        steps = total_length
    lengths = np.array([(batch_sizes > b).sum() for b in range(batch)], np.int64)
    unsorted = sequence.unsorted_indices
    order = unsorted.cpu().numpy() if unsorted is not None else np.arange(batch)
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)])
    pad_row = data.shape[0]
    rows = np.full((batch, steps) if batch_first else (steps, batch), pad_row, np.int64)
    for j, b in enumerate(order):  # output column j holds sorted sequence b
        for t in range(lengths[b]):
            if batch_first:
                rows[j, t] = offsets[t] + b
            else:
                rows[t, j] = offsets[t] + b
    tail = tuple(data.shape[1:])
    pad = _factories.full((1,) + tail, padding_value, dtype=data.dtype, device=data.device)
    padded = ix.index_select(sh.cat([data, pad], 0), 0,
                             _factories.tensor(rows.reshape(-1), device=data.device))
    out = sh.reshape(padded, rows.shape + tail)
    return out, _factories.tensor(lengths[order])


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of different lengths (dim 0) into one padded batch."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sh.unbind(sequences, 0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    tail = tuple(sequences[0].shape[1:])
    first = sequences[0]
    padded = []
    for s in sequences:
        short = longest - s.shape[0]
        if tuple(s.shape[1:]) != tail:
            a, b = tuple(s.shape[1:]), tail
            k = next(i for i in range(min(len(a), len(b)))[::-1] if a[i] != b[i]) \
                if len(a) == len(b) else 0
            raise RuntimeError(f"The size of tensor a ({b[k]}) must match the size of tensor b "
                               f"({a[k]}) at non-singleton dimension {k + 1}")
        if short:
            pad = _factories.full((short,) + tail, padding_value, dtype=first.dtype,
                                  device=first.device)
            s = sh.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return sh.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors of different lengths (dim 0)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = sh.transpose(padded_sequences, 0, 1)
    n = _lengths_array(lengths)
    return [sh.slice_dim(padded_sequences[b], 0, 0, int(k), None) for b, k in enumerate(n)]


def unpack_sequence(packed_sequences):
    """The list of sequences of a ``PackedSequence`` (in the order before packing)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]
