"""Recurrent layers' ops, declared: ``mkldnn_rnn_layer`` (``MkldnnRnnLayerBackward0``, as
PyTorch's CPU LSTM layer): one LSTM layer in one direction over the whole sequence, input
projection included, whose forward and backward are the fused kernel pair of
``numgrad.kernels.<device>.rnn``; and ``_unbind_steps`` (``UnbindBackward0``, PyTorch's
name of unbind's node): a sequence's steps as one node whose backward stacks the steps'
gradients (selecting each step separately would give every step's gradient the size of the
whole sequence). ``numgrad.nn.LSTM``/``RNN``/``GRU`` check the arguments and call them.
"""

from numgrad.kernels import LazyKernels
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap, state
from numgrad.ops.registry import op

RNN_KERNELS = LazyKernels("rnn")
_F = ("functional",)
_LAYER_INPUTS = ("input", "hx", "cx", "weight_ih", "weight_hh", "bias_ih", "bias_hh")


# d/dx unbind(x, dim)_i = the i-th slice: the gradient is the stack of the slices' gradients
def _unbind_grad(grad, dim):
    return sh.stack(grad, dim)


@op(node="UnbindBackward0", variants=_F, differentiable_outputs=True,
    grads={"self": _unbind_grad})
def _unbind_steps(input, dim):
    """The slices of ``input`` along ``dim`` (views of its data), as one node."""
    data = input._data
    lead = (slice(None),) * dim
    return tuple(data[lead + (i,)] for i in range(data.shape[dim])), {"dim": dim}


def _none_or_wrap(a):
    return None if a is None else _wrap(a)


# the chain rule through the steps, last first: the cell's rule per step
# (numgrad.kernels.lstm.lstm_cell_backward) gives d gates_t; d h_(t-1) = d gates_t W_hh;
# d W_hh = sum_t d gates_t^T h_(t-1), d W_ih = sum_t d gates_t^T x_t, d x_t = d gates_t W_ih,
# d b_ih = d b_hh = sum_t d gates_t
def _lstm_layer_backward(grad, input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh,
                         batch_first, reverse, workspace, output_mask):
    if state.enabled:  # create_graph: through the layer's composed steps (numgrad ops)
        from numgrad.nn.modules.rnn import _composed_backward
        return _composed_backward((input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh),
                                  batch_first, reverse, grad, output_mask)
    dout, dhn, dcn = grad
    m = output_mask
    needs = (m[0], m[1], m[2], m[3], m[4], bias_ih is not None and (m[5] or m[6]))
    dx, dh0, dc0, dw_ih, dw_hh, db = RNN_KERNELS.lstm_backward(
        dout._data, dhn._data, dcn._data, input._data, weight_ih._data, weight_hh._data,
        cx._data, list(workspace), batch_first, reverse, needs)
    db = _none_or_wrap(db)
    return (_none_or_wrap(dx), _none_or_wrap(dh0), _wrap(dc0) if m[2] else None,
            _none_or_wrap(dw_ih), _none_or_wrap(dw_hh), db if m[5] else None,
            db if m[6] else None)


@op(node="MkldnnRnnLayerBackward0", inputs=_LAYER_INPUTS, variants=_F,
    differentiable_outputs=True, grads={_LAYER_INPUTS: _lstm_layer_backward})
def mkldnn_rnn_layer(input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh, batch_first,
                     reverse):
    """(output, h_n, c_n) of one LSTM layer in one direction (float (T, B, I) or batch-first
    input with a batch; the caller checks), in one kernel call."""
    out, hn, cn, workspace = RNN_KERNELS.lstm_forward(
        input._data, weight_ih._data, None if bias_ih is None else bias_ih._data,
        None if bias_hh is None else bias_hh._data, weight_hh._data, hx._data, cx._data,
        batch_first, reverse)
    return (out, hn, cn), {"batch_first": batch_first, "reverse": reverse,
                           "workspace": tuple(workspace)}
