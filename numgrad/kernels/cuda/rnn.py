"""LSTM layers on the GPU: the twin of ``numgrad.kernels.cpu.rnn`` (same launchers, same
arguments).

The cell formulas are written once for both devices (``numgrad.kernels.lstm``: the gates'
pre-activations, ``lstm_cell``, ``lstm_cell_backward``), bound here as device functions; one
step of the gate math is one kernel with a thread per (batch row, hidden unit).
The loop over the steps is the CPU's Python loop (``forward_loop``/``backward_loop``), with
numgrad's GPU matrix products: a kernel cannot launch the tiled matmul from inside, so unlike
on the CPU the steps are not one compiled loop. Arrays are flat buffers addressed as on the
CPU; each one's own offset in its device buffer is added here.
"""

from numba import cuda

from numgrad.kernels import lstm as L
from numgrad.kernels.cpu import _fastmath
from numgrad.kernels.cpu import rnn as R
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray


def _helpers():
    """The cell's GPU helpers: libdevice math and the GPU's fused multiply-add (the
    simulator's: the CPU formula)."""
    h = dict(_launch._DEVICE_MATH)
    h.setdefault("ffma", _fastmath.ffma)
    return h


# the cell formulas as device functions (module attributes ``<name>_dev``)
_D = _launch.bind(L, L.CELL_FUNCTIONS, _helpers(), __name__)


def _forward_cells(xw, xo, ldx, b_ih, bio, b_hh, bho, r, ro, ldr, gs, hp, hpo, ldhp, cp, cpo, cs,
                   cso, tcs, tco, out, oo, hprev, hvo, ldo, last, hn, hno, cn, cno, n_rows, j0,
                   nj, n):
    for k in range(cuda.grid(1), n_rows * nj, cuda.gridsize(1)):
        b = k // nj
        j = j0 + k % nj
        x = xo + b * ldx + j
        q = ro + b * ldr + j - j0
        vi, vf, vg, vo, vc, vt, vh = f(  # noqa: F821
            gate(xw[x], b_ih[bio + j], b_hh[bho + j], r[q]),  # noqa: F821
            gate(xw[x + n], b_ih[bio + n + j], b_hh[bho + n + j], r[q + gs]),  # noqa: F821
            gate(xw[x + 2 * n], b_ih[bio + 2 * n + j], b_hh[bho + 2 * n + j],  # noqa: F821
                 r[q + 2 * gs]),
            gate(xw[x + 3 * n], b_ih[bio + 3 * n + j], b_hh[bho + 3 * n + j],  # noqa: F821
                 r[q + 3 * gs]),
            cp[cpo + b * n + j])
        xw[x] = vi
        xw[x + n] = vf
        xw[x + 2 * n] = vg
        xw[x + 3 * n] = vo
        cs[cso + b * n + j] = vc
        tcs[tco + b * n + j] = vt
        out[oo + b * ldo + j] = vh
        hprev[hvo + b * ldo + j] = hp[hpo + b * ldhp + j]
        if last:
            hn[hno + b * n + j] = vh
            cn[cno + b * n + j] = vc


def _backward_cells(dout, doo, ldo, dh_in, dho, dc_in, dci, dc, dco, act, ao, ldg, tcs, tco,
                    cp, cpo, dg, go, n_b, n):
    for k in range(cuda.grid(1), n_b * n, cuda.gridsize(1)):
        b = k // n
        j = k % n
        a = ao + b * ldg + j
        vi, vf, vg, vo, vc = f(dout[doo + b * ldo + j] + dh_in[dho + b * n + j],  # noqa: F821
                               dc_in[dci + b * n + j], act[a], act[a + n], act[a + 2 * n],
                               act[a + 3 * n], cp[cpo + b * n + j], tcs[tco + b * n + j])
        g = go + b * ldg + j
        dg[g] = vi
        dg[g + n] = vf
        dg[g + 2 * n] = vg
        dg[g + 3 * n] = vo
        dc[dco + b * n + j] = vc


_K = {}


def _kernel(name):
    k = _K.get(name)
    if k is None:
        template, cell = {"forward": (_forward_cells, "lstm_cell"),
                          "backward": (_backward_cells, "lstm_cell_backward")}[name]
        k = _K[name] = _launch.kernel(template, "lstm_" + name, f=_D[cell], gate=_D["gate"])
    return k


