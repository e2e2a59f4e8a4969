"""Recurrent layers and cells on 'cuda' against the same code on the CPU."""

import copy

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

TOL = {"rtol": 2e-5, "atol": 2e-6}


def _close(a, b):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), **TOL)


def _outputs(y):
    if isinstance(y, ng.Tensor):
        return [y]
    return [t for part in y for t in _outputs(part)]


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2), (3, 2, 3)),
    (lambda: nn.LSTM(3, 4, 2, bidirectional=True), (3, 2, 3)),
    (lambda: nn.LSTM(3, 4, batch_first=True, bias=False), (2, 3, 3)),
    (lambda: nn.GRU(3, 4, 2, batch_first=True), (2, 3, 3)),
    (lambda: nn.RNN(3, 4, nonlinearity="relu"), (3, 3)),
    (lambda: nn.LSTMCell(3, 4), (2, 3)),
    (lambda: nn.GRUCell(3, 4), (2, 3)),
], ids=["lstm_proj", "lstm", "lstm_batch_first_nobias", "gru", "rnn", "lstmcell", "grucell"])
def test_recurrent_layer_on_cuda_matches_cpu(make, shape):
    ng.manual_seed(0)
    cpu = make()
    gpu = copy.deepcopy(cpu).cuda()
    x = ng.randn(*shape)
    xs = (x.clone().requires_grad_(), x.cuda().requires_grad_())
    results = []
    for m, xi in zip((cpu, gpu), xs):
        outs = _outputs(m(xi))
        sum((o * o).sum() for o in outs).backward()
        results.append(outs)
    for a, b in zip(results[1], results[0]):
        assert a.device == ng.device("cuda", 0)
        _close(a, b)
    _close(xs[1].grad, xs[0].grad)
    for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
        assert pg.device == ng.device("cuda", 0), name
        _close(pg.grad, pc.grad)
