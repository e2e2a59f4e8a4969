"""Kernel loading: nothing compiles (or imports Numba) at import, the disk cache is
versioned and optional, and every elementwise kernel keeps float32 math in float32."""

import functools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numgrad as ng


def _run(code, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=300)


def test_import_does_not_load_numba():
    # nor the compiler: numgrad.compile loads it on first use
    r = _run("""
        import sys, numgrad
        print('numba' in sys.modules, 'numgrad._compile' in sys.modules)
        print(numgrad.compile.__module__, 'numgrad._compile' in sys.modules)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "numgrad._compile.api", "True"]


_OPENBLAS_TIMEOUT = """
    {first}
    import ctypes, numgrad as ng
    a = ng.ones(40, 40)
    (a @ a).sum().item()
    from numgrad.kernels.cpu import _openblas
    path = _openblas._loaded_openblas()
    print(-1 if path is None else ctypes.CDLL(path).openblas_thread_timeout())
"""


@pytest.mark.parametrize("first", ["import numpy", "import numgrad"])
def test_openblas_workers_get_a_short_timeout_whatever_the_import_order(first):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_OPENBLAS_TIMEOUT).format(
        first=first)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "-1":
        pytest.skip("NumPy is not linked to its own OpenBLAS here")
    assert r.stdout.strip() == "4"


def test_openblas_timeout_chosen_by_the_user_is_kept():
    r = _run(_OPENBLAS_TIMEOUT.format(first="import numpy"), {"OPENBLAS_THREAD_TIMEOUT": "9"})
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "-1":
        pytest.skip("NumPy is not linked to its own OpenBLAS here")
    assert r.stdout.strip() == "9"


_LAYER_AFTER_TORCH = """
    import torch, numgrad as ng
    ng.set_num_threads(2)
    (ng.ones(1 << 18) * 2).sum().item()  # a multithreaded kernel
    import numba
    print(numba.threading_layer())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's loader")
def test_numba_threads_use_their_own_openmp_runtime_when_pytorch_came_first(tmp_path):
    """PyTorch puts its libgomp in the global scope; numgrad's OpenMP calls must still go to
    the libgomp Numba's layer was built against (sharing PyTorch's spinning pool made the
    2-thread MLP step 1.6-4x slower). Checked with the loader's own record of bindings."""
    pytest.importorskip("torch")
    log = tmp_path / "bindings"
    r = _run(_LAYER_AFTER_TORCH, {"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": str(log)})
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() != "omp":
        pytest.skip(f"threading layer {r.stdout.strip()}, not OpenMP")
    lines = [line for f in tmp_path.glob("bindings*") for line in f.read_text().splitlines()
             if "omppool" in line and "`GOMP_parallel'" in line]
    assert lines, "the loader did not report the layer's bindings"
    assert not any("torch" in line.split(" to ")[1] for line in lines), lines


_ALLOC_FAULTS = """
    import resource, numpy as np
    import numgrad as ng
    (ng.ones(3) * 2).sum().item()  # loads the CPU kernels
    def step():  # three 9 MiB arrays made and freed, as a training step does
        arrs = [np.ones(9 << 18) for _ in range(3)]
        del arrs
    big = np.ones(10 << 17)
    del big
    for _ in range(2):
        step()
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(8):
        step()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_large_arrays_reuse_memory_without_page_faults():
    tuned = _run(_ALLOC_FAULTS)
    untuned = _run(_ALLOC_FAULTS, {"NUMGRAD_MALLOC_TUNING": "0"})
    assert tuned.returncode == 0 and untuned.returncode == 0, tuned.stderr + untuned.stderr
    # 8 steps of 27 MiB are 55,000 pages; kept memory is reused, trimmed memory faults again
    assert int(tuned.stdout) < 500 <= int(untuned.stdout)


def test_works_without_a_writable_cache(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = _run("""
            import numgrad as ng
            from numgrad.kernels import _jit
            x = ng.ones(3, requires_grad=True)
            (x * 2).sum().backward()
            print(_jit.CACHE, x.grad.tolist())
        """, env={"NUMGRAD_CACHE_DIR": str(ro / "sub")})
    finally:
        ro.chmod(0o700)
    assert r.returncode == 0, r.stderr
    if os.geteuid() != 0:  # root can write anywhere
        assert r.stdout.strip() == "False [2.0, 2.0, 2.0]"
    else:
        assert r.stdout.strip().endswith("[2.0, 2.0, 2.0]")


def test_cache_disabled_explicitly():
    r = _run("""
        import numgrad as ng
        from numgrad.kernels import _jit
        print(_jit.CACHE, (ng.ones(2) + 1).tolist())
    """, env={"NUMGRAD_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False [2.0, 2.0]"


def test_versioned_cache_directory(tmp_path):
    r = _run("""
        import numgrad as ng
        from numgrad.kernels import _jit
        (ng.ones(2) * 3).tolist()
        print(_jit.CACHE_DIR)
    """, env={"NUMGRAD_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    assert path.startswith(str(tmp_path)) and ng.__version__ in os.path.basename(path)
    assert any(f.endswith(".nbi") for f in os.listdir(path))


def test_float32_stays_float32_inside_kernels():
    # compiled fresh (no cache) so that Numba can show the LLVM IR
    r = _run("""
        import numpy as np
        from numgrad.kernels.cpu import elementwise as E
        x = np.linspace(-2, 2, 64, dtype=np.float32)
        y = np.linspace(0.5, 2, 64, dtype=np.float32)
        for k in (E.tanh_bwd, E.sigmoid_bwd, E.sqrt_bwd, E.mul, E.sigmoid):
            if k.arity == 1:
                out = E.unary(k, x, np.float32)
            else:
                out = E.binary(k, x, y, np.float32, x.shape)
            assert out.dtype == np.float32
            ir = k.flat.inspect_llvm(k.flat.signatures[0])
            assert "fadd float" in ir or "fmul float" in ir or "fdiv float" in ir, k.name
            assert "fpext float" not in ir, k.name + " widens float32 to double"
        print("ok")
    """, env={"NUMGRAD_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_precompile_runs():
    ng.precompile()


def test_rounding_keeps_floats_whole_and_special_values():
    """floor/ceil/trunc/round return floats: inf, nan and values beyond int64 survive."""
    vals = [float("inf"), float("-inf"), float("nan"), 1e20, -2.5, 2.5, 0.5, -0.5, 1.5]
    for dt in (ng.float32, ng.float64):
        x = ng.tensor(vals, dtype=dt)
        a = np.array(vals, dtype=dt.np)
        for fn, ref in ((ng.floor, np.floor), (ng.ceil, np.ceil), (ng.trunc, np.trunc),
                        (ng.round, np.rint)):
            np.testing.assert_array_equal(fn(x).numpy(), ref(a))


_BROADCASTS = [  # (shapes of the operands), the output shape is their broadcast
    ((3, 4, 5, 6), (1, 4, 1, 6)),
    ((3, 4, 5, 6), (1, 1, 5, 1)),  # inner dim broadcast (a bias over channels)
    ((3, 1, 5, 1), (1, 4, 1, 6)),  # both broadcast, neither inner dim full
    ((2, 1), (1, 1)),
    ((7,), (2, 3, 1)),
    ((2, 3, 2, 2, 5), (3, 1, 1, 5)),  # more than 4 dims
]


@pytest.mark.parametrize("shapes", _BROADCASTS)
@pytest.mark.parametrize("parallel", [False, True])
def test_broadcast_loops_match_numpy(shapes, parallel, monkeypatch):
    from numgrad.kernels.cpu import elementwise as EW
    if parallel:
        monkeypatch.setattr(EW, "ELEMENTWISE", 1)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s) for s in shapes)
    c = rng.standard_normal(shapes[0][-1:])
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    at = np.asfortranarray(a)  # strided operands take the same loops
    np.testing.assert_allclose(EW.binary(EW.sub, at, b, np.float64, shape), a - b, rtol=0)
    np.testing.assert_allclose(EW.binary(EW.sub, b, at, np.float64, shape), b - a, rtol=0)
    got = EW.ternary(EW.where, c > 0, at, b, np.float64, shape)
    np.testing.assert_allclose(got, np.where(c > 0, a, b), rtol=0)
    got = EW.ternary(EW.where, np.broadcast_to(c > 0, shape), a, b, np.float64, shape)
    np.testing.assert_allclose(got, np.where(c > 0, a, b), rtol=0)
    out = np.empty(shape)
    EW.unary(EW.neg, at, np.float64, out=out)  # size-1 dims repeat
    np.testing.assert_allclose(out, -np.broadcast_to(a, shape), rtol=0)
    small = a[..., :1]
    out = np.empty(small.shape[:-1] + (4,))
    EW.unary(EW.neg, small, np.float64, out=out)  # a broadcast inner dim
    np.testing.assert_allclose(out, -np.broadcast_to(small, out.shape), rtol=0)


@pytest.mark.parametrize("geo", [  # kh, kw, sh, sw, ph, pw, dh, dw
    (3, 3, 1, 1, 1, 1, 1, 1), (3, 2, 2, 3, 1, 2, 2, 1), (2, 3, 3, 2, 0, 0, 3, 2)])
@pytest.mark.parametrize("parallel", [False, True])
def test_im2col_and_col2im_agree_across_column_layouts(geo, parallel):
    from numgrad.kernels.cpu import nn as NN
    kh, kw, sh, sw, ph, pw, dh, dw = geo
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 9, 10)).astype(np.float32)
    oh = (9 + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (10 + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    args = (kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
    im2col = functools.partial(NN.im2col, parallel=parallel)
    col2im = functools.partial(NN.col2im, parallel=parallel)
    k, n_l = 2 * kh * kw, oh * ow
    # reference: the definition, pixel by pixel
    ref = np.zeros((3, k, n_l), np.float32)
    for c in range(2):
        for i in range(kh):
            for j in range(kw):
                for yo in range(oh):
                    for xo in range(ow):
                        iy, ix = yo * sh - ph + i * dh, xo * sw - pw + j * dw
                        if 0 <= iy < 9 and 0 <= ix < 10:
                            ref[:, (c * kh + i) * kw + j, yo * ow + xo] = x[:, c, iy, ix]
    layouts = {"nk": np.empty((3, k, n_l), np.float32),
               "kn": np.empty((k, 3, n_l), np.float32).transpose(1, 0, 2),
               "strided": np.empty((3, k, 2 * n_l), np.float32)[:, :, ::2]}
    g = rng.standard_normal((3, k, n_l)).astype(np.float32)
    expect = np.empty_like(x)
    NN.col2im(g.copy(), *args, expect)
    np.testing.assert_allclose(np.sum(ref * g), np.sum(x * expect), rtol=1e-4)  # adjoint
    for cols in layouts.values():
        im2col(x, *args, cols)
        np.testing.assert_array_equal(cols, ref)
        cols[...] = g
        got = np.full_like(x, np.nan)
        col2im(cols, *args, got)
        np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("geo", [  # kh, kw, sh, sw, ph, pw, count_include_pad, divisor
    (3, 3, 1, 1, 1, 1, True, 0), (3, 2, 2, 1, 1, 1, False, 0), (2, 2, 2, 2, 0, 0, True, 5)])
def test_avg_pool_backward_is_the_adjoint_in_any_output_layout(geo):
    from numgrad.kernels.cpu import windows as W
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    kh, kw, sh, sw, ph, pw = geo[:6]
    out = np.empty((2, 3, (7 + 2 * ph - kh) // sh + 1, (6 + 2 * pw - kw) // sw + 1), np.float32)
    W.avg_pool2d(x, *geo, out)
    g = rng.standard_normal(out.shape).astype(np.float32)
    gx = np.empty_like(x)
    W.avg_pool2d_bwd(g, *geo, gx, parallel=False)
    # <g, A x> = <A' g, x>
    np.testing.assert_allclose(np.sum(out * g, dtype=np.float64),
                               np.sum(x * gx, dtype=np.float64), rtol=1e-5)
    for parallel in (False, True):  # a strided gradient gets the same bits
        strided = np.full((2, 3, 7, 12), np.nan, np.float32)[..., ::2]
        W.avg_pool2d_bwd(g, *geo, strided, parallel=parallel)
        np.testing.assert_array_equal(strided, gx)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_set_num_threads_errors_match_pytorch(bad):
    with pytest.raises(RuntimeError) as ours:
        ng.set_num_threads(bad)
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(RuntimeError) as theirs:
        torch.set_num_threads(bad)
    assert str(ours.value) == str(theirs.value)


def test_set_num_threads_sets_the_kernel_threads():
    r = _run("""
        import numgrad as ng
        before = ng.get_num_threads()
        ng.set_num_threads(1)
        x = ng.ones(1 << 18, requires_grad=True)
        (x * 2).sum().backward()  # a parallel-sized kernel runs on one thread
        print(before, ng.get_num_threads(), x.grad[:2].tolist())
    """, {"NUMBA_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "1", "[2.0,", "2.0]"]


# the vectorizable float32 formulas (kernels/cpu/_fastmath.py): worst error over dense samples,
# in units in the last place of the float32 result; the bounds are what the formulas reach
_ULP_BOUNDS = {"exp": 1.0, "tanh": 1.35, "sigmoid": 2.4}
_REFERENCE = {"exp": np.exp, "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v))}


@pytest.mark.parametrize("name", sorted(_ULP_BOUNDS))
def test_float32_transcendentals_stay_within_their_ulp_bound(name):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(300_000) * 3, np.linspace(-0.7, 0.7, 100_001),
                        rng.uniform(-104, 89, 100_000)]).astype(np.float32)
    got = getattr(ng.tensor(x), name)().numpy().astype(np.float64)
    ref = _REFERENCE[name](x.astype(np.float64))
    normal = np.isfinite(ref) & (np.abs(ref) >= np.finfo(np.float32).tiny) & (
        np.abs(ref) <= np.finfo(np.float32).max)
    ulp = np.spacing(np.abs(ref[normal]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - ref[normal]) / ulp) <= _ULP_BOUNDS[name]
    assert np.array_equal(np.isnan(got), np.isnan(ref))


def test_set_num_threads_also_sets_the_blas_threads():
    """As ``torch.set_num_threads`` covers PyTorch's BLAS, numgrad's covers the matrix
    products (NumPy's OpenBLAS), not only numgrad's own kernels."""
    r = _run("""
        import ctypes, numgrad as ng
        from numgrad.kernels.cpu import _openblas
        ng.set_num_threads(1)
        path = _openblas._loaded_openblas()
        lib = None if path is None else ctypes.CDLL(path)
        get = None
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                     "openblas_get_num_threads"):
            get = get or getattr(lib, name, None)
        print(-1 if get is None else get(), ng.get_num_threads())
    """, {"OPENBLAS_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr
    blas, ours = r.stdout.split()
    if blas == "-1":
        pytest.skip("NumPy is not linked to its own OpenBLAS here")
    assert (blas, ours) == ("1", "1")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inner_dimension_one_products_match_numpy_and_keep_nan(dtype):
    # the batch-1 weight gradient (k == 1) takes np.dot's BLAS call, not np.matmul's loop
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 1)).astype(dtype)
    b = rng.standard_normal((1, 53)).astype(dtype)
    a[3, 0], b[0, 5] = np.inf, 0.0
    ta = ng.tensor(a.T.copy(), requires_grad=True)
    out = ta.t() @ ng.tensor(b)
    with np.errstate(invalid="ignore"):
        want = a * b
    np.testing.assert_array_equal(out.detach().numpy(), want)
    assert np.isnan(out.detach().numpy()[3, 5])
    g = rng.standard_normal((37, 53)).astype(dtype)
    out.backward(ng.tensor(g))
    np.testing.assert_allclose(ta.grad.numpy(), (g @ b.T).T, rtol=1e-5)
