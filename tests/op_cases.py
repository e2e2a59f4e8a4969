"""The op table shared by the CPU tests (``test_ops.py``) and the CUDA tests
(``cuda/test_ops_cuda.py``).

Each case is ``(id, fn(m, *inputs), ref(*arrays), input makers)``; ``m`` is ``numgrad`` or
``torch``, so the same code runs under both libraries (and on either device).
"""

import math

import numpy as np


def U(*shape, lo=-1.0, hi=1.0):
    """Uniform values on [lo, hi)."""
    return lambda rng: rng.uniform(lo, hi, size=shape)


def POS(*shape):
    return U(*shape, lo=0.5, hi=2.0)


def AWAY(*shape):
    """Values away from 0 (for kinks and divisions): |x| in [0.3, 1.5]."""
    def make(rng):
        v = rng.uniform(0.3, 1.5, size=shape)
        return v * rng.choice([-1.0, 1.0], size=shape)
    return make


def DISTINCT(*shape):
    """Distinct values (no ties for max/min)."""
    def make(rng):
        n = int(np.prod(shape)) if shape else 1
        return (rng.permutation(n) / n - 0.5 + rng.uniform(0, 0.1 / n, n)).reshape(shape)
    return make


def _put_along(a, idx, v):
    out = a.copy()
    np.put_along_axis(out, idx, v, 1)
    return out


def _add_along(a, idx):
    out = a.copy()
    for r, row in enumerate(idx):
        for j in row:
            out[r, j] += 1
    return out


def _vectorized(fn):
    return lambda a: np.vectorize(fn, otypes=[np.float64])(a)


def _var(a, dim=None, correction=1, keepdim=False):
    n = a.size if dim is None else a.shape[dim]
    dev = a - a.mean(axis=dim, keepdims=True)
    return (dev * dev).sum(axis=dim, keepdims=keepdim) / (n - correction)


def _resize(n_in, n_out, kind):
    """The (n_out, n_in) matrix of a 1-D resize: 'linear'/'cubic' with align_corners=True
    (Keys' cubic, A = -0.75, taps clamped to the border), 'aa-linear'/'aa-cubic' as PIL's
    antialiased filters (A = -0.5), widened by the scale when downsampling."""
    m = np.zeros((n_out, n_in))
    for k in range(n_out):
        if kind.startswith("aa"):
            s = n_in / n_out
            support = (1.0 if kind == "aa-linear" else 2.0) * max(s, 1.0)
            c = s * (k + 0.5)
            lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n_in)
            x = np.abs((np.arange(lo, hi) - c + 0.5) / max(s, 1.0))
            if kind == "aa-linear":
                w = np.maximum(1 - x, 0)
            else:
                w = np.where(x < 1, (1.5 * x - 2.5) * x * x + 1,
                             np.where(x < 2, ((-0.5 * x + 2.5) * x - 4) * x + 2, 0))
            m[k, lo:hi] = w / w.sum()
            continue
        src = k * (n_in - 1) / (n_out - 1)
        i = min(int(np.floor(src)), n_in - 1)
        t = src - i
        if kind == "linear":
            m[k, i] += 1 - t
            m[k, min(i + 1, n_in - 1)] += t
            continue
        for j, d in zip(range(i - 1, i + 3), (1 + t, t, 1 - t, 2 - t)):
            w = ((1.25 * d - 2.25) * d * d + 1 if d <= 1
                 else ((-0.75 * d + 3.75) * d - 6) * d + 3)
            m[k, min(max(j, 0), n_in - 1)] += w
    return m


def _resize2d(a, size, kind):
    return np.einsum("hi,ncij,wj->nchw", _resize(a.shape[2], size[0], kind), a,
                     _resize(a.shape[3], size[1], kind))


def _pad_np(a, widths, mode):
    """PyTorch's pad widths (last dim first) as np.pad's; a negative width crops."""
    pairs = [(0, 0)] * a.ndim
    crop = [slice(None)] * a.ndim
    for i in range(len(widths) // 2):
        lo, hi = widths[2 * i], widths[2 * i + 1]
        pairs[a.ndim - 1 - i] = (max(lo, 0), max(hi, 0))
        crop[a.ndim - 1 - i] = slice(max(-lo, 0), a.shape[a.ndim - 1 - i] + max(lo, 0)
                                     + max(hi, 0) - max(-hi, 0))
    return np.pad(a, pairs, mode=mode)[tuple(crop)]


def _nearest_idx(n_in, n_out, scale=None):
    """PyTorch's nearest source index of each output position: floor(j * s) in float32, s
    the inverse of the given scale factor, else n_in / n_out."""
    s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
    return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * s).astype(int), n_in - 1)


def _linear_half(n_in, n_out, scale=None):
    """The (n_out, n_in) matrix of a 1-D linear resize with align_corners=False: source
    (j + 0.5) * s - 0.5, clamped at 0 (s as in ``_nearest_idx``)."""
    s = 1.0 / scale if scale else n_in / n_out
    m = np.zeros((n_out, n_in))
    for j in range(n_out):
        src = max((j + 0.5) * s - 0.5, 0.0)
        i = min(int(src), n_in - 1)
        t = src - i
        m[j, i] += 1 - t
        m[j, min(i + 1, n_in - 1)] += t
    return m


def _resize_nd(a, mats):
    """``a`` (N, C, *spatial) resized along each spatial dim by its (n_out, n_in) matrix."""
    for k, m in enumerate(mats):
        a = np.moveaxis(np.moveaxis(a, 2 + k, -1) @ m.T, -1, 2 + k)
    return a


def _two(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_t2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """A transposed 2-D convolution by its definition: every input pixel scatters its kernel
    (weight (Cin, Cout/groups, kh, kw)) into the output at stride, less the padding (each
    parameter a number or a (height, width) pair)."""
    (sh, sw), (ph, pw), (oh, ow), (dh, dw) = map(_two, (stride, padding, output_padding,
                                                        dilation))
    n, cin, h, wd = x.shape
    cg, kh, kw = w.shape[1:]
    ho = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oh + 1
    wo = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + ow + 1
    full = np.zeros((n, cg * groups, ho + 2 * ph, wo + 2 * pw))
    per = cin // groups
    for ci in range(cin):
        g = ci // per
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + (h - 1) * sh + 1, sh)
                cols = slice(j * dw, j * dw + (wd - 1) * sw + 1, sw)
                full[:, g * cg:(g + 1) * cg, rows, cols] += (
                    x[:, ci, None] * w[ci, :, i, j][None, :, None, None])
    out = full[:, :, ph:ph + ho, pw:pw + wo]
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _conv_t1d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed 1-D convolution as a 2-D one of height 1 (unbatched ``x`` too)."""
    xb = x[:, :, None] if x.ndim == 3 else x[None, :, None]
    out = _conv_t2d(xb, w[:, :, None], b, (1, stride), (0, padding), (0, output_padding),
                    groups, (1, dilation))[:, :, 0]
    return out if x.ndim == 3 else out[0]


def _conv1d_np(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """A 1-D convolution as a 2-D one of height 1; ``padding`` 'same' pads the left with half
    of dilation * (k - 1), the right with the rest."""
    if padding == "same":
        total = dilation * (w.shape[-1] - 1)
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(total // 2, total - total // 2)])
        padding = 0
    xb = x[:, :, None] if x.ndim == 3 else x[None, :, None]
    out = _conv2d_np(xb, w[:, :, None], b, groups, s=(1, stride), p=(0, padding),
                     d=(1, dilation))[:, :, 0]
    return out if x.ndim == 3 else out[0]


def _windows_np(a, k, s=(1, 1), p=(0, 0), d=(1, 1), fill=0.0):
    """(N, C, kh, kw, oh, ow): every window element of the padded (N, C, H, W) array."""
    n, c, h, w = a.shape
    full = np.full((n, c, h + 2 * p[0], w + 2 * p[1]), fill)
    full[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = a
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    return np.stack([np.stack([full[:, :, i * d[0]:i * d[0] + (oh - 1) * s[0] + 1:s[0],
                                    j * d[1]:j * d[1] + (ow - 1) * s[1] + 1:s[1]]
                               for j in range(k[1])], 2) for i in range(k[0])], 2)


def _conv2d_np(x, w, b=None, groups=1, **geo):
    """A 2-D convolution by its definition: each output the weight's dot with its window."""
    win = _windows_np(x, w.shape[2:], **geo)
    n, c = x.shape[:2]
    win = win.reshape(n, groups, c // groups, *win.shape[2:])
    out = np.einsum("ngcijyx,gocij->ngoyx", win, w.reshape(groups, -1, *w.shape[1:]))
    out = out.reshape(n, -1, *out.shape[3:])
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _pool1d_np(a, k, s, p=0, d=1, ceil=False, kind="max", include_pad=True):
    """A 1-D max or average pool by its definition (PyTorch's output size and divisor)."""
    n_in = a.shape[-1]
    n = (n_in + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (n - 1) * s >= n_in + p:  # the last window must start inside
        n -= 1
    out = []
    for j in range(n):
        start = j * s - p
        inside = [start + i * d for i in range(k) if 0 <= start + i * d < n_in]
        if kind == "max":
            out.append(a[..., inside].max(-1))
        else:
            div = min(start + k, n_in + p) - start if include_pad else len(inside)
            out.append(a[..., inside].sum(-1) / div)
    return np.stack(out, -1)


def _fold_np(cols, size, k):
    """F.fold (stride 1, no padding): each column's window added into the image."""
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    oh, ow = size[0] - k[0] + 1, size[1] - k[1] + 1
    img = np.zeros((n, c) + tuple(size))
    cols = cols.reshape(n, c, k[0], k[1], oh, ow)
    for i in range(k[0]):
        for j in range(k[1]):
            img[:, :, i:i + oh, j:j + ow] += cols[:, :, i, j]
    return img


_LSTM_W = [np.random.default_rng(5).uniform(-0.6, 0.6, s) for s in ((8, 3), (8, 2), (8,), (8,))]


def _lstm_layer(m, x):
    """An LSTM(3, 2) with fixed weights (not differentiated) over (T, B, 3) input ``x``."""
    mod = m.nn.LSTM(3, 2).to(device=x.device, dtype=x.dtype)
    with m.no_grad():
        for p, a in zip(mod.parameters(), _LSTM_W):
            p.copy_(m.tensor(a, dtype=x.dtype, device=x.device))
            p.requires_grad_(False)
    return mod(x)[0]


def _lstm_np(x):
    w_ih, w_hh, b_ih, b_hh = _LSTM_W
    h = c = np.zeros((x.shape[1], 2))
    outs = []
    for t in range(x.shape[0]):
        z = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, o = (1 / (1 + np.exp(-z[:, k:k + 2])) for k in (0, 2, 6))
        c = f * c + i * np.tanh(z[:, 4:6])
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs)


def _steps(m, a):
    """``a``'s rows as one node (the recurrent layers' ``_unbind_steps``; PyTorch's unbind)."""
    if m.__name__ == "torch":
        return m.unbind(a, 0)
    return m.ops.recurrent._unbind_steps(a, 0)


_BAG_IDX = [1, 2, 0, 3, 2]  # embedding_bag rows: bags [1, 2] and [0, 3, 2]


def _group_norm(a, groups, w, b, eps=1e-5):
    rows = a.reshape(a.shape[0], groups, -1)
    y = (rows - rows.mean(-1, keepdims=True)) / np.sqrt(rows.var(-1, keepdims=True) + eps)
    view = (1, -1) + (1,) * (a.ndim - 2)
    return y.reshape(a.shape) * w.reshape(view) + b.reshape(view)


_T2D = [[[0, 2], [1, 2]], [[2, 1], [0, 0]]]  # nll2d targets of a (2, 3, 2, 2) input
_W3 = [0.5, 2.0, 1.5]


def _batch_norm(a, mean, var, w, b, eps=1e-5):
    """Batch norm of (N, C, L) by the given per-channel (C, 1) statistics."""
    w, b = (np.reshape(v, (-1, 1)) if np.ndim(v) else v for v in (w, b))
    return (a - mean) / np.sqrt(var + eps) * w + b


def _layer_norm(a, dims, w, b, eps=1e-5):
    axes = tuple(range(a.ndim - dims, a.ndim))
    d = a - a.mean(axes, keepdims=True)
    return d / np.sqrt((d * d).mean(axes, keepdims=True) + eps) * w + b


def _softmax(x, d):
    e = np.exp(x - x.max(axis=d, keepdims=True))
    return e / e.sum(axis=d, keepdims=True)


def _sdpa_np(q, k, v, causal=False, scale=None, gqa=False):
    """softmax(q k^T * scale (+ -inf above the diagonal when causal)) v; with ``gqa`` each
    key/value head serves its group of query heads."""
    if gqa:
        k, v = (np.repeat(t, q.shape[-3] // t.shape[-3], -3) for t in (k, v))
    s = q @ k.swapaxes(-1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), 1)
    return _softmax(s, -1) @ v


def _sdpa_masks():
    """Attention masks: (4, 5) bool with a row that sees no key and one that sees 3 of 5;
    (2, 1, 4, 5) float with -inf and 0.5 entries; (2, 3, 4, 5) bool drawn at rate 0.7."""
    b = np.ones((4, 5), bool)
    b[1] = False
    b[2, :2] = False
    f = np.zeros((2, 1, 4, 5))
    f[0, 0, 3] = -np.inf
    f[1, 0, :, 1] = -np.inf
    f[:, 0, 0, 2] = 0.5
    return b, f, np.random.default_rng(3).uniform(size=(2, 3, 4, 5)) > 0.3, b[None].repeat(3, 0)


SDPA_BOOL2, SDPA_FLOAT4, SDPA_BOOL4, SDPA_BOOL3 = _sdpa_masks()


def _sdpa(mask=None, **kw):
    """scaled_dot_product_attention(q, k, v, mask, **kw), the mask made by the library ``m``
    on q's device (a float mask in q's dtype)."""
    def call(m, q, k, v):
        if mask is not None:
            dt = q.dtype if mask.dtype.kind == "f" else None
            kw["attn_mask"] = m.tensor(mask, dtype=dt, device=q.device)
        return m.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    return call


def _sdpa_masked_np(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(E) + mask) v, where a bool mask keeps its True entries (-inf
    elsewhere); a row that sees no key gives 0, as PyTorch's CPU attention does."""
    if k.shape[-2] == 0:
        return np.zeros(np.broadcast_shapes(q.shape[:-1], v.shape[:-2] + (1,)) + v.shape[-1:])
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), 1)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0))
    d = e.sum(-1, keepdims=True)
    return np.where(d > 0, e / np.where(d > 0, d, 1), 0) @ v


