"""Recurrent layers: ``RNN`` (tanh/relu), ``LSTM`` (with ``proj_size``), ``GRU`` and their
single-step cells, with PyTorch's signatures, parameter names, initialization and errors.

``LSTM`` layers (without ``proj_size``) are one node per layer and direction, the declared op
``mkldnn_rnn_layer`` (``numgrad/ops/recurrent.py``), whose forward and backward run in
``numgrad.kernels.<device>.rnn`` (on the CPU one compiled loop each): the input projection
of all time steps as one matrix product, then per step one ``h @ W_hh^T`` product and one
pass of gate math; backward one pass and one product per step, and each weight gradient and
the input's as one product over all steps.
Its gradients taken with ``create_graph=True`` come from the composed form below, built
again from the node's saved inputs, so they can be differentiated again.

The other layers, the cells, projected LSTMs and that composed form are numgrad ops
(``addmm``, ``sigmoid``, ``tanh``, ``mul``, ``stack``...), so every step runs numgrad's
kernels and the gradients come from their rules. Per layer and direction the input
projection of all time steps is one matrix product; a step then adds one ``h @ W_hh^T``
product and the gate math. The projected steps are handed to the loop by the op
``_unbind_steps``, one node for all steps whose backward stacks the step gradients (slicing
each step out separately would give every step's gradient the size of the whole sequence).

Gates follow PyTorch's layout: LSTM rows (i, f, g, o), GRU rows (r, z, n) with the reset gate
applied to ``W_hn h + b_hn``. A ``PackedSequence`` input runs in ``_rnn_packed``.
"""

import math
import numbers
import warnings

import numpy as np

from numgrad import _factories
from numgrad.nn import functional as F
from numgrad.nn import init
from numgrad.nn.modules.module import Module
from numgrad.nn.parameter import Parameter
from numgrad.nn.utils.rnn import PackedSequence  # (torch.nn.modules.rnn has it too)
from numgrad.ops import elementwise as ew
from numgrad.ops import linalg as la
from numgrad.ops import recurrent as RO
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import Tensor

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ---- one time step of each cell ------------------------------------------------------------
# A step takes the step's input projections ``xs`` (with b_ih, and the parts of b_hh that add
# to them), the state, and the per-layer parameters that ``_prepare`` made; it returns the new
# (h, c).


def _cols(x, start, stop):
    return sh.slice_dim(x, 1, start, stop, None)


def _rnn_tanh_step(xs, h, c, p):
    return un.tanh(F.addmm(xs[0], h, p[0])), None


def _rnn_relu_step(xs, h, c, p):
    return un.relu(F.addmm(xs[0], h, p[0])), None


def _lstm_step(xs, h, c, p):
    w_hh_t, w_hr_t = p
    gates = F.addmm(xs[0], h, w_hh_t)
    n = gates._data.shape[1] // 4
    act = un.sigmoid(gates)  # the g quarter is taken from tanh below
    i, f, o = _cols(act, 0, n), _cols(act, n, 2 * n), _cols(act, 3 * n, None)
    g = un.tanh(_cols(gates, 2 * n, 3 * n))
    c = ew.add(ew.mul(f, c), ew.mul(i, g))
    h = ew.mul(o, un.tanh(c))
    if w_hr_t is not None:
        h = la.mm(h, w_hr_t)
    return h, c


def _gru_step(xs, h, c, p):
    w_rz_t, w_n_t, b_n = p
    rz = un.sigmoid(F.addmm(xs[0], h, w_rz_t))
    n = rz._data.shape[1] // 2
    r, z = _cols(rz, 0, n), _cols(rz, n, None)
    hn = la.mm(h, w_n_t) if b_n is None else F.addmm(b_n, h, w_n_t)
    n = un.tanh(ew.add(xs[1], ew.mul(r, hn)))
    # h' = (1 - z) n + z h = n + z (h - n)
    return ew.add(n, ew.mul(z, ew.sub(h, n))), None


_STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step,
          "GRU": _gru_step}


def _rows(x, start, stop):
    return sh.slice_dim(x, 0, start, stop, None)


