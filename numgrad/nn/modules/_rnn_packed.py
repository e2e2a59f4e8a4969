"""``RNN``/``LSTM``/``GRU`` on a ``PackedSequence``: each step runs on the rows of the
sequences still going (``batch_sizes[t]`` of them, longest first), so each sequence's final
state is its state at its own last step, as in PyTorch. Built from the layers' step functions
and numgrad ops (``split``, ``cat``, ``index_select``): no node of its own."""

from numgrad.nn import functional as F
from numgrad.nn.modules import rnn as R
from numgrad.ops import indexing as ix
from numgrad.ops import shape as sh


def _rows(x, start, stop):
    return sh.slice_dim(x, 0, start, stop, None)


def _layer(module, step, data, sizes, weights, h0, c0, reverse):
    """One layer in one direction over packed ``data``: (packed output, last h, last c)."""
    b_ih, b_hh = (weights[2], weights[3]) if module.bias else (None, None)
    w_hr = weights[-1] if module.proj_size > 0 else None
    bias, params = R._prepare(module.mode, weights[0], weights[1], b_ih, b_hh, w_hr)
    parts = [sh.split(p, sizes, 0) for p in R._parts(module.mode, F.linear(data, weights[0],
                                                                            bias))]
    outs = [None] * len(sizes)
    lstm = c0 is not None
    if not reverse:
        h, c = h0, c0
        for t, bs in enumerate(sizes):
            rows = h.shape[0]
            hn, cn = step([p[t] for p in parts], _rows(h, 0, bs) if bs < rows else h,
                          (_rows(c, 0, bs) if bs < rows else c) if lstm else None, params)
            outs[t] = hn
            # the sequences that ended keep their last state below the running ones
            h = sh.cat([hn, _rows(h, bs, None)], 0) if bs < rows else hn
            if lstm:
                c = sh.cat([cn, _rows(c, bs, None)], 0) if bs < rows else cn
        return sh.cat(outs, 0), h, c
    h = c = None
    for t in range(len(sizes) - 1, -1, -1):
        bs = sizes[t]
        have = 0 if h is None else h.shape[0]
        if bs > have:  # sequences whose last step is t start here from the initial state
            h = _rows(h0, have, bs) if h is None else sh.cat([h, _rows(h0, have, bs)], 0)
            if lstm:
                c = _rows(c0, have, bs) if c is None else sh.cat([c, _rows(c0, have, bs)], 0)
        h, c = step([p[t] for p in parts], h, c, params)
        outs[t] = h
    return sh.cat(outs, 0), h, c


def run(module, packed, hx):
    """``module(packed, hx)``: (output PackedSequence, h_n) or (output, (h_n, c_n)) for LSTM."""
    from numgrad.nn.utils.rnn import PackedSequence
    data, sizes = packed.data, [int(v) for v in packed.batch_sizes.tolist()]
    batch = sizes[0]
    lstm = module.mode == "LSTM"
    module._check_input(data)
    real = module.proj_size or module.hidden_size
    n = (2 if module.bidirectional else 1) * module.num_layers
    sorted_idx = packed.sorted_indices
    if hx is None:
        h0 = data.new_zeros(n, batch, real)
        c0 = data.new_zeros(n, batch, module.hidden_size) if lstm else None
    else:
        h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
        if sorted_idx is not None:  # the states follow the batch into the sorted order
            h0 = ix.index_select(h0, 1, sorted_idx)
            c0 = ix.index_select(c0, 1, sorted_idx) if lstm else None
        expected = (n, batch, real)
        module._check_hidden(h0, expected, "hidden[0]" if lstm else "hidden")
        if lstm:
            module._check_hidden(c0, (n, batch, module.hidden_size), "hidden[1]")
    step = R._STEPS[module.mode]
    directions = 2 if module.bidirectional else 1
    hs, cs = [], []
    x = data
    for layer in range(module.num_layers):
        outs = []
        for direction in range(directions):
            k = layer * directions + direction
            out, h, c = _layer(module, step, x, sizes, module.all_weights[k], h0[k],
                               c0[k] if lstm else None, direction == 1)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if directions == 1 else sh.cat(outs, 1)
        if module.dropout and module.training and layer < module.num_layers - 1:
            x = F.dropout(x, module.dropout, True)
    output = PackedSequence(x, packed.batch_sizes, sorted_idx, packed.unsorted_indices)
    h_n = sh.stack(hs, 0)
    c_n = sh.stack(cs, 0) if lstm else None
    unsorted = packed.unsorted_indices
    if unsorted is not None:  # back to the caller's batch order
        h_n = ix.index_select(h_n, 1, unsorted)
        c_n = ix.index_select(c_n, 1, unsorted) if lstm else None
    return (output, (h_n, c_n)) if lstm else (output, h_n)