def _sdpa_ref(mask=None, causal=False):
    return lambda q, k, v: _sdpa_masked_np(q, k, v, mask, causal)


_QKV = [U(2, 3, 4, 8), U(2, 3, 5, 8), U(2, 3, 5, 8)]


def _lse(x, d):
    m = x.max(axis=d, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=d, keepdims=True))).squeeze(d)


def GAMMA(*shape):
    """Values on [0.2, 3), every other one moved to (-0.8, -0.2): both sides of lgamma's
    reflection, away from its poles."""
    def make(rng):
        v = rng.uniform(0.2, 3.0, size=shape)
        flip = np.arange(v.size).reshape(shape) % 2 == 1
        return np.where(flip, -0.2 - 0.6 * v / 3.0, v)
    return make


def _polygamma_np(n, x):
    """psi (n = 0) or psi'' (n = 2): the recurrence up to x + 30, then the asymptotic series
    (a reference independent of numgrad's kernels, which shift to 10)."""
    y = x + 30.0
    if n == 0:
        head = -sum(1.0 / (x + k) for k in range(30))
        return head + np.log(y) - 1 / (2 * y) - 1 / (12 * y**2) + 1 / (120 * y**4) - 1 / (
            252 * y**6)
    head = -2.0 * sum(1.0 / (x + k) ** 3 for k in range(30))
    return head - 1 / y**2 - 1 / y**3 - 1 / (2 * y**4) + 1 / (6 * y**6) - 1 / (6 * y**8)


_NONFINITE = np.array([0.0, np.inf, -np.inf, np.nan])
_SIGNS = np.array([[1.0, -1.0, -1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0]])


def _multi_margin(a, t, margin):
    """mean over rows of sum_{i != y} max(0, margin - a_y + a_i)^2 / C."""
    z = np.maximum(margin - a[np.arange(len(t)), t][:, None] + a, 0) ** 2
    z[np.arange(len(t)), t] = 0
    return np.mean(z.sum(1) / a.shape[1])


def _multilabel_margin(a, targets):
    """mean over rows of sum over targets j, non-targets i of max(0, 1 - a_j + a_i) / C."""
    rows = []
    for n, ts in enumerate(targets):
        others = [i for i in range(a.shape[1]) if i not in ts]
        rows.append(sum(max(0.0, 1 - a[n, j] + a[n, i]) for j in ts for i in others))
    return np.mean(np.array(rows) / a.shape[1])