def _prepare(mode, w_ih, w_hh, b_ih, b_hh, w_hr):
    """The bias of the input projection x W_ih^T + bias, and the step's parameters.

    b_hh adds to the projection, except the GRU's b_hn that sits inside the reset gate; the
    GRU's recurrent weight is split into its (r, z) rows and its n rows."""
    if mode != "GRU":
        bias = None if b_ih is None else ew.add(b_ih, b_hh)
        return bias, (sh.t(w_hh), None if w_hr is None else sh.t(w_hr))
    n = w_hh._data.shape[0] // 3
    step = (sh.t(_rows(w_hh, 0, 2 * n)), sh.t(_rows(w_hh, 2 * n, None)),
            None if b_hh is None else _rows(b_hh, 2 * n, None))
    if b_ih is None:
        return None, step
    bias = sh.cat([ew.add(_rows(b_ih, 0, 2 * n), _rows(b_hh, 0, 2 * n)),
                   _rows(b_ih, 2 * n, None)])
    return bias, step


def _parts(mode, xw):
    """The projection as the step reads it: the GRU's (r, z) and n columns apart."""
    if mode != "GRU":
        return (xw,)
    n = xw._data.shape[-1] // 3
    last = xw._data.ndim - 1
    return (sh.slice_dim(xw, last, 0, 2 * n, None), sh.slice_dim(xw, last, 2 * n, None, None))


def _check_dtype(input, weight):
    if input.dtype != weight.dtype:
        raise ValueError(
            f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
            f"Convert input: input.to({weight.dtype}), or convert model: "
            f"model.to({input.dtype})")


# ---- a whole LSTM layer as one node ----------------------------------------------------------


def _lstm_composed(xw, h, c, w_hh, time_dim, reverse):
    """The layer as numgrad ops: (output sequence, last h, last c)."""
    seq = RO._unbind_steps(xw, time_dim)
    params = (sh.t(w_hh), None)
    outs = [None] * len(seq)
    for t in (range(len(seq) - 1, -1, -1) if reverse else range(len(seq))):
        h, c = _lstm_step([seq[t]], h, c, params)
        outs[t] = h
    return sh.stack(outs, time_dim), h, c


def _composed_backward(inputs, batch_first, reverse, grads, need):
    """The LSTM layer's input gradients through its composed form (a graph of its own, on the
    same inputs), with ``create_graph``: ``mkldnn_rnn_layer``'s derivative when a graph of
    the gradients is recorded."""
    from numgrad import autograd
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = inputs
    bias = None if b_ih is None else ew.add(b_ih, b_hh)
    xw = F.linear(x, w_ih, bias)
    out, hn, cn = _lstm_composed(xw, h0, c0, w_hh, 1 if batch_first else 0, reverse)
    got = iter(autograd.grad((out, hn, cn), [t for t, n in zip(inputs, need) if n], grads,
                             create_graph=True, allow_unused=True))
    return tuple(next(got) if n else None for n in need)


def _fused(mode, x, w_hr):
    """Whether a layer runs as ``mkldnn_rnn_layer``: an LSTM without projection on float data
    with a batch (the kernels' products need one row at least)."""
    a = x._data
    return (mode == "LSTM" and w_hr is None and a.dtype in _FLOATS and a.ndim == 3
            and a.shape[0] * a.shape[1] > 0)


# ---- the multi-layer modules ---------------------------------------------------------------


