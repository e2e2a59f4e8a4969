"""CUDA kernels for ``embedding_bag``, one thread per bag, weight column or position, from
the CPU's functions (``numgrad.kernels.embedding_bag``)."""

from numba import cuda

from numgrad.kernels import embedding_bag as E
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any


def _bags(w, wo, idx, io, psw, po, starts, ends, out, oo, arg, ao, cnt, co, bags, dim, pad,
          mode, has_psw):
    for b in range(cuda.grid(1), bags, cuda.gridsize(1)):
        f(w, wo, idx, io, psw, po, starts, ends, out, oo, arg, ao, cnt, co, b, dim,  # noqa: F821
          pad, mode, has_psw)


def _cols(g, go, idx, io, psw, po, starts, ends, arg, ao, cnt, co, gw, gwo, bags, dim, pad,
          mode, has_psw):
    for d in range(cuda.grid(1), dim, cuda.gridsize(1)):
        f(g, go, idx, io, psw, po, starts, ends, arg, ao, cnt, co, gw, gwo, d, bags,  # noqa: F821
          dim, pad, mode, has_psw)


def _positions(g, go, w, wo, idx, io, pos_bag, gp, gpo, n, dim, pad):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        f(g, go, w, wo, idx, io, pos_bag, gp, gpo, i, dim, pad)  # noqa: F821


_K = {}


def _kernel(name):
    k = _K.get(name)
    if k is None:
        template, fn = {"embedding_bag": (_bags, E.bag_forward),
                        "embedding_bag_weight_grad": (_cols, E.bag_weight_grad),
                        "embedding_bag_psw_grad": (_positions, E.bag_psw_grad)}[name]
        k = _K[name] = _launch.kernel(template, name, f=_launch.device_fn(fn, name + "_fn"))
    return k


def _host_int(a):
    return cuda.to_device(a)


def bag_forward(w, idx, psw, starts, ends, out, arg, cnt, pad, mode, has_psw):
    w, idx, psw, out, arg, cnt = (from_any(a) for a in (w, idx, psw, out, arg, cnt))
    bags, dim = out.shape
    _launch.launch(_kernel("embedding_bag"), bags, w.buf, w.offset, idx.buf, idx.offset,
                   psw.buf, psw.offset, _host_int(starts), _host_int(ends), out.buf, out.offset,
                   arg.buf, arg.offset, cnt.buf, cnt.offset, bags, dim, int(pad), int(mode),
                   bool(has_psw))


def bag_weight_grad(g, idx, psw, starts, ends, arg, cnt, gw, pad, mode, has_psw):
    g, idx, psw, arg, cnt, gw = (from_any(a) for a in (g, idx, psw, arg, cnt, gw))
    bags, dim = g.shape
    _launch.launch(_kernel("embedding_bag_weight_grad"), dim, g.buf, g.offset, idx.buf,
                   idx.offset, psw.buf, psw.offset, _host_int(starts), _host_int(ends), arg.buf,
                   arg.offset, cnt.buf, cnt.offset, gw.buf, gw.offset, bags, dim, int(pad),
                   int(mode), bool(has_psw))


def bag_psw_grad(g, w, idx, pos_bag, gp, pad):
    g, w, idx, gp = (from_any(a) for a in (g, w, idx, gp))
    _launch.launch(_kernel("embedding_bag_psw_grad"), gp.shape[0], g.buf, g.offset, w.buf,
                   w.offset, idx.buf, idx.offset, _host_int(pos_bag), gp.buf, gp.offset,
                   gp.shape[0], w.shape[1], int(pad))