def step_forward(xw, xo, ldx, b_ih, b_hh, r, ro, ldr, gs, hp, hpo, ldhp, cp, cpo, cs, tcs, co,
                 out, hprev, oo, ldo, last, hn, cn, hno, n_rows, j0, nj, n):
    """``numgrad.kernels.cpu.rnn._forward_step`` on the GPU (flat CudaArray views)."""
    _launch.launch(_kernel("forward"), n_rows * nj, xw.buf, xw.offset + xo, ldx, b_ih.buf,
                   b_ih.offset, b_hh.buf, b_hh.offset, r.buf, r.offset + ro, ldr, gs, hp.buf,
                   hp.offset + hpo, ldhp, cp.buf, cp.offset + cpo, cs.buf, cs.offset + co,
                   tcs.buf, tcs.offset + co, out.buf, out.offset + oo, hprev.buf,
                   hprev.offset + oo, ldo, bool(last), hn.buf, hn.offset + hno, cn.buf,
                   cn.offset + hno, n_rows, j0, nj, n)


def step_backward(dout, doo, ldo, dh_in, dc_in, dc, act, go, ldg, tcs, co, cp, cpo, dg, db,
                  sum_b, n_b, n):
    """``numgrad.kernels.cpu.rnn._backward_step`` on the GPU (flat CudaArray views); the
    biases' sums are not made here (``sum_b`` must be False)."""
    assert not sum_b
    _launch.launch(_kernel("backward"), n_b * n, dout.buf, dout.offset + doo, ldo, dh_in.buf,
                   dh_in.offset, dc_in.buf, dc_in.offset, dc.buf, dc.offset, act.buf,
                   act.offset + go, ldg, tcs.buf, tcs.offset + co, cp.buf, cp.offset + cpo,
                   dg.buf, dg.offset + go, n_b, n)


def _c(a):
    return a if a.flags.c_contiguous else a.contiguous()


def lstm_forward(x, w_ih, b_ih, b_hh, w_hh, h0, c0, batch_first, reverse):
    """``numgrad.kernels.cpu.rnn.lstm_forward`` on the GPU."""
    x, w_ih, w_hh, h0, c0 = (_c(a) for a in (x, w_ih, w_hh, h0, c0))
    n_t, n_b = (x.shape[1], x.shape[0]) if batch_first else x.shape[:2]
    n, dt = w_hh.shape[1], x.dtype
    if b_ih is None:
        b_ih = b_hh = CudaArray.full((4 * n,), 0, dt)
    b_ih, b_hh = _c(b_ih), _c(b_hh)
    xw = CudaArray.empty(x.shape[:2] + (4 * n,), dt)
    out = CudaArray.empty(x.shape[:2] + (n,), dt)
    hprev = CudaArray.empty(out.shape, dt)
    cs = CudaArray.empty((n_t * n_b * n,), dt)
    tcs = CudaArray.empty((n_t * n_b * n,), dt)
    hn = CudaArray.empty((n_b, n), dt)
    cn = CudaArray.empty((n_b, n), dt)
    R.forward_loop(step_forward, x, w_ih, b_ih, b_hh, w_hh, h0, c0, xw, out, hprev, cs, tcs,
                   hn, cn, batch_first, reverse)
    return out, hn, cn, (xw, hprev, cs, tcs)


def lstm_backward(dout, dhn, dcn, x, w_ih, w_hh, c0, saved, batch_first, reverse, needs):
    """``numgrad.kernels.cpu.rnn.lstm_backward`` on the GPU."""
    dout, dhn, dcn, x, w_ih, w_hh, c0 = (_c(a) for a in (dout, dhn, dcn, x, w_ih, w_hh, c0))
    act, hprev, cs, tcs = saved
    n_b = dout.shape[0] if batch_first else dout.shape[1]
    n, dt = w_hh.shape[1], dout.dtype
    need_x, need_h0, _, need_wih, need_w, need_b = (bool(v) for v in needs)
    dg = CudaArray.empty(act.shape, dt)
    dc0 = CudaArray.empty((n_b, n), dt)
    dx = CudaArray.empty(x.shape, dt) if need_x else None
    dh0 = CudaArray.empty((n_b, n), dt) if need_h0 else None
    dw_ih = CudaArray.empty(w_ih.shape, dt) if need_wih else None
    dw = CudaArray.empty(w_hh.shape, dt) if need_w else None
    db = CudaArray.empty((4 * n,), dt) if need_b else None
    R.backward_loop(step_backward, dout, dhn, dcn, x, w_ih, w_hh, c0, act, cs, tcs, hprev, dg,
                    dx, dh0, dc0, dw_ih, dw, db, batch_first, reverse, need_x, need_h0,
                    need_wih, need_w, need_b)
    return dx, dh0, dc0, dw_ih, dw, db