class RNNBase(Module):
    """Parameters, checks and the layer loop shared by ``RNN``, ``LSTM`` and ``GRU``."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout) if isinstance(dropout, numbers.Number) else dropout
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_config(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                      proj_size)
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_in = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih", (gate_size, layer_in)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(_factories.empty(*shape, dtype=dtype,
                                                                   device=device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op: the weights need no packing into one buffer (PyTorch packs for cuDNN)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- checks
    def _expected_hidden_size(self, input, real=True):
        batch = input.size(0) if self.batch_first else input.size(1)
        size = self.proj_size if real and self.proj_size > 0 else self.hidden_size
        return ((2 if self.bidirectional else 1) * self.num_layers, batch, size)

    def _check_input(self, input):
        _check_dtype(input, getattr(self, self._flat_weights_names[0]))
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    @staticmethod
    def _check_hidden(hx, expected, what="hidden"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(hx.shape)}")

    def _batched(self, input, name):
        """(input as 3-D, whether it was batched): PyTorch's check of the input's dims."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected a Tensor or PackedSequence as input, got "
                            f"{type(input).__name__}")
        if input.dim() not in (2, 3):
            tail = " tensor instead" if name == "RNN" else " instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
        if input.dim() == 3:
            return input, True
        return sh.unsqueeze(input, 0 if self.batch_first else 1), False

    # -- the computation
    def _run(self, input, h0, c0):
        """Output and final states (lists per layer and direction) of all layers; ``h0`` and
        ``c0`` are lists of (batch, size) tensors or None (zeros)."""
        time_dim = 1 if self.batch_first else 0
        if input.size(time_dim) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        step = _STEPS[self.mode]
        directions = 2 if self.bidirectional else 1
        hs, cs = [], []
        x = input
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                out, h, c = self._layer(step, x, self.all_weights[k], h0[k], c0[k] if c0 else
                                        None, time_dim, direction == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if directions == 1 else sh.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, hs, cs

    def _layer(self, step, x, weights, h, c, time_dim, reverse):
        """One layer in one direction: (output sequence, last h, last c)."""
        b_ih, b_hh = (weights[2], weights[3]) if self.bias else (None, None)
        w_hr = weights[-1] if self.proj_size > 0 else None
        if _fused(self.mode, x, w_hr):
            return RO.mkldnn_rnn_layer(x, h, c, weights[0], weights[1], b_ih, b_hh,
                                       time_dim == 1, reverse)
        bias, params = _prepare(self.mode, weights[0], weights[1], b_ih, b_hh, w_hr)
        xw = _parts(self.mode, F.linear(x, weights[0], bias))
        seqs = [RO._unbind_steps(part, time_dim) for part in xw]
        steps = len(seqs[0])
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h, c = step([seq[t] for seq in seqs], h, c, params)
            outs[t] = h
        return sh.stack(outs, time_dim), h, c

    def _zeros(self, input, size):
        batch = input.size(0) if self.batch_first else input.size(1)
        n = (2 if self.bidirectional else 1) * self.num_layers
        z = _factories.zeros(batch, size, dtype=input.dtype, device=input.device)
        return [z] * n


def _check_config(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                  proj_size):
    if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
            or not 0 <= dropout <= 1):
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
    for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                              ("input_size", input_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f"{name} should be of type {kind.__name__}, got: "
                            f"{type(value).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _is_packed(input):
    return isinstance(input, PackedSequence)


def _run_packed(module, packed, hx):
    from numgrad.nn.modules import _rnn_packed
    return _rnn_packed.run(module, packed, hx)


def _no_proj(kwargs):
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class _SingleStateRNN(RNNBase):
    """RNN and GRU: one hidden state ``h``."""

    def forward(self, input, hx=None):
        if _is_packed(input):
            return _run_packed(self, input, hx)
        name = "RNN" if self.mode != "GRU" else "GRU"
        input, batched = self._batched(input, name)
        if hx is not None:
            if batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            if not batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but "
                                       f"got {hx.dim()}-D tensor")
                hx = sh.unsqueeze(hx, 1)
        self._check_input(input)
        if hx is None:
            h0 = self._zeros(input, self.hidden_size)
        else:
            self._check_hidden(hx, self._expected_hidden_size(input))
            h0 = sh.unbind(hx, 0)
        output, hs, _ = self._run(input, h0, None)
        h_n = sh.stack(hs, 0)
        if not batched:
            return sh.squeeze(output, 0 if self.batch_first else 1), sh.squeeze(h_n, 1)
        return output, h_n


class RNN(_SingleStateRNN):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None,
                 **kwargs):
        _no_proj(kwargs)
        self.nonlinearity = nonlinearity
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype, **kwargs)


