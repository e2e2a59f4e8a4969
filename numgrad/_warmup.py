"""``numgrad.precompile()``: run the common ops once per float dtype to compile kernels."""


def warmup():
    import numgrad as ng

    for dt in (ng.float32, ng.float64):
        x = ng.rand(4, 3, dtype=dt, requires_grad=True)
        y = ng.rand(4, 3, dtype=dt, requires_grad=True)
        w = ng.rand(3, 2, dtype=dt, requires_grad=True)
        b = ng.rand(3, dtype=dt, requires_grad=True)
        z = ((x * y + x / (y + 1) - 2 * x) ** 2 + b).exp().tanh().sigmoid().relu()
        z = z.sqrt().log1p() if hasattr(z, "log1p") else z.sqrt()
        out = (z @ w).softmax(1).sum() + x.mean() + x.max() + x.sum(0).mean()
        out = out + x.log_softmax(1).mean() + x.abs().sin().cos().sum()
        out.backward()
