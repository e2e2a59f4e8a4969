"""The LSTM cell written once for both devices: scalar formulas for one (batch row, hidden
unit), values in and values out (no Numba import here).

``numgrad.kernels.cpu.rnn`` binds them inline into its step passes, which apply them a
quantity at a time over a row's hidden units (loops that vectorize); ``numgrad.kernels.cuda.rnn``
binds them as device functions of its cell kernels, a thread per unit running ``lstm_cell`` or
``lstm_cell_backward``. Each device binds ``fsigmoid``, ``ftanh`` and ``ffma`` (a * b + c
rounded once) to its own compiled forms; the backward formulas read the saved activations
(sigmoid'(x) = s (1 - s), tanh'(x) = 1 - t^2).
"""

from numgrad.kernels.scalar import like


def fsigmoid(x):  # bound to each device's sigmoid when compiled
    raise NotImplementedError


def ftanh(x):  # bound to each device's tanh when compiled
    raise NotImplementedError


def ffma(a, b, c):  # bound to each device's fused multiply-add when compiled
    raise NotImplementedError


# pre = x W_ih^T + b_ih + b_hh + h_prev W_hh^T, one gate's column
def gate(xw, b_ih, b_hh, r):
    """A gate's pre-activation: the input's projection, both biases, the recurrent product."""
    return xw + (b_ih + b_hh) + r


def cell(i, f, g, c_prev):
    """c = f c_prev + i g."""
    return f * c_prev + i * g


def hidden(o, tc):
    """h = o tanh(c)."""
    return o * tc


def lstm_cell(pi, pf, pg, po, c_prev):
    """(i, f, g, o, c, tanh(c), h) from the gates' pre-activations and the previous cell:
    i, f, o = sigmoid, g = tanh."""
    i = fsigmoid(pi)
    f = fsigmoid(pf)
    g = ftanh(pg)
    o = fsigmoid(po)
    c = cell(i, f, g, c_prev)
    tc = ftanh(c)
    return i, f, g, o, c, tc, hidden(o, tc)


# d pre_o = dh tanh(c) o (1 - o)
def d_out_gate(dh, o, tc):
    return dh * tc * (like(tc, 1.0) - o) * o


# dc_total = dc + dh o (1 - tanh(c)^2)
def d_cell(dc, dh, o, tc):
    return dc + dh * o * ffma(-tc, tc, like(tc, 1.0))


# d pre_f = dc_total c_prev f (1 - f)
def d_forget_gate(dct, c_prev, f):
    return dct * c_prev * (like(f, 1.0) - f) * f


# d pre_g = dc_total i (1 - g^2)
def d_cell_gate(dct, i, g):
    return dct * i * ffma(-g, g, like(g, 1.0))


# dc_prev = dc_total f
def d_prev_cell(dct, f):
    return dct * f


# d pre_i = dc_total g i (1 - i)
def d_input_gate(dct, g, i):
    return dct * g * (like(i, 1.0) - i) * i


def lstm_cell_backward(dh, dc, i, f, g, o, c_prev, tc):
    """(d pre_i, d pre_f, d pre_g, d pre_o, dc_prev) from the gradients reaching h and c."""
    dct = d_cell(dc, dh, o, tc)
    return (d_input_gate(dct, g, i), d_forget_gate(dct, c_prev, f), d_cell_gate(dct, i, g),
            d_out_gate(dh, o, tc), d_prev_cell(dct, f))


# the order of binding: each function after those it calls
CELL_FUNCTIONS = ("gate", "cell", "hidden", "lstm_cell", "d_out_gate", "d_cell",
                  "d_forget_gate", "d_cell_gate", "d_prev_cell", "d_input_gate",
                  "lstm_cell_backward")