class GRU(_SingleStateRNN):
    """Gated recurrent unit; gates (r, z, n) with n = tanh(W_in x + b_in + r (W_hn h + b_hn))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        _no_proj(kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory; gates (i, f, g, o), optional projection of h (``proj_size``)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if _is_packed(input):
            return _run_packed(self, input, hx)
        input, batched = self._batched(input, "LSTM")
        if hx is not None:
            h, c = hx[0], hx[1]
            if batched and (h.dim() != 3 or c.dim() != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                   f"got ({h.dim()}-D, {c.dim()}-D) tensors")
            if not batched:
                if h.dim() != 2 or c.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({h.dim()}-D, {c.dim()}-D) tensors")
                h, c = sh.unsqueeze(h, 1), sh.unsqueeze(c, 1)
        self._check_input(input)
        if hx is None:
            h0 = self._zeros(input, self.proj_size or self.hidden_size)
            c0 = self._zeros(input, self.hidden_size)
        else:
            self._check_hidden(h, self._expected_hidden_size(input), "hidden[0]")
            self._check_hidden(c, self._expected_hidden_size(input, real=False), "hidden[1]")
            h0, c0 = sh.unbind(h, 0), sh.unbind(c, 0)
        output, hs, cs = self._run(input, h0, c0)
        h_n, c_n = sh.stack(hs, 0), sh.stack(cs, 0)
        if not batched:
            output = sh.squeeze(output, 0 if self.batch_first else 1)
            return output, (sh.squeeze(h_n, 1), sh.squeeze(c_n, 1))
        return output, (h_n, c_n)


# ---- the cells -----------------------------------------------------------------------------


class RNNCellBase(Module):
    """Parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` of one step."""

    _mode = None
    _name = None

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = num_chunks * hidden_size
        self.weight_ih = Parameter(_factories.empty(rows, input_size, dtype=dtype,
                                                    device=device))
        self.weight_hh = Parameter(_factories.empty(rows, hidden_size, dtype=dtype,
                                                    device=device))
        if bias:
            self.bias_ih = Parameter(_factories.empty(rows, dtype=dtype, device=device))
            self.bias_hh = Parameter(_factories.empty(rows, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_dims(self, input, states):
        if input.dim() not in (1, 2):
            raise ValueError(f"{self._name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        for what, s in states:
            if s is not None and s.dim() not in (1, 2):
                raise ValueError(f"{self._name}: Expected {what} to be 1D or 2D, got "
                                 f"{s.dim()}D instead")

    def _check_sizes(self, input, states):
        """The step's checks of the 2-D input and states (PyTorch's messages)."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.input_size}")
        for k, s in enumerate(states):
            if s.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} "
                                   f"batch size {s.size(0)}")
            if s.dim() < 2:
                raise IndexError("Dimension out of range (expected to be in range of [-1, 0], "
                                 "but got 1)")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.size(1)}, "
                                   f"expected {self.hidden_size}")
            if s.dim() != 2:
                raise RuntimeError(f"{self._name}: a 2-D hidden{k} was expected (numgrad does "
                                   f"not broadcast a {s.dim()}-D state)")

    def _step(self, input, h, c):
        mode = self._mode
        bias, params = _prepare(mode, self.weight_ih, self.weight_hh, self.bias_ih,
                                self.bias_hh, None)
        xw = _parts(mode, F.linear(input, self.weight_ih, bias))
        return _STEPS[mode](xw, h, c, params)

    def _prepare(self, input, states):
        """(2-D input, 2-D states (zeros for None), batched)."""
        batched = input.dim() == 2
        if not batched:
            input = sh.unsqueeze(input, 0)
            states = [s if s is None else sh.unsqueeze(s, 0) for s in states]
        zeros = None
        out = []
        for s in states:
            if s is None:
                if zeros is None:
                    zeros = _factories.zeros(input.size(0), self.hidden_size,
                                             dtype=input.dtype, device=input.device)
                s = zeros
            out.append(s)
        self._check_sizes(input, out)
        return input, out, batched


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    _name = "RNNCell"

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    @property
    def _mode(self):
        return {"tanh": "RNN_TANH", "relu": "RNN_RELU"}.get(self.nonlinearity)

    def forward(self, input, hx=None):
        self._check_dims(input, [("hidden", hx)])
        input, (h,), batched = self._prepare(input, [hx])
        if self._mode is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h, _ = self._step(input, h, None)
        return h if batched else sh.squeeze(h, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from (h, c), gates (i, f, g, o)."""

    _mode = "LSTM"
    _name = "LSTMCell"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        self._check_dims(input, [])
        if hx is not None:
            if isinstance(hx, Tensor):
                raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of "
                                "Tensors, not Tensor")
            hx = tuple(hx)
        self._check_dims(input, [(f"hx[{k}]", s) for k, s in enumerate(hx or ())])
        if hx is not None and len(hx) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")
        input, (h, c), batched = self._prepare(input, list(hx) if hx else [None, None])
        h, c = self._step(input, h, c)
        return (h, c) if batched else (sh.squeeze(h, 0), sh.squeeze(c, 0))


class GRUCell(RNNCellBase):
    """One GRU step, gates (r, z, n): h' = (1 - z) n + z h."""

    _mode = "GRU"
    _name = "GRUCell"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        self._check_dims(input, [("hidden", hx)])
        input, (h,), batched = self._prepare(input, [hx])
        h, _ = self._step(input, h, None)
        return h if batched else sh.squeeze(h, 0)


__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