CASES = [
    # --- arithmetic with broadcasting and numbers on either side
    ("add", lambda m, a, b: a + b, lambda a, b: a + b, [U(3, 4), U(3, 4)]),
    ("add_bcast", lambda m, a, b: a + b, lambda a, b: a + b, [U(2, 3, 4), U(4)]),
    ("add_bcast2", lambda m, a, b: a + b, lambda a, b: a + b, [U(3, 1), U(1, 4)]),
    ("add_scalar", lambda m, a: a + 2, lambda a: a + 2, [U(3, 4)]),
    ("radd_scalar", lambda m, a: 2.5 + a, lambda a: 2.5 + a, [U(3, 4)]),
    ("add_alpha", lambda m, a, b: m.add(a, b, alpha=3), lambda a, b: a + 3 * b, [U(3), U(3)]),
    ("sub", lambda m, a, b: a - b, lambda a, b: a - b, [U(3, 4), U(4)]),
    ("sub_alpha", lambda m, a, b: m.sub(a, b, alpha=2), lambda a, b: a - 2 * b, [U(3), U(3)]),
    ("rsub_scalar", lambda m, a: 2 - a, lambda a: 2 - a, [U(3, 4)]),
    ("mul", lambda m, a, b: a * b, lambda a, b: a * b, [U(3, 4), U(3, 4)]),
    ("mul_bcast", lambda m, a, b: a * b, lambda a, b: a * b, [U(5, 1, 3), U(4, 1)]),
    ("mul_scalar", lambda m, a: a * 3, lambda a: a * 3, [U(3, 4)]),
    ("div", lambda m, a, b: a / b, lambda a, b: a / b, [U(3, 4), AWAY(3, 4)]),
    ("div_bcast", lambda m, a, b: a / b, lambda a, b: a / b, [U(2, 3), AWAY(3)]),
    ("div_scalar", lambda m, a: a / 4, lambda a: a / 4, [U(3, 4)]),
    ("rdiv_scalar", lambda m, a: 2 / a, lambda a: 2 / a, [AWAY(3, 4)]),
    ("pow2", lambda m, a: a ** 2, lambda a: a ** 2, [U(3, 4)]),
    ("pow3", lambda m, a: a ** 3, lambda a: a ** 3, [U(3, 4)]),
    ("pow_half", lambda m, a: a ** 0.5, lambda a: a ** 0.5, [POS(3, 4)]),
    ("pow_neg1", lambda m, a: a ** -1, lambda a: a ** -1.0, [AWAY(3, 4)]),
    ("pow_2_5", lambda m, a: a ** 2.5, lambda a: a ** 2.5, [POS(3, 4)]),
    ("pow_tensor", lambda m, a, b: a ** b, lambda a, b: a ** b, [POS(3, 4), U(3, 4)]),
    ("pow_tensor_bcast", lambda m, a, b: m.pow(a, b), lambda a, b: a ** b, [POS(3, 4), U(4)]),
    ("rpow", lambda m, a: 2 ** a, lambda a: 2.0 ** a, [U(3, 4)]),
    ("rsub", lambda m, a, b: m.rsub(a, b, alpha=2), lambda a, b: b - 2 * a, [U(3, 4), U(4)]),
    ("remainder", lambda m, a, b: a % b, np.mod, [U(3, 4), AWAY(3, 4)]),
    ("fmod", lambda m, a, b: m.fmod(a, b), np.fmod, [U(3, 4), AWAY(4)]),
    ("hypot", lambda m, a, b: m.hypot(a, b), np.hypot, [AWAY(3, 4), U(3, 4)]),
    ("atan2", lambda m, a, b: m.atan2(a, b), np.arctan2, [U(3, 4), AWAY(4)]),
    ("copysign", lambda m, a, b: m.copysign(a, b), np.copysign, [AWAY(3, 4), AWAY(3, 4)]),
    ("copysign_scalar", lambda m, a: a.copysign(-0.0), lambda a: np.copysign(a, -0.0),
     [AWAY(3, 4)]),
    ("square", lambda m, a: m.square(a), lambda a: a * a, [U(3, 4)]),
    ("reciprocal", lambda m, a: m.reciprocal(a), lambda a: 1 / a, [AWAY(3, 4)]),
    # --- unary
    ("neg", lambda m, a: -a, lambda a: -a, [U(3, 4)]),
    ("abs", lambda m, a: a.abs(), np.abs, [AWAY(3, 4)]),
    ("exp", lambda m, a: m.exp(a), np.exp, [U(3, 4)]),
    ("log", lambda m, a: m.log(a), np.log, [POS(3, 4)]),
    ("sqrt", lambda m, a: a.sqrt(), np.sqrt, [POS(3, 4)]),
    ("sin", lambda m, a: m.sin(a), np.sin, [U(3, 4)]),
    ("cos", lambda m, a: a.cos(), np.cos, [U(3, 4)]),
    ("tanh", lambda m, a: m.tanh(a), np.tanh, [U(3, 4, lo=-3, hi=3)]),
    ("softplus", lambda m, a: m.nn.functional.softplus(a, 2, 1.5),
     lambda a: np.where(2 * a > 1.5, a, np.log1p(np.exp(2 * a)) / 2), [U(3, 4, lo=-2, hi=2)]),
    ("sigmoid", lambda m, a: m.sigmoid(a), lambda a: 1 / (1 + np.exp(-a)), [U(3, 4, lo=-5, hi=5)]),
    ("relu", lambda m, a: m.relu(a), lambda a: np.maximum(a, 0), [AWAY(3, 4)]),
    # --- nn ops declared in numgrad/ops (gelu.py, norms.py, nn_losses.py, embedding.py)
    ("gelu", lambda m, a: m.nn.functional.gelu(a),
     _vectorized(lambda v: v * (1 + math.erf(v / math.sqrt(2))) / 2), [U(3, 4, lo=-3, hi=3)]),
    ("gelu_tanh", lambda m, a: m.nn.functional.gelu(a, approximate="tanh"),
     lambda a: a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))) / 2,
     [U(3, 4, lo=-3, hi=3)]),
    ("native_layer_norm", lambda m, a, w, b: m.nn.functional.layer_norm(a, (4,), w, b),
     lambda a, w, b: _layer_norm(a, 1, w, b), [U(2, 3, 4), U(4), U(4)]),
    ("native_layer_norm_2d", lambda m, a: m.nn.functional.layer_norm(a, (3, 2), eps=0.1),
     lambda a: _layer_norm(a, 2, 1.0, 0.0, 0.1), [U(2, 3, 2)]),
    ("mse_loss", lambda m, a, b: m.nn.functional.mse_loss(a, b),
     lambda a, b: np.mean((a - b) ** 2), [U(3, 4), U(3, 4)]),
    ("mse_loss_none", lambda m, a, b: m.nn.functional.mse_loss(a, b.expand(3, 4), reduction="none"),
     lambda a, b: (a - b) ** 2, [U(3, 4), U(4)]),
    # nll on a leaf: its first derivative is nll_loss_backward (recorded: self needs grad)
    ("nll_loss_forward", lambda m, a: m.nn.functional.nll_loss(
        a, m.tensor([1, 0, 3], device=a.device)), lambda a: -a[[0, 1, 2], [1, 0, 3]].mean(),
     [U(3, 4)]),
    ("nll_loss_forward_cross_entropy", lambda m, a: m.nn.functional.cross_entropy(
        a, m.tensor([2, 0, 3], device=a.device), reduction="sum"),
     lambda a: _lse(a, 1).sum() - a[[0, 1, 2], [2, 0, 3]].sum(), [U(3, 4)]),
    ("nll_loss2d_forward", lambda m, a: m.nn.functional.nll_loss(
        a, m.tensor(_T2D, device=a.device), m.tensor(_W3, dtype=a.dtype, device=a.device),
        ignore_index=1, reduction="none"),
     lambda a: np.where(np.array(_T2D) == 1, 0.0, -np.take_along_axis(
         a, np.array(_T2D)[:, None], 1)[:, 0] * np.array(_W3)[_T2D]), [U(2, 3, 2, 2)]),
    ("binary_cross_entropy", lambda m, a, t: m.nn.functional.binary_cross_entropy(a, t),
     lambda a, t: -np.mean(t * np.log(a) + (1 - t) * np.log1p(-a)),
     [U(3, 4, lo=0.1, hi=0.9), U(3, 4, lo=0.0, hi=1.0)]),
    ("binary_cross_entropy_with_logits", lambda m, a, t:
     m.nn.functional.binary_cross_entropy_with_logits(
         a, t, pos_weight=m.tensor(_W3[:1] * 4, dtype=a.dtype, device=a.device), reduction="sum"),
     lambda a, t: np.sum(0.5 * t * np.logaddexp(0, -a) + (1 - t) * np.logaddexp(0, a)),
     [U(3, 4, lo=-3, hi=3), U(3, 4, lo=0.0, hi=1.0)]),
    ("native_batch_norm", lambda m, a, w, b: m.nn.functional.batch_norm(
        a, None, None, w, b, training=True, eps=0.1),
     lambda a, w, b: _batch_norm(a, a.mean((0, 2), keepdims=True),
                                 a.var((0, 2), keepdims=True), w, b, 0.1),
     [U(4, 3, 2), U(3), U(3)]),
    # squared: the first derivatives are the backward ops of a gradient that needs grad
    ("native_batch_norm_squared", lambda m, a, w, b: m.nn.functional.batch_norm(
        a, None, None, w, b, training=True) ** 2,
     lambda a, w, b: _batch_norm(a, a.mean((0, 2), keepdims=True),
                                 a.var((0, 2), keepdims=True), w, b) ** 2,
     [U(4, 3, 2), U(3), U(3)]),
    ("native_batch_norm_eval", lambda m, a, w: m.nn.functional.batch_norm(
        a, m.tensor(_W3, dtype=a.dtype, device=a.device) - 1,
        m.tensor(_W3, dtype=a.dtype, device=a.device), w) ** 2,
     lambda a, w: _batch_norm(a, np.array(_W3)[:, None] - 1, np.array(_W3)[:, None], w, 0.0)
     ** 2, [U(2, 3, 2), U(3)]),
    ("embedding", lambda m, w: m.nn.functional.embedding(
        m.tensor([[1, 0, 3], [3, 3, 2]], device=w.device), w),
     lambda w: w[[[1, 0, 3], [3, 3, 2]]], [U(4, 3)]),
    # squared: the first derivative is embedding_dense_backward of a gradient that needs grad
    ("embedding_squared", lambda m, w: m.nn.functional.embedding(
        m.tensor([2, 0, 2], device=w.device), w) ** 2,
     lambda w: w[[2, 0, 2]] ** 2, [U(3, 2)]),
    # --- convolution, im2col/col2im, constant pad, pools (numgrad/ops/conv.py, pad.py,
    # pooling.py); the squared rows record the backward ops in the first derivative
    ("convolution", lambda m, x, w, b: m.nn.functional.conv2d(
        x, w, b, stride=(1, 2), padding=1, groups=2),
     lambda x, w, b: _conv2d_np(x, w, b, 2, s=(1, 2), p=(1, 1)),
     [U(2, 4, 3, 4), U(2, 2, 2, 3), U(2)]),
    ("convolution_1d", lambda m, x, w: m.nn.functional.conv1d(x, w, dilation=2),
     lambda x, w: _conv2d_np(x[:, :, None], w[:, :, None], d=(1, 2))[:, :, 0],
     [U(2, 2, 5), U(3, 2, 2)]),
    ("im2col", lambda m, a: m.nn.functional.unfold(a, (2, 2), padding=1, stride=2),
     lambda a: _windows_np(a, (2, 2), (2, 2), (1, 1)).reshape(1, 8, -1), [U(1, 2, 3, 2)]),
    ("col2im", lambda m, a: m.nn.functional.fold(a, (3, 4), (2, 2)),
     lambda a: _fold_np(a, (3, 4), (2, 2)), [U(1, 8, 6)]),
    ("im2col_unbatched", lambda m, a: m.nn.functional.unfold(a, 2, dilation=(1, 2)),
     lambda a: _windows_np(a[None], (2, 2), d=(1, 2)).reshape(8, -1), [U(2, 3, 4)]),
    ("col2im_unbatched", lambda m, a: m.nn.functional.fold(a, (3, 4), (2, 2)),
     lambda a: _fold_np(a[None], (3, 4), (2, 2))[0], [U(8, 6)]),
    ("constant_pad_nd", lambda m, a: m.nn.functional.pad(a, (1, -1, 2, 0), value=0.5),
     lambda a: np.pad(a[..., :-1], ((0, 0), (2, 0), (1, 0)), constant_values=0.5),
     [U(2, 2, 3)]),
    ("max_pool2d_with_indices", lambda m, a: m.nn.functional.max_pool2d(a, 2, 1, 1),
     lambda a: _windows_np(a, (2, 2), p=(1, 1), fill=-np.inf).max((2, 3)),
     [DISTINCT(1, 2, 3, 3)]),
    ("max_pool2d_with_indices_squared",
     lambda m, a: m.nn.functional.max_pool2d(a, (2, 1), ceil_mode=True) ** 2,
     lambda a: _windows_np(np.concatenate([a, np.full((1, 1, 1, 2), -np.inf)], 2), (2, 1),
                           (2, 1)).max((2, 3)) ** 2, [DISTINCT(1, 1, 3, 2)]),
    ("avg_pool2d", lambda m, a: m.nn.functional.avg_pool2d(a, 2, 1, 1, count_include_pad=False),
     lambda a: _windows_np(a, (2, 2), p=(1, 1)).sum((2, 3)) / _windows_np(
         np.ones_like(a), (2, 2), p=(1, 1)).sum((2, 3)), [U(1, 2, 3, 3)]),
    ("avg_pool2d_squared", lambda m, a: m.nn.functional.avg_pool2d(a, 2) ** 2,
     lambda a: _windows_np(a, (2, 2), (2, 2)).mean((2, 3)) ** 2, [U(1, 1, 4, 2)]),
    ("avg_pool2d_negative_divisor",
     lambda m, a: m.nn.functional.avg_pool2d(a, 2, 1, 1, divisor_override=-3),
     lambda a: _windows_np(a, (2, 2), p=(1, 1)).sum((2, 3)) / -3, [U(1, 2, 3, 3)]),
    # --- activations (numgrad.ops.activation)
    ("elu", lambda m, a: m.nn.functional.elu(a, 1.3),
     lambda a: np.where(a > 0, a, 1.3 * np.expm1(a)), [AWAY(3, 4)]),
    ("celu", lambda m, a: m.nn.functional.celu(a, 0.7),
     lambda a: np.where(a > 0, a, 0.7 * np.expm1(a / 0.7)), [AWAY(3, 4)]),
    ("hardshrink", lambda m, a: m.nn.functional.hardshrink(a, 0.6),
     lambda a: np.where(np.abs(a) > 0.6, a, 0), [AWAY(3, 4)]),
    ("softshrink", lambda m, a: m.nn.functional.softshrink(a, 0.6),
     lambda a: np.where(np.abs(a) > 0.6, a - 0.6 * np.sign(a), 0), [AWAY(3, 4)]),
    ("hardtanh", lambda m, a: m.nn.functional.hardtanh(a, -0.5, 0.8),
     lambda a: np.clip(a, -0.5, 0.8), [AWAY(3, 4)]),
    ("hardsigmoid", lambda m, a: m.nn.functional.hardsigmoid(a),
     lambda a: np.clip(a + 3, 0, 6) / 6, [U(3, 4, lo=-4, hi=4)]),
    ("hardswish", lambda m, a: m.nn.functional.hardswish(a),
     lambda a: a * np.clip(a + 3, 0, 6) / 6, [U(3, 4, lo=-4, hi=4)]),
    ("logsigmoid", lambda m, a: m.nn.functional.logsigmoid(a),
     lambda a: -np.logaddexp(0, -a), [U(3, 4, lo=-5, hi=5)]),
    ("mish", lambda m, a: m.nn.functional.mish(a),
     lambda a: a * np.tanh(np.logaddexp(0, a)), [U(3, 4, lo=-3, hi=3)]),
    ("threshold", lambda m, a: m.nn.functional.threshold(a, 0.2, -0.5),
     lambda a: np.where(a > 0.2, a, -0.5), [AWAY(3, 4)]),
    ("leaky_relu", lambda m, a: m.nn.functional.leaky_relu(a, 0.2),
     lambda a: np.where(a > 0, a, 0.2 * a), [AWAY(3, 4)]),
    ("glu", lambda m, a: m.nn.functional.glu(a, 1),
     lambda a: a[:, :2] / (1 + np.exp(-a[:, 2:])), [U(3, 4)]),
    ("prelu", lambda m, a, w: m.nn.functional.prelu(a, w),
     lambda a, w: np.where(a > 0, a, w[:, None] * a), [AWAY(2, 3, 2), U(3)]),
    ("rrelu_with_noise", lambda m, a: m.nn.functional.rrelu(a, 0.1, 0.3),
     lambda a: np.where(a > 0, a, 0.2 * a), [AWAY(3, 4)]),
    # in-place forms recording PyTorch's ...Backward1 nodes
    ("elu_", lambda m, a: m.nn.functional.elu_(a * 1.0, 1.3),
     lambda a: np.where(a > 0, a, 1.3 * np.expm1(a)), [AWAY(3, 4)]),
    ("celu_", lambda m, a: m.nn.functional.celu_(a * 1.0, 0.7),
     lambda a: np.where(a > 0, a, 0.7 * np.expm1(a / 0.7)), [AWAY(3, 4)]),
    ("leaky_relu_", lambda m, a: m.nn.functional.leaky_relu_(a * 1.0, 0.2),
     lambda a: np.where(a > 0, a, 0.2 * a), [AWAY(3, 4)]),
    ("threshold_", lambda m, a: m.nn.functional.threshold_(a * 1.0, 0.2, 0.5),
     lambda a: np.where(a > 0.2, a, 0.5), [AWAY(3, 4)]),
    ("rrelu_with_noise_", lambda m, a: m.nn.functional.rrelu_(a * 1.0, 0.1, 0.3),
     lambda a: np.where(a > 0, a, 0.2 * a), [AWAY(3, 4)]),
    ("silu_", lambda m, a: m.nn.functional.silu(a * 1.0, inplace=True),
     lambda a: a / (1 + np.exp(-a)), [U(3, 4, lo=-4, hi=4)]),
    ("sign", lambda m, a: m.sign(a), np.sign, [AWAY(3, 4)]),
    ("clamp", lambda m, a: a.clamp(-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), [AWAY(3, 4)]),
    ("clamp_lower", lambda m, a: m.clamp(a, min=0.2), lambda a: np.maximum(a, 0.2), [AWAY(3, 4)]),
    ("clamp_upper", lambda m, a: a.clamp(max=0.2), lambda a: np.minimum(a, 0.2), [AWAY(3, 4)]),
    ("clamp_min", lambda m, a: m.clamp_min(a, 0.2), lambda a: np.maximum(a, 0.2), [AWAY(3, 4)]),
    ("clamp_max", lambda m, a: a.clamp_max(0.2), lambda a: np.minimum(a, 0.2), [AWAY(3, 4)]),
    ("clamp_min_tensor", lambda m, a, b: m.clamp_min(a, b), np.maximum, [AWAY(3, 4), U(4)]),
    ("clamp_max_tensor", lambda m, a, b: a.clamp_max(b), np.minimum, [AWAY(3, 4), U(3, 1)]),
    ("clamp_tensor", lambda m, a, lo, hi: a.clamp(lo, hi), lambda a, lo, hi: np.minimum(
        np.maximum(a, lo), hi), [U(3, 4), U(3, 4, lo=-2, hi=-1.1), U(4, lo=1.1, hi=2)]),
    ("maximum", lambda m, a, b: m.maximum(a, b), np.maximum,
     [DISTINCT(3, 4), U(3, 4, lo=-.1, hi=.1)]),
    ("minimum", lambda m, a, b: m.minimum(a, b), np.minimum, [DISTINCT(3, 4), U(4, lo=-.1, hi=.1)]),
    ("where", lambda m, a, b: m.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b),
     [AWAY(3, 4), U(4)]),
    ("where_scalar", lambda m, a: m.where(a > 0, a, 0.0), lambda a: np.where(a > 0, a, 0.0),
     [AWAY(3, 4)]),
    # --- reductions
    ("sum", lambda m, a: a.sum(), lambda a: a.sum(), [U(3, 4)]),
    ("sum_dim", lambda m, a: a.sum(1), lambda a: a.sum(1), [U(3, 4, 2)]),
    ("sum_dims_keep", lambda m, a: m.sum(a, (0, 2), keepdim=True),
     lambda a: a.sum((0, 2), keepdims=True), [U(3, 4, 2)]),
    ("sum_neg_dim", lambda m, a: a.sum(-1), lambda a: a.sum(-1), [U(3, 4)]),
    ("mean", lambda m, a: a.mean(), lambda a: a.mean(), [U(3, 4)]),
    ("mean_dim", lambda m, a: a.mean(0), lambda a: a.mean(0), [U(3, 4)]),
    ("mean_dims_keep", lambda m, a: a.mean((1, 2), keepdim=True),
     lambda a: a.mean((1, 2), keepdims=True), [U(2, 3, 4)]),
    ("max_all", lambda m, a: a.max(), lambda a: a.max(), [DISTINCT(3, 4)]),
    ("max_dim", lambda m, a: a.max(1)[0], lambda a: a.max(1), [DISTINCT(3, 4)]),
    ("max_dim_keep", lambda m, a: m.max(a, 0, keepdim=True).values,
     lambda a: a.max(0, keepdims=True), [DISTINCT(3, 4)]),
    ("min_all", lambda m, a: a.min(), lambda a: a.min(), [DISTINCT(3, 4)]),
    ("min_dim", lambda m, a: a.min(-1).values, lambda a: a.min(-1), [DISTINCT(3, 4)]),
    ("amax", lambda m, a: a.amax(1), lambda a: a.max(1), [DISTINCT(2, 3, 4)]),
    ("amin_dims", lambda m, a: m.amin(a, (0, 2)), lambda a: a.min((0, 2)), [DISTINCT(2, 3, 4)]),
    ("norm", lambda m, a: a.norm(), lambda a: np.sqrt((a * a).sum()), [U(3, 4)]),
    ("norm_dim", lambda m, a: a.norm(dim=1), lambda a: np.sqrt((a * a).sum(1)), [U(3, 4)]),
    ("norm_p1", lambda m, a: a.norm(p=1), lambda a: np.abs(a).sum(), [AWAY(3, 4)]),
    ("norm_p3", lambda m, a: a.norm(p=3, dim=0, keepdim=True),
     lambda a: (np.abs(a) ** 3).sum(0, keepdims=True) ** (1 / 3), [AWAY(3, 4)]),
    ("norm_inf", lambda m, a: a.norm(p=float("inf")), lambda a: np.abs(a).max(), [DISTINCT(3, 4)]),
    ("logsumexp", lambda m, a: a.logsumexp(1), lambda a: _lse(a, 1), [U(3, 4)]),
    ("softmax", lambda m, a: a.softmax(1), lambda a: _softmax(a, 1), [U(3, 4)]),
    ("softmax_dim0", lambda m, a: m.softmax(a, dim=0), lambda a: _softmax(a, 0), [U(3, 4, 2)]),
    ("log_softmax", lambda m, a: a.log_softmax(-1), lambda a: np.log(_softmax(a, -1)), [U(3, 4)]),
    # --- linear algebra
    ("mm", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(3, 4), U(4, 5)]),
    ("torch_mm", lambda m, a, b: m.mm(a, b.t()), lambda a, b: a @ b.T, [U(3, 4), U(5, 4)]),
    ("mv", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(3, 4), U(4)]),
    ("vm", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(4), U(4, 3)]),
    ("dot", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(4), U(4)]),
    ("bmm", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(2, 3, 4), U(2, 4, 5)]),
    ("matmul_bcast", lambda m, a, b: m.matmul(a, b), lambda a, b: a @ b, [U(2, 3, 4), U(4, 5)]),
    ("matmul_bcast2", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(3, 4), U(2, 1, 4, 2)]),
    ("matmul_1d_3d", lambda m, a, b: a @ b, lambda a, b: a @ b, [U(4), U(2, 4, 3)]),
    # --- shapes and views
    ("t", lambda m, a: a.t() * 1, lambda a: a.T, [U(3, 4)]),
    ("T", lambda m, a: a.T * 1, lambda a: a.T, [U(3, 4)]),
    ("reshape", lambda m, a: a.reshape(2, -1), lambda a: a.reshape(2, -1), [U(3, 4)]),
    ("reshape_copy", lambda m, a: a.t().reshape(12), lambda a: a.T.reshape(12), [U(3, 4)]),
    ("view", lambda m, a: a.view(4, 3), lambda a: a.reshape(4, 3), [U(3, 4)]),
    ("permute", lambda m, a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [U(2, 3, 4)]),
    ("transpose", lambda m, a: a.transpose(0, 2), lambda a: a.swapaxes(0, 2), [U(2, 3, 4)]),
    ("squeeze", lambda m, a: a.squeeze(), lambda a: a.squeeze(), [U(3, 1, 4, 1)]),
    ("squeeze_dim", lambda m, a: a.squeeze(1), lambda a: a.squeeze(1), [U(3, 1, 4)]),
    ("unsqueeze", lambda m, a: a.unsqueeze(-1), lambda a: a[..., None], [U(3, 4)]),
    ("expand", lambda m, a: a.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [U(3, 1)]),
    ("expand_as", lambda m, a: a.expand_as(m.zeros(2, 3, 4)),
     lambda a: np.broadcast_to(a, (2, 3, 4)), [U(3, 1)]),
    ("view_as", lambda m, a: a.view_as(m.zeros(6, 2)), lambda a: a.reshape(6, 2), [U(3, 4)]),
    ("reshape_as", lambda m, a: a.t().reshape_as(m.zeros(2, 6)), lambda a: a.T.reshape(2, 6),
     [U(3, 4)]),
    ("flatten", lambda m, a: a.flatten(), lambda a: a.reshape(-1), [U(2, 3, 4)]),
    ("flatten_mid", lambda m, a: m.flatten(a, 1), lambda a: a.reshape(2, -1), [U(2, 3, 4)]),
    ("clone", lambda m, a: a.clone(), lambda a: a.copy(), [U(3, 4)]),
    ("to_double", lambda m, a: a.to(m.float64) * 2, lambda a: a * 2, [U(3, 4)]),
    ("sum_to_size", lambda m, a: a.sum_to_size(1, 4), lambda a: a.sum(0, keepdims=True), [U(3, 4)]),
    ("cat", lambda m, a, b: m.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1),
     [U(3, 2), U(3, 4)]),
    ("stack", lambda m, a, b: m.stack([a, b], 1), lambda a, b: np.stack([a, b], 1),
     [U(3, 4), U(3, 4)]),
    ("split", lambda m, a: a.split(2, 1)[1] * 2, lambda a: a[:, 2:4] * 2, [U(3, 5)]),
    ("chunk", lambda m, a: a.chunk(2)[0] + 0, lambda a: a[:2], [U(3, 4)]),
    ("unbind", lambda m, a: m.unbind(a, 1)[2] * 1, lambda a: a[:, 2], [U(3, 4)]),
    ("tensor_split", lambda m, a: a.tensor_split([1, 3], 1)[1], lambda a: a[:, 1:3], [U(3, 5)]),
    ("tensor_split_sections", lambda m, a: m.tensor_split(a, 3)[0], lambda a: a[:2], [U(5, 2)]),
    ("narrow", lambda m, a: a.narrow(1, 1, 2), lambda a: a[:, 1:3], [U(3, 4)]),
    # --- indexing
    ("index_int", lambda m, a: a[1], lambda a: a[1], [U(3, 4)]),
    ("index_neg_int", lambda m, a: a[-1, 2], lambda a: a[-1, 2], [U(3, 4)]),
    ("index_slice_step", lambda m, a: a[::2, 1::2], lambda a: a[::2, 1::2], [U(5, 4)]),
    ("index_none_ellipsis", lambda m, a: a[None, ..., 1], lambda a: a[None, ..., 1], [U(3, 4)]),
    ("index_list", lambda m, a: a[[0, 2, 2]], lambda a: a[[0, 2, 2]], [U(3, 4)]),
    ("index_list_dim1", lambda m, a: a[:, [3, 0]], lambda a: a[:, [3, 0]], [U(3, 4)]),
    ("index_two_lists", lambda m, a: a[[0, 1, 1], [2, 3, 3]],
     lambda a: a[[0, 1, 1], [2, 3, 3]], [U(3, 4)]),
    ("index_split_adv", lambda m, a: a[[0, 1], :, [1, 2]], lambda a: a[[0, 1], :, [1, 2]],
     [U(2, 3, 4)]),
    ("index_mask", lambda m, a: a[a > 0], lambda a: a[a > 0], [AWAY(3, 4)]),
    ("index_row_mask", lambda m, a: a[a.sum(1) > 0], lambda a: a[a.sum(1) > 0], [AWAY(4, 3)]),
    ("index_tensor", lambda m, a: a[m.tensor([2, 0])], lambda a: a[[2, 0]], [U(3, 4)]),
    ("index_select", lambda m, a: m.index_select(a, 1, m.tensor([1, 1, 3])),
     lambda a: a[:, [1, 1, 3]], [U(3, 4)]),
    ("gather", lambda m, a: m.gather(a, 1, m.tensor([[0, 0], [1, 0], [3, 2]])),
     lambda a: np.take_along_axis(a, np.array([[0, 0], [1, 0], [3, 2]]), 1), [U(3, 4)]),
    ("scatter", lambda m, a: m.scatter(a, 1, m.tensor([[0, 2], [1, 0], [3, 2]]), -1.5),
     lambda a: _put_along(a, np.array([[0, 2], [1, 0], [3, 2]]), -1.5), [U(3, 4)]),
    ("scatter_reduce", lambda m, a: a.scatter_reduce(1, m.tensor([[0, 0], [1, 1], [3, 2]]),
                                                     m.ones(3, 2, dtype=a.dtype), "sum"),
     lambda a: _add_along(a, np.array([[0, 0], [1, 1], [3, 2]])), [U(3, 4)]),
    ("index_add", lambda m, a: a.index_add(0, m.tensor([2, 0, 2]), m.ones(3, 4, dtype=a.dtype),
                                           alpha=2),
     lambda a: a + np.array([[2.0], [0.0], [4.0]]), [U(3, 4)]),
    ("index_copy", lambda m, a: m.index_copy(a, 1, m.tensor([3, 0]), a[:, :2] * 2),
     lambda a: np.stack([2 * a[:, 1], a[:, 1], a[:, 2], 2 * a[:, 0]], 1), [U(3, 4)]),
    ("index_fill", lambda m, a: a.index_fill(1, m.tensor([-1]), 0.5),
     lambda a: np.concatenate([a[:, :3], np.full((3, 1), 0.5)], 1), [U(3, 4)]),
    # --- ops declared in the registry (numgrad/ops/unary.py, lines.py, statistics.py)
    ("erf", lambda m, a: m.erf(a), _vectorized(math.erf), [U(3, 4, lo=-2, hi=2)]),
    ("erfc", lambda m, a: a.erfc(), _vectorized(math.erfc), [U(3, 4, lo=-2, hi=2)]),
    ("log10", lambda m, a: m.log10(a), np.log10, [POS(3, 4)]),
    ("log1p", lambda m, a: m.log1p(a), np.log1p, [U(3, 4, lo=-0.5, hi=2)]),
    ("expm1", lambda m, a: a.expm1(), np.expm1, [U(3, 4)]),
    ("rsqrt", lambda m, a: m.rsqrt(a), lambda a: 1 / np.sqrt(a), [POS(3, 4)]),
    ("asin", lambda m, a: m.asin(a), np.arcsin, [U(3, 4, lo=-0.9, hi=0.9)]),
    ("acos", lambda m, a: a.arccos(), np.arccos, [U(3, 4, lo=-0.9, hi=0.9)]),
    ("atan", lambda m, a: m.arctan(a), np.arctan, [U(3, 4)]),
    ("sinh", lambda m, a: m.sinh(a), np.sinh, [U(3, 4)]),
    ("cosh", lambda m, a: a.cosh(), np.cosh, [U(3, 4)]),
    ("asinh", lambda m, a: m.asinh(a), np.arcsinh, [U(3, 4)]),
    ("acosh", lambda m, a: m.arccosh(a), np.arccosh, [U(3, 4, lo=1.2, hi=3)]),
    ("atanh", lambda m, a: a.atanh(), np.arctanh, [U(3, 4, lo=-0.9, hi=0.9)]),
    ("isinf", lambda m, a: m.where(m.isinf(1 / m.relu(a)), 0.0, a),
     lambda a: np.where(a <= 0, 0.0, a), [U(3, 4)]),
    ("isposinf", lambda m, a: m.where((1 / m.relu(a)).isposinf(), a, 1.0),
     lambda a: np.where(a <= 0, a, 1.0), [U(3, 4)]),
    ("isneginf", lambda m, a: m.where(m.isneginf(-1 / m.relu(a)), 2.0, a),
     lambda a: np.where(a <= 0, 2.0, a), [U(3, 4)]),
    ("diff", lambda m, a: m.diff(a), np.diff, [U(3, 4)]),
    ("diff_n2_dim0", lambda m, a: a.diff(2, 0), lambda a: np.diff(a, 2, 0), [U(4, 3)]),
    ("diff_prepend_append", lambda m, a, b: m.diff(a, dim=1, prepend=b, append=b),
     lambda a, b: np.diff(a, axis=1, prepend=b, append=b), [U(3, 4), U(3, 2)]),
    ("lgamma", lambda m, a: m.lgamma(a), _vectorized(math.lgamma), [GAMMA(3, 4)]),
    ("digamma", lambda m, a: a.digamma(), lambda a: _polygamma_np(0, a), [GAMMA(3, 4)]),
    ("polygamma", lambda m, a: m.polygamma(2, a), lambda a: _polygamma_np(2, a), [GAMMA(3, 4)]),
    ("nan_to_num", lambda m, a: m.nan_to_num(
        a + m.tensor(_NONFINITE, dtype=a.dtype, device=a.device), posinf=2.0, neginf=-3.0),
     lambda a: np.nan_to_num(a + _NONFINITE, posinf=2.0, neginf=-3.0), [U(3, 4)]),
    ("tril", lambda m, a: m.tril(a), np.tril, [U(3, 4)]),
    ("tril_k", lambda m, a: a.tril(-1), lambda a: np.tril(a, -1), [U(2, 3, 4)]),
    ("triu", lambda m, a: m.triu(a, 1), lambda a: np.triu(a, 1), [U(4, 3)]),
    ("triu_batched", lambda m, a: a.triu(), np.triu, [U(2, 3, 3)]),
    ("cumsum", lambda m, a: m.cumsum(a, 1), lambda a: np.cumsum(a, 1), [U(3, 4)]),
    ("cumsum_dim0", lambda m, a: a.cumsum(dim=-3), lambda a: np.cumsum(a, 0), [U(2, 3, 4)]),
    ("sort", lambda m, a: m.sort(a, 1).values, lambda a: np.sort(a, 1), [DISTINCT(3, 4)]),
    ("sort_desc", lambda m, a: a.sort(dim=0, descending=True)[0],
     lambda a: -np.sort(-a, 0), [DISTINCT(4, 3)]),
    ("argsort", lambda m, a: m.gather(a, 1, m.argsort(a, 1)), lambda a: np.sort(a, 1),
     [DISTINCT(3, 5)]),
    ("var", lambda m, a: m.var(a), _var, [U(3, 4)]),
    ("var_dim", lambda m, a: a.var(1, keepdim=True), lambda a: _var(a, 1, keepdim=True),
     [U(3, 4)]),
    ("var_correction", lambda m, a: m.var(a, 0, correction=0), lambda a: _var(a, 0, 0),
     [U(3, 4)]),
    ("std", lambda m, a: a.std(), lambda a: np.sqrt(_var(a)), [U(3, 4)]),
    ("std_dim", lambda m, a: m.std(a, dim=1, unbiased=False),
     lambda a: np.sqrt(_var(a, 1, 0)), [U(3, 4)]),
    # --- einsum, repetition, reordering, diagonals, products (numgrad/ops/einsum.py, ...)
    ("einsum_mm", lambda m, a, b: m.einsum("ij,jk->ik", a, b),
     lambda a, b: np.einsum("ij,jk->ik", a, b), [U(3, 4), U(4, 5)]),
    ("einsum_attention", lambda m, q, k: m.einsum("bhqd,bhkd->bhqk", q, k),
     lambda q, k: np.einsum("bhqd,bhkd->bhqk", q, k), [U(2, 2, 3, 4), U(2, 2, 5, 4)]),
    ("einsum_chain", lambda m, a, b, c: m.einsum("ij,jk,kl->il", [a, b, c]),
     lambda a, b, c: a @ b @ c, [U(2, 3), U(3, 4), U(4, 2)]),
    ("einsum_ellipsis", lambda m, a, b: m.einsum("...ij,...jk", a, b),
     lambda a, b: a @ b, [U(2, 3, 4), U(4, 2)]),
    ("einsum_diagonal", lambda m, a: m.einsum("ii->i", a), np.diagonal, [U(3, 3)]),
    ("einsum_trace_sum", lambda m, a, b: m.einsum("ii,ij->", a, b),
     lambda a, b: np.einsum("ii,ij->", a, b), [U(3, 3), U(3, 4)]),
    ("einsum_outer", lambda m, a, b: m.einsum("i,j->ij", a, b), np.outer, [U(3), U(4)]),
    ("einsum_sum", lambda m, a: m.einsum("ij->j", a), lambda a: a.sum(0), [U(3, 4)]),
    ("repeat", lambda m, a: a.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3)), [U(3, 2)]),
    ("tile", lambda m, a: m.tile(a, (2,)), lambda a: np.tile(a, (1, 2)), [U(3, 2)]),
    ("repeat_interleave", lambda m, a: a.repeat_interleave(2, dim=1),
     lambda a: np.repeat(a, 2, 1), [U(3, 2)]),
    ("repeat_interleave_tensor", lambda m, a: m.repeat_interleave(a, m.tensor([1, 0, 2]), 0),
     lambda a: np.repeat(a, [1, 0, 2], 0), [U(3, 2)]),
    ("meshgrid", lambda m, a, b: m.meshgrid(a, b, indexing="xy")[1] * a,
     lambda a, b: np.meshgrid(a, b)[1] * a, [U(3), U(4)]),
    ("meshgrid_ij", lambda m, a, b: m.meshgrid([a, b], indexing="ij")[0] * b,
     lambda a, b: np.meshgrid(a, b, indexing="ij")[0] * b, [U(3), U(4)]),
    ("flip", lambda m, a: m.flip(a, (0, 2)), lambda a: a[::-1, :, ::-1], [U(2, 3, 4)]),
    ("fliplr", lambda m, a: m.fliplr(a), np.fliplr, [U(3, 4)]),
    ("flipud", lambda m, a: a.flipud(), np.flipud, [U(3, 4)]),
    ("roll", lambda m, a: m.roll(a, (1, -3), (0, 1)), lambda a: np.roll(a, (1, -3), (0, 1)),
     [U(3, 4)]),
    ("roll_flat", lambda m, a: a.roll(5), lambda a: np.roll(a, 5), [U(3, 4)]),
    ("diagonal", lambda m, a: m.diagonal(a, 1, 2, 0), lambda a: np.diagonal(a, 1, 2, 0),
     [U(3, 2, 4)]),
    ("diag", lambda m, a: m.diag(a, -1), lambda a: np.diag(a, -1), [U(3, 4)]),
    ("diag_vector", lambda m, a: m.diag(a, 1), lambda a: np.diag(a, 1), [U(3)]),
    ("diag_embed", lambda m, a: m.diag_embed(a, -1),
     lambda a: np.stack([np.diag(r, -1) for r in a]), [U(2, 3)]),
    ("trace", lambda m, a: a.trace(), np.trace, [U(3, 4)]),
    ("round_decimals", lambda m, a: m.round(a, decimals=2), lambda a: np.round(a * 100) / 100,
     [U(3, 4)]),
    ("cdist", lambda m, a, b: m.cdist(a, b),
     lambda a, b: np.sqrt(((a[:, :, None] - b[:, None]) ** 2).sum(-1)), [U(2, 3, 4), U(2, 5, 4)]),
    ("cdist_p3", lambda m, a, b: m.cdist(a, b, 3.0),
     lambda a, b: (np.abs(a[:, None] - b[None]) ** 3).sum(-1) ** (1 / 3), [U(3, 4), U(5, 4)]),
    ("cdist_mm", lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
     lambda a, b: np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)), [U(3, 4), U(5, 4)]),
    ("unfold", lambda m, a: a.unfold(1, 3, 2),
     lambda a: np.lib.stride_tricks.sliding_window_view(a, 3, 1)[:, ::2], [U(2, 7, 3)]),
    ("prod", lambda m, a: a.prod(), np.prod, [POS(3, 4)]),
    ("prod_dim", lambda m, a: m.prod(a, 1, keepdim=True), lambda a: a.prod(1, keepdims=True),
     [U(3, 4)]),
    ("prod_zeros", lambda m, a: a.prod(1), lambda a: a.prod(1),
     [lambda rng: rng.uniform(0.5, 1.5, (3, 4)) * np.array([[1, 1, 1, 1], [1, 0, 1, 1],
                                                             [0, 1, 0, 1]])]),
    ("cumprod", lambda m, a: m.cumprod(a, 1), lambda a: np.cumprod(a, 1), [U(3, 4)]),
    ("cumprod_zeros", lambda m, a: a.cumprod(0), lambda a: np.cumprod(a, 0),
     [lambda rng: rng.uniform(0.5, 1.5, (4, 3)) * np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0],
                                                             [1, 0, 1]])]),
    ("addmm", lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2),
     lambda c, a, b: 0.5 * c + 2 * (a @ b), [U(5), U(3, 4), U(4, 5)]),
    ("baddbmm", lambda m, c, a, b: c.baddbmm(a, b, alpha=-1),
     lambda c, a, b: c - a @ b, [U(2, 3, 5), U(2, 3, 4), U(2, 4, 5)]),
    ("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5),
     lambda x, a, b: x + 0.5 * a * b, [U(3, 1), U(3, 4), U(4)]),
    ("addcdiv", lambda m, x, a, b: x.addcdiv(a, b, value=-2),
     lambda x, a, b: x - 2 * a / b, [U(3, 4), U(3, 4), AWAY(3, 4)]),
    ("lerp", lambda m, a, b: m.lerp(a, b, 0.75), lambda a, b: a + 0.75 * (b - a),
     [U(3, 4), U(3, 4)]),
    ("lerp_tensor", lambda m, a, b, w: a.lerp(b, w), lambda a, b, w: a + w * (b - a),
     [U(3, 4), U(4), U(3, 1)]),
    ("cross", lambda m, a, b: m.cross(a, b, dim=0), lambda a, b: np.cross(a, b, axis=0),
     [U(3, 4), U(3, 4)]),
    ("tril_indices", lambda m, a: a[m.tril_indices(3, 4, 1)[0], m.tril_indices(3, 4, 1)[1]],
     lambda a: a[np.tril_indices(3, 1, 4)], [U(3, 4)]),
    ("triu_indices", lambda m, a: a[m.triu_indices(3, 4)[0], m.triu_indices(3, 4)[1]],
     lambda a: a[np.triu_indices(3, 0, 4)], [U(3, 4)]),
    # --- attention (numgrad/nn/_attention.py)
    ("scaled_dot_product_attention",
     lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v),
     lambda q, k, v: _softmax(q @ k.swapaxes(-1, -2) / 2, -1) @ v,
     [U(1, 2, 3, 4), U(1, 2, 5, 4), U(1, 2, 5, 4)]),
    # --- nn ops declared in numgrad/ops (resample.py, conv_transpose.py, recurrent.py,
    # embedding_bag.py, group_norm.py, attention.py)
    ("upsample_nearest1d", lambda m, a: m.nn.functional.interpolate(a, scale_factor=2),
     lambda a: np.repeat(a, 2, -1), [U(1, 2, 3)]),
    ("upsample_nearest2d", lambda m, a: m.nn.functional.interpolate(a, size=(3, 2)),
     lambda a: a[:, :, [0, 0, 1]][..., [0, 1]], [U(1, 1, 2, 3)]),
    ("upsample_nearest3d", lambda m, a: m.nn.functional.interpolate(a, size=(3, 2, 4)),
     lambda a: a[:, :, [0, 0, 1]][:, :, :, [0, 1]][..., [0, 0, 1, 1]], [U(1, 1, 2, 2, 2)]),
    ("upsample_trilinear3d", lambda m, a: m.nn.functional.interpolate(
        a, size=(3, 2, 4), mode="trilinear", align_corners=True),
     lambda a: _resize_nd(a, [_resize(2, 3, "linear"), _resize(3, 2, "linear"),
                              _resize(2, 4, "linear")]), [U(1, 2, 2, 3, 2)]),
    ("_upsample_nearest_exact3d", lambda m, a: m.nn.functional.interpolate(
        a, size=(3, 2, 1), mode="nearest-exact"),
     lambda a: a[:, :, [0, 2, 3]][:, :, :, [0, 1]][..., [1]], [U(1, 1, 4, 2, 3)]),
    ("upsample_linear1d", lambda m, a: m.nn.functional.interpolate(
        a, size=5, mode="linear", align_corners=True),
     lambda a: a @ _resize(3, 5, "linear").T, [U(1, 2, 3)]),
    # a gradient that depends on the input: its adjoint is recorded (_resample_backward)
    ("upsample_linear1d_squared", lambda m, a: m.nn.functional.interpolate(
        a, size=5, mode="linear", align_corners=True) ** 2,
     lambda a: (a @ _resize(3, 5, "linear").T) ** 2, [U(1, 2, 3)]),
    ("upsample_bilinear2d", lambda m, a: m.nn.functional.interpolate(
        a, size=(3, 4), mode="bilinear", align_corners=True),
     lambda a: _resize2d(a, (3, 4), "linear"), [U(1, 1, 2, 3)]),
    ("upsample_bicubic2d", lambda m, a: m.nn.functional.interpolate(
        a, size=(4, 2), mode="bicubic", align_corners=True),
     lambda a: _resize2d(a, (4, 2), "cubic"), [U(1, 1, 3, 3)]),
    ("_upsample_nearest_exact1d", lambda m, a: m.nn.functional.interpolate(
        a, size=3, mode="nearest-exact"), lambda a: a[..., [0, 2, 3]], [U(1, 2, 4)]),
    ("_upsample_nearest_exact2d", lambda m, a: m.nn.functional.interpolate(
        a, size=(3, 4), mode="nearest-exact"),
     lambda a: a[:, :, [0, 2, 3]][..., [0, 0, 1, 1]], [U(1, 1, 4, 2)]),
    ("_upsample_bilinear2d_aa", lambda m, a: m.nn.functional.interpolate(
        a, size=(2, 3), mode="bilinear", antialias=True),
     lambda a: _resize2d(a, (2, 3), "aa-linear"), [U(1, 1, 4, 5)]),
    ("_upsample_bicubic2d_aa", lambda m, a: m.nn.functional.interpolate(
        a, size=(2, 3), mode="bicubic", antialias=True),
     lambda a: _resize2d(a, (2, 3), "aa-cubic"), [U(1, 1, 4, 5)]),
    ("reflection_pad1d", lambda m, a: m.nn.functional.pad(a, (2, 1), mode="reflect"),
     lambda a: _pad_np(a, (2, 1), "reflect"), [U(1, 2, 4)]),
    ("reflection_pad2d", lambda m, a: m.nn.functional.pad(a, (1, 2, 0, 1), mode="reflect"),
     lambda a: _pad_np(a, (1, 2, 0, 1), "reflect"), [U(1, 1, 2, 3)]),
    ("reflection_pad3d", lambda m, a: m.nn.functional.pad(a, (1, 0, 0, 1, 1, 1), mode="reflect"),
     lambda a: _pad_np(a, (1, 0, 0, 1, 1, 1), "reflect"), [U(1, 1, 2, 2, 3)]),
    ("replication_pad1d", lambda m, a: m.nn.functional.pad(a, (1, 2), mode="replicate"),
     lambda a: _pad_np(a, (1, 2), "edge"), [U(1, 2, 3)]),
    ("replication_pad2d", lambda m, a: m.nn.functional.pad(a, (2, 0, 1, 1), mode="replicate"),
     lambda a: _pad_np(a, (2, 0, 1, 1), "edge"), [U(1, 1, 2, 3)]),
    ("replication_pad3d", lambda m, a: m.nn.functional.pad(
        a, (0, 1, 1, 0, 1, 0), mode="replicate"),
     lambda a: _pad_np(a, (0, 1, 1, 0, 1, 0), "edge"), [U(1, 1, 2, 2, 2)]),
    ("pixel_shuffle", lambda m, a: m.nn.functional.pixel_shuffle(a, 2),
     lambda a: a.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6),
     [U(1, 8, 2, 3)]),
    ("pixel_unshuffle", lambda m, a: m.nn.functional.pixel_unshuffle(a, 2),
     lambda a: a.reshape(2, 1, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 4, 2, 2),
     [U(2, 1, 4, 4)]),
    # circular padding: PyTorch's copies (CopySlices over SliceBackward0), no op of its own
    ("pad_circular_1d", lambda m, a: m.nn.functional.pad(a, (2, 1), mode="circular"),
     lambda a: _pad_np(a, (2, 1), "wrap"), [U(1, 2, 3)]),
    ("pad_circular_2d", lambda m, a: m.nn.functional.pad(a, (1, 2, 0, 1), mode="circular"),
     lambda a: _pad_np(a, (1, 2, 0, 1), "wrap"), [U(1, 1, 2, 3)]),
    ("pad_circular_3d", lambda m, a: m.nn.functional.pad(
        a, (1, 0, 0, 1, 1, 1), mode="circular"),
     lambda a: _pad_np(a, (1, 0, 0, 1, 1, 1), "wrap"), [U(1, 1, 2, 2, 3)]),
    ("_conv_transpose_2d", lambda m, x, w, b: m.nn.functional.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1, groups=2),
     lambda x, w, b: _conv_t2d(x, w, b, 2, 1, 1, 2), [U(1, 2, 3, 3), U(2, 2, 2, 2), U(4)]),
    ("_conv_transpose_1d", lambda m, x, w: m.nn.functional.conv_transpose1d(x, w, dilation=2),
     lambda x, w: _conv_t2d(x[:, :, None], w[:, :, None], dilation=2)[:, :, 0],
     [U(1, 2, 4), U(2, 3, 2)]),
    ("mkldnn_rnn_layer", lambda m, x: _lstm_layer(m, x), _lstm_np, [U(3, 2, 3)]),
    ("_unbind_steps", lambda m, a: _steps(m, a)[1], lambda a: a[1], [U(3, 4)]),
    ("_embedding_bag_psw", lambda m, w, p: m.nn.functional.embedding_bag(
        m.tensor(_BAG_IDX, device=w.device), w, m.tensor([0, 2], device=w.device),
        mode="sum", per_sample_weights=p),
     lambda w, p: np.stack([p[0] * w[1] + p[1] * w[2], p[2] * w[0] + p[3] * w[3] + p[4] * w[2]]),
     [U(4, 3), U(5)]),
    ("_embedding_bag_max", lambda m, w: m.nn.functional.embedding_bag(
        m.tensor(_BAG_IDX, device=w.device), w, m.tensor([0, 2], device=w.device), mode="max"),
     lambda w: np.stack([w[[1, 2]].max(0), w[[0, 3, 2]].max(0)]), [DISTINCT(4, 3)]),
    ("_scaled_dot_product_flash_attention_for_cpu_causal",
     lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: _softmax(q @ k.swapaxes(-1, -2) / 2 + np.triu(np.full((3, 3), -np.inf), 1),
                              -1) @ v, [U(1, 2, 3, 4), U(1, 2, 3, 4), U(1, 2, 3, 4)]),
    ("native_group_norm", lambda m, a, w, b: m.nn.functional.group_norm(a, 2, w, b),
     lambda a, w, b: _group_norm(a, 2, w, b), [U(2, 4, 3), U(4), U(4)]),
    # --- variants of the convolution, norm, pad and resize ops (their errors, modules and
    # special modes: test_api_conv_norm.py)
    ("convolution_1d_grouped", lambda m, x, w, b: m.nn.functional.conv1d(
        x, w, b, stride=2, padding=1, dilation=2, groups=2),
     lambda x, w, b: _conv1d_np(x, w, b, 2, 1, 2, 2), [U(2, 4, 9), U(6, 2, 3), U(6)]),
    ("convolution_1d_nobias", lambda m, x, w: m.nn.functional.conv1d(x, w),
     lambda x, w: _conv1d_np(x, w), [U(2, 3, 7), U(4, 3, 2)]),
    ("convolution_1d_unbatched", lambda m, x, w, b: m.nn.functional.conv1d(x, w, b, padding=[2]),
     lambda x, w, b: _conv1d_np(x, w, b, padding=2), [U(3, 7), U(4, 3, 3), U(4)]),
    ("convolution_1d_same_even", lambda m, x, w: m.nn.functional.conv1d(
        x, w, padding="same", dilation=1),
     lambda x, w: _conv1d_np(x, w, padding="same"), [U(2, 3, 7), U(4, 3, 4)]),
    ("convolution_1d_same", lambda m, x, w, b: m.nn.functional.conv1d(
        x, w, b, padding="same", dilation=2, groups=3),
     lambda x, w, b: _conv1d_np(x, w, b, padding="same", dilation=2, groups=3),
     [U(2, 3, 8), U(3, 1, 3), U(3)]),
    ("convolution_1d_valid", lambda m, x, w: m.nn.functional.conv1d(x, w, None, 1, "valid"),
     lambda x, w: _conv1d_np(x, w), [U(2, 3, 7), U(4, 3, 3)]),
    ("_conv_transpose_2d_dilated", lambda m, x, w, b: m.nn.functional.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=2),
     lambda x, w, b: _conv_t2d(x, w, b, 2, 1, 1, 2, 2), [U(2, 4, 4, 5), U(4, 3, 3, 2), U(6)]),
    ("_conv_transpose_2d_plain", lambda m, x, w: m.nn.functional.conv_transpose2d(x, w),
     lambda x, w: _conv_t2d(x, w), [U(2, 3, 4, 4), U(3, 2, 2, 3)]),
    ("_conv_transpose_2d_strides", lambda m, x, w: m.nn.functional.conv_transpose2d(
        x, w, None, (2, 3), (0, 1), (1, 2)),
     lambda x, w: _conv_t2d(x, w, None, (2, 3), (0, 1), (1, 2)), [U(1, 2, 3, 4), U(2, 3, 3, 3)]),
    ("_conv_transpose_2d_unbatched", lambda m, x, w, b: m.nn.functional.conv_transpose2d(
        x, w, b, 2), lambda x, w, b: _conv_t2d(x[None], w, b, 2)[0],
     [U(2, 3, 3), U(2, 3, 2, 2), U(3)]),
    ("_conv_transpose_1d_grouped", lambda m, x, w, b: m.nn.functional.conv_transpose1d(
        x, w, b, stride=2, padding=1, output_padding=1, groups=2),
     lambda x, w, b: _conv_t1d(x, w, b, 2, 1, 1, 2), [U(2, 4, 6), U(4, 2, 3), U(4)]),
    ("_conv_transpose_1d_unbatched", lambda m, x, w: m.nn.functional.conv_transpose1d(
        x, w, dilation=2), lambda x, w: _conv_t1d(x, w, dilation=2), [U(3, 5), U(3, 2, 3)]),
    ("native_group_norm_4d", lambda m, a, w, b: m.nn.functional.group_norm(a, 2, w, b),
     lambda a, w, b: _group_norm(a, 2, w, b), [U(2, 4, 3, 3), U(4), U(4)]),
    ("native_group_norm_plain", lambda m, a: m.nn.functional.group_norm(a, 3, eps=1e-3),
     lambda a: _group_norm(a, 3, np.ones(6), np.zeros(6), 1e-3), [U(3, 6, 5)]),
    ("native_group_norm_2d", lambda m, a, w: m.nn.functional.group_norm(a, 1, w),
     lambda a, w: _group_norm(a, 1, w, np.zeros(5)), [U(4, 5), U(5)]),
    ("native_batch_norm_instance", lambda m, a, w, b: m.nn.functional.instance_norm(
        a, weight=w, bias=b), lambda a, w, b: _group_norm(a, 3, w, b),
     [U(2, 3, 4, 3), U(3), U(3)]),
    ("native_batch_norm_instance_1d", lambda m, a: m.nn.functional.instance_norm(a),
     lambda a: _group_norm(a, 3, np.ones(3), np.zeros(3)), [U(2, 3, 5)]),
    ("reflection_pad2d_crop", lambda m, a: m.nn.functional.pad(a, (2, 1, -1, 3), mode="reflect"),
     lambda a: _pad_np(a, (2, 1, -1, 3), "reflect"), [U(2, 3, 5, 6)]),
    ("reflection_pad1d_batched", lambda m, a: m.nn.functional.pad(a, (2, 1), "reflect"),
     lambda a: _pad_np(a, (2, 1), "reflect"), [U(2, 3, 5)]),
    ("reflection_pad2d_unbatched", lambda m, a: m.nn.functional.pad(
        a, [1, 1, 2, 0], mode="reflect"),
     lambda a: _pad_np(a, (1, 1, 2, 0), "reflect"), [U(3, 4, 4)]),
    ("reflection_pad3d_batched", lambda m, a: m.nn.functional.pad(
        a, (1, 0, 1, 2, 1, 1), mode="reflect"),
     lambda a: _pad_np(a, (1, 0, 1, 2, 1, 1), "reflect"), [U(1, 2, 3, 3, 4)]),
    ("replication_pad2d_crop", lambda m, a: m.nn.functional.pad(
        a, (3, 1, 2, -1), mode="replicate"),
     lambda a: _pad_np(a, (3, 1, 2, -1), "edge"), [U(2, 3, 4, 5)]),
    ("replication_pad1d_unbatched", lambda m, a: m.nn.functional.pad(a, (0, 4), mode="replicate"),
     lambda a: _pad_np(a, (0, 4), "edge"), [U(3, 5)]),
    ("replication_pad3d_unbatched", lambda m, a: m.nn.functional.pad(
        a, (1, 1, 2, 0, 0, 1), mode="replicate"),
     lambda a: _pad_np(a, (1, 1, 2, 0, 0, 1), "edge"), [U(2, 2, 3, 3)]),
    ("upsample_nearest2d_x2", lambda m, a: m.nn.functional.interpolate(a, scale_factor=2),
     lambda a: a[:, :, _nearest_idx(4, 8, 2)][..., _nearest_idx(5, 10, 2)], [U(2, 3, 4, 5)]),
    ("upsample_nearest2d_size", lambda m, a: m.nn.functional.interpolate(a, size=(7, 3)),
     lambda a: a[:, :, _nearest_idx(4, 7)][..., _nearest_idx(5, 3)], [U(2, 3, 4, 5)]),
    ("upsample_nearest2d_frac", lambda m, a: m.nn.functional.interpolate(
        a, scale_factor=(1.7, 0.6)),
     lambda a: a[:, :, _nearest_idx(5, 8, 1.7)][..., _nearest_idx(6, 3, 0.6)], [U(1, 2, 5, 6)]),
    ("upsample_nearest1d_frac", lambda m, a: m.nn.functional.interpolate(a, scale_factor=1.7),
     lambda a: a[..., _nearest_idx(6, 10, 1.7)], [U(2, 3, 6)]),
    ("upsample_nearest2d_recompute", lambda m, a: m.nn.functional.interpolate(
        a, scale_factor=1.7, recompute_scale_factor=True),
     lambda a: a[:, :, _nearest_idx(5, 8)][..., _nearest_idx(6, 10)], [U(1, 2, 5, 6)]),
    ("upsample_bilinear2d_half", lambda m, a: m.nn.functional.interpolate(
        a, size=(7, 4), mode="bilinear"),
     lambda a: _resize_nd(a, (_linear_half(4, 7), _linear_half(5, 4))), [U(2, 3, 4, 5)]),
    ("upsample_bilinear2d_corners", lambda m, a: m.nn.functional.interpolate(
        a, size=(7, 4), mode="bilinear", align_corners=True),
     lambda a: _resize2d(a, (7, 4), "linear"), [U(2, 3, 4, 5)]),
    ("upsample_bilinear2d_scale", lambda m, a: m.nn.functional.interpolate(
        a, scale_factor=1.3, mode="bilinear"),
     lambda a: _resize_nd(a, (_linear_half(5, 6, 1.3), _linear_half(6, 7, 1.3))),
     [U(1, 2, 5, 6)]),
    ("upsample_bilinear2d_down", lambda m, a: m.nn.functional.interpolate(
        a, scale_factor=0.5, mode="bilinear", align_corners=False),
     lambda a: _resize_nd(a, (_linear_half(6, 3, 0.5), _linear_half(7, 3, 0.5))),
     [U(1, 2, 6, 7)]),
    ("upsample_bilinear2d_one", lambda m, a: m.nn.functional.interpolate(
        a, size=1, mode="bilinear", align_corners=True), lambda a: a[:, :, :1, :1],
     [U(1, 2, 3, 4)]),
    ("upsample_linear1d_half", lambda m, a: m.nn.functional.interpolate(
        a, scale_factor=2.5, mode="linear"),
     lambda a: a @ _linear_half(5, 12, 2.5).T, [U(2, 3, 5)]),
    ("upsample_linear1d_corners", lambda m, a: m.nn.functional.interpolate(
        a, size=8, mode="linear", align_corners=True),
     lambda a: a @ _resize(5, 8, "linear").T, [U(2, 3, 5)]),
    # 1-D pools: the 2-D ones on a unit height, batched or not (their errors, indices and
    # modules: test_api_layers_more.py)
    ("max_pool2d_with_indices_1d", lambda m, a: m.nn.functional.max_pool1d(
        a, 3, 2, 1, 2, ceil_mode=True),
     lambda a: _pool1d_np(a, 3, 2, 1, 2, ceil=True), [DISTINCT(2, 3, 9)]),
    ("avg_pool2d_1d", lambda m, a: m.nn.functional.avg_pool1d(
        a, 3, 2, 1, count_include_pad=False),
     lambda a: _pool1d_np(a, 3, 2, 1, kind="avg", include_pad=False), [U(2, 3, 8)]),
    ("max_pool2d_with_indices_1d_unbatched", lambda m, a: m.nn.functional.max_pool1d(a, [2]),
     lambda a: _pool1d_np(a, 2, 2), [DISTINCT(3, 7)]),
    ("avg_pool2d_1d_unbatched", lambda m, a: m.nn.functional.avg_pool1d(a, [2], ceil_mode=True),
     lambda a: _pool1d_np(a, 2, 2, ceil=True, kind="avg"), [U(3, 7)]),
    # attention variants (masks, math paths, errors: test_api_attention.py)
    ("_scaled_dot_product_flash_attention_for_cpu_long_q", lambda m, q, k, v:
     m.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: _sdpa_np(q, k, v, causal=True), [U(1, 2, 6, 4), U(1, 2, 3, 4), U(1, 2, 3, 4)]),
    ("_scaled_dot_product_flash_attention_for_cpu_scale", lambda m, q, k, v:
     m.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3),
     lambda q, k, v: _sdpa_np(q, k, v, scale=0.3), [U(2, 3, 4, 8), U(2, 3, 5, 8), U(2, 3, 5, 8)]),
    ("_scaled_dot_product_flash_attention_for_cpu_gqa", lambda m, q, k, v:
     m.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
     lambda q, k, v: _sdpa_np(q, k, v, gqa=True), [U(2, 6, 4, 8), U(2, 3, 5, 8), U(2, 3, 5, 8)]),
    # masks and the math path's shapes (errors and modules: test_api_attention.py)
    ("scaled_dot_product_attention_bool_mask", _sdpa(SDPA_BOOL2),
     _sdpa_ref(SDPA_BOOL2), _QKV),
    ("scaled_dot_product_attention_bool_mask_4d", _sdpa(SDPA_BOOL4),
     _sdpa_ref(SDPA_BOOL4), _QKV),
    ("scaled_dot_product_attention_float_mask", _sdpa(SDPA_FLOAT4),
     _sdpa_ref(SDPA_FLOAT4), _QKV),
    ("scaled_dot_product_attention_mask_and_causal", _sdpa(SDPA_BOOL4, is_causal=True),
     _sdpa_ref(SDPA_BOOL4, causal=True), _QKV),
    ("scaled_dot_product_attention_3d_mask", _sdpa(SDPA_BOOL2),
     _sdpa_ref(SDPA_BOOL2), [U(3, 4, 8), U(3, 5, 8), U(3, 5, 8)]),
    ("scaled_dot_product_attention_2d", _sdpa(is_causal=True),
     _sdpa_ref(causal=True), [U(4, 8), U(5, 8), U(5, 8)]),
    ("scaled_dot_product_attention_v_dim", _sdpa(SDPA_FLOAT4),
     _sdpa_ref(SDPA_FLOAT4),
     [U(2, 3, 4, 8), U(2, 3, 5, 8), U(2, 3, 5, 6)]),
    ("scaled_dot_product_attention_3d_mask_on_4d", _sdpa(SDPA_BOOL3),
     _sdpa_ref(SDPA_BOOL3), _QKV),
    ("scaled_dot_product_attention_batch_broadcast", _sdpa(), _sdpa_masked_np,
     [U(2, 3, 4, 8), U(1, 3, 5, 8), U(1, 1, 5, 8)]),
    ("scaled_dot_product_attention_5d", _sdpa(SDPA_BOOL2),
     _sdpa_ref(SDPA_BOOL2),
     [U(2, 1, 2, 4, 8), U(2, 1, 2, 5, 8), U(2, 1, 2, 5, 8)]),
    ("scaled_dot_product_attention_transposed_q", lambda m, q, k, v:
     m.nn.functional.scaled_dot_product_attention(q.transpose(-1, -2), k, v),
     lambda q, k, v: _sdpa_masked_np(q.swapaxes(-1, -2), k, v),
     [U(2, 3, 8, 4), U(2, 3, 5, 8), U(2, 3, 5, 8)]),
    ("scaled_dot_product_attention_empty_keys", _sdpa(), _sdpa_masked_np,
     [U(2, 3, 4, 8), U(2, 3, 0, 8), U(2, 3, 0, 8)]),
    # --- selection, counting, comparison (numgrad/ops/selection.py)
    ("topk", lambda m, a: m.topk(a, 2, 1).values, lambda a: -np.sort(-a, 1)[:, :2],
     [DISTINCT(3, 5)]),
    ("topk_smallest", lambda m, a: a.topk(2, dim=0, largest=False)[0],
     lambda a: np.sort(a, 0)[:2], [DISTINCT(4, 3)]),
    ("kthvalue", lambda m, a: m.kthvalue(a, 2, 1).values, lambda a: np.sort(a, 1)[:, 1],
     [DISTINCT(3, 5)]),
    ("median", lambda m, a: m.median(a), lambda a: np.sort(a.ravel())[(a.size - 1) // 2],
     [DISTINCT(3, 5)]),
    ("median_dim", lambda m, a: a.median(1, keepdim=True).values,
     lambda a: np.sort(a, 1)[:, [1]], [DISTINCT(3, 4)]),
    ("nanmedian", lambda m, a: m.nanmedian(a, 0).values, lambda a: np.sort(a, 0)[2],
     [DISTINCT(5, 3)]),
    ("mode", lambda m, a: m.mode(a, 1).values, lambda a: a.min(1), [DISTINCT(3, 4)]),
    ("cummax", lambda m, a: m.cummax(a, 1).values, lambda a: np.maximum.accumulate(a, 1),
     [DISTINCT(3, 4)]),
    ("cummin", lambda m, a: a.cummin(0)[0], lambda a: np.minimum.accumulate(a, 0),
     [DISTINCT(4, 3)]),
    ("all", lambda m, a: m.where(m.all(a > -0.5, 1, keepdim=True), a, 2 * a),
     lambda a: np.where((a > -0.5).all(1, keepdims=True), a, 2 * a), [U(3, 4)]),
    ("any", lambda m, a: m.where((a > 0.5).any(0), a, 2 * a),
     lambda a: np.where((a > 0.5).any(0), a, 2 * a), [U(3, 4)]),
    ("count_nonzero", lambda m, a: a * m.count_nonzero(a > 0, 1).unsqueeze(1),
     lambda a: a * (a > 0).sum(1, keepdims=True), [U(3, 4)]),
    ("unique", lambda m, a: a[:, m.unique(m.tensor([3, 0, 3, 1]))], lambda a: a[:, [0, 1, 3]],
     [U(3, 4)]),
    ("unique_consecutive", lambda m, a: a[m.unique_consecutive(m.tensor([2, 2, 0, 0, 2]))],
     lambda a: a[[2, 0, 2]], [U(3, 4)]),
    ("histc", lambda m, a: m.histc(a, 4, -1, 1) * a.sum(0),
     lambda a: np.histogram(a, 4, (-1, 1))[0] * a.sum(0), [U(3, 4)]),
    ("histogram", lambda m, a: m.histogram(a, 4, range=(-1.0, 1.0)).hist.detach() * a.sum(0),
     lambda a: np.histogram(a, 4, (-1, 1))[0] * a.sum(0), [U(3, 4)]),
    # --- losses declared as ops (numgrad.ops.losses)
    ("huber_loss", lambda m, a, b: m.nn.functional.huber_loss(a, b, delta=0.7),
     lambda a, b: np.mean(np.where(np.abs(a - b) < 0.7, 0.5 * (a - b) ** 2,
                                   0.7 * (np.abs(a - b) - 0.35))), [U(3, 4), U(3, 4, hi=3)]),
    ("huber_loss_none", lambda m, a, b: m.nn.functional.huber_loss(a, b, "none", 0.5),
     lambda a, b: np.where(np.abs(a - b) < 0.5, 0.5 * (a - b) ** 2, 0.5 * (np.abs(a - b) - 0.25)),
     [U(3, 4), U(3, 4, hi=3)]),
    ("soft_margin_loss", lambda m, a: m.nn.functional.soft_margin_loss(
        a, m.tensor(_SIGNS, dtype=a.dtype, device=a.device)),
     lambda a: np.mean(np.log1p(np.exp(-_SIGNS * a))), [U(3, 4, lo=-2, hi=2)]),
    ("multi_margin_loss", lambda m, a: m.nn.functional.multi_margin_loss(
        a, m.tensor([1, 0, 3], device=a.device), p=2, margin=0.9),
     lambda a: _multi_margin(a, [1, 0, 3], 0.9), [DISTINCT(3, 4)]),
    ("multilabel_margin_loss", lambda m, a: m.nn.functional.multilabel_margin_loss(
        a, m.tensor([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 0]], device=a.device)),
     lambda a: _multilabel_margin(a, [[3, 0], [1, 2, 3, 0], []]), [DISTINCT(3, 4)]),
]

IDS = [c[0] for c in CASES]
