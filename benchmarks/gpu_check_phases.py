"""The phases of ``gpu_check.py``, each run in its own process by it:

    python benchmarks/gpu_check_phases.py PHASE RESULTS.jsonl [--simulator]

PHASE is ``smoke`` (every op family once, forward and backward, on 'cuda' against the CPU),
``bench`` (the CUDA workloads of ``cuda_workloads.py``, numgrad beside PyTorch CUDA) or
``digits`` (the digits example trained on the GPU). Each result is appended to RESULTS as one
JSON line the moment it is known, so a phase killed at its timeout keeps what it finished.
``NUMGRAD_GPU_CHECK_INJECT`` (a comma-separated list) makes a phase fail or hang on purpose,
for the tests of the script. Nothing here imports Numba at module level: the pytest plugin
(``gpu_check_pytest.py``) imports ``CompileTimer`` before the tests pick the CUDA target.
"""

import json
import os
import re
import statistics
import sys
import time
import traceback

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH_DIR)
INJECT_ENV = "NUMGRAD_GPU_CHECK_INJECT"

# float32 on two devices: reductions and products sum in another order on the GPU
TOL = {"rtol": 1e-4, "atol": 1e-5}
# the digits models reach 97% (MLP) and 98% (CNN) on the CPU (tests/test_learning.py); the
# GPU draws other dropout masks in a different order of batches, so a little slack
DIGITS_MIN_ACCURACY = 0.95


def injected(what):
    return what in os.environ.get(INJECT_ENV, "").split(",")


def first_lines(exc, n=4):
    """The first ``n`` lines of an exception as ``traceback`` prints its last part."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return "\n".join(text.splitlines()[:n])


class Results:
    """Appends one JSON object per line to ``path`` and flushes it at once. Each check carries
    the compile time so far (``timer``), so a phase killed at its timeout still reports it."""

    def __init__(self, path, timer=None):
        self.fh = open(path, "a", buffering=1)
        self.timer = timer

    def write(self, kind, **fields):
        if kind == "check" and self.timer is not None:
            fields["compile"] = self.timer.totals()
        self.fh.write(json.dumps({"kind": kind, **fields}, default=str) + "\n")
        self.fh.flush()


class CompileTimer:
    """Seconds spent compiling kernels in this process, outermost compilations only.

    CUDA: numba-cuda's ``CUDADispatcher.compile`` (typing, lowering, NVVM and the link to a
    cubin for this GPU, or a load from the disk cache), counted when it adds a kernel. CPU:
    Numba's ``numba:compile`` events (cache loads are not compilations). Nothing compiles for
    the GPU under the simulator, which interprets the kernels.
    """

    def __init__(self):
        self.cuda_s = self.cpu_s = 0.0
        self.cuda_n = self.cpu_n = 0
        self._depth = {"cuda": 0, "cpu": 0}
        self._start = {}

    def install(self):
        from numba import config
        from numba.core import event

        timer = self

        class _CpuListener(event.Listener):
            def on_start(self, ev):
                timer._enter("cpu")

            def on_end(self, ev):
                timer._leave("cpu")

        event.register("numba:compile", _CpuListener())
        if config.ENABLE_CUDASIM:
            return self
        import numgrad.kernels.cuda  # noqa: F401 - before numba.cuda (its NumPy 2.5 shim)
        try:
            from numba.cuda.dispatcher import CUDADispatcher
        except ImportError:  # no numba-cuda: nothing compiles for a GPU
            return self
        original = CUDADispatcher.compile

        def timed_compile(dispatcher, *args, **kwargs):
            before = len(getattr(dispatcher, "overloads", ()))
            timer._enter("cuda")
            try:
                return original(dispatcher, *args, **kwargs)
            finally:
                timer._leave("cuda", counted=len(getattr(dispatcher, "overloads", ())) > before)

        CUDADispatcher.compile = timed_compile
        return self

    def _enter(self, target):
        if self._depth[target] == 0:
            self._start[target] = time.perf_counter()
        self._depth[target] += 1

    def _leave(self, target, counted=True):
        self._depth[target] -= 1
        if self._depth[target] == 0:
            took = time.perf_counter() - self._start[target]
            if target == "cuda":
                if counted:
                    self.cuda_s += took
                    self.cuda_n += 1
            else:
                self.cpu_s += took
                self.cpu_n += 1

    def totals(self):
        return {"cuda_s": round(self.cuda_s, 3), "cuda_n": self.cuda_n,
                "cpu_s": round(self.cpu_s, 3), "cpu_n": self.cpu_n}


# --- smoke: every op family once, forward and backward, 'cuda' against the CPU -----------------

def op_families():
    """(family title, first case) for each ``# --- title`` section of ``tests/op_cases.py``."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from op_cases import CASES

    by_id = {c[0]: c for c in CASES}
    with open(os.path.join(ROOT, "tests", "op_cases.py")) as fh:
        source = fh.read()
    families, title = [], None
    for line in source.splitlines():
        header = re.match(r"\s*# --- (.*)", line)
        if header:
            title = re.sub(r"\s*\(.*", "", header.group(1)).strip()
            continue
        case = re.match(r'\s*\("([^"]+)",', line)
        if title and case and case.group(1) in by_id:
            families.append((title, by_id[case.group(1)]))
            title = None
    return families


def _close(got, want, what):
    import numpy as np
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(),
                               err_msg=what, **TOL)


def _op_check(case):
    import numpy as np

    import numgrad as ng

    def run(device):
        rng = np.random.default_rng(1234)
        ts = [ng.tensor(make(rng), dtype=ng.float32, device=device, requires_grad=True)
              for make in case[3]]
        out = case[1](ng, *ts)
        weight = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(out.shape))
        (out * ng.tensor(weight, dtype=out.dtype, device=device)).sum().backward()
        return out, ts

    def check():
        out_c, ts_c = run("cpu")
        out_g, ts_g = run("cuda")
        assert out_g.device.type == "cuda", out_g.device
        assert type(out_g.grad_fn).__name__ == type(out_c.grad_fn).__name__
        _close(out_g, out_c, "forward")
        for i, (tg, tc) in enumerate(zip(ts_g, ts_c)):
            assert tg.grad is not None, f"input {i} got no gradient on cuda"
            _close(tg.grad, tc.grad, f"gradient of input {i}")
    return check


def _module_check(make, shape, loss=None):
    def check():
        import copy

        import numgrad as ng
        ng.manual_seed(0)
        cpu = make()
        gpu = copy.deepcopy(cpu).cuda()
        x = ng.randn(*shape)
        outs, xs = [], (x.clone().requires_grad_(), x.cuda().requires_grad_())
        for m, xi in zip((cpu, gpu), xs):
            y = m(xi)
            y = y[0] if isinstance(y, tuple) else y
            (loss(y) if loss else (y * y).sum()).backward()
            outs.append(y)
        _close(outs[1], outs[0], "forward")
        _close(xs[1].grad, xs[0].grad, "input gradient")
        for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
            assert pg.device.type == "cuda", name
            _close(pg.grad, pc.grad, f"gradient of {name}")
    return check


def _optimizer_check():
    import copy

    import numgrad as ng
    ng.manual_seed(1)
    cpu = ng.nn.Linear(4, 3)
    gpu = copy.deepcopy(cpu).cuda()
    x = ng.randn(5, 4)
    for m, xi in ((cpu, x), (gpu, x.cuda())):
        opt = ng.optim.Adam(m.parameters(), lr=0.01)
        for _ in range(2):
            opt.zero_grad()
            (m(xi) ** 2).mean().backward()
            opt.step()
    for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
        _close(pg, pc, name)


def _random_check():
    import numgrad as ng
    x = ng.ones(4, 6)
    ng.manual_seed(3)
    a = ng.nn.functional.dropout(x, 0.5)
    ng.manual_seed(3)
    b = ng.nn.functional.dropout(x.cuda(), 0.5)
    assert b.is_cuda
    _close(b, a, "dropout mask")


def smoke_checks():
    """(name, check) pairs: one op of each family of the op table, then the nn layers, a loss,
    an optimizer and the random numbers."""
    from numgrad import nn
    F = nn.functional
    checks = [(f"op {title}: {case[0]}", _op_check(case)) for title, case in op_families()]
    checks += [
        ("nn linear+relu+cross_entropy",
         _module_check(lambda: nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)),
                       (4, 6), loss=lambda y: F.cross_entropy(y, y.argmax(1).detach()))),
        ("nn conv2d+batchnorm2d+maxpool2d",
         _module_check(lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3),
                                             nn.ReLU(), nn.MaxPool2d(2)), (2, 2, 4, 4))),
        ("nn layernorm+gelu", _module_check(lambda: nn.Sequential(nn.LayerNorm(4), nn.GELU()),
                                            (3, 4))),
        ("nn lstm", _module_check(lambda: nn.LSTM(3, 4), (3, 2, 3))),
        ("optim adam", _optimizer_check),
        ("random dropout", _random_check),
    ]
    return checks


def smoke(out, simulator):
    import numgrad
    out.write("start", name="the device's name")
    if injected("hang"):
        time.sleep(10 ** 6)  # stands for a kernel that never returns
    out.write("device", name="Numba's CUDA simulator" if simulator else
              numgrad.cuda.get_device_name(),
              capability=None if simulator else numgrad.cuda.get_device_capability())
    for i, (name, check) in enumerate(smoke_checks()):
        out.write("start", name=name)
        start = time.perf_counter()
        try:
            check()
            if i == 0 and injected("smoke"):
                raise AssertionError("injected failure (--inject smoke): the GPU's result "
                                     "differs from the CPU's")
        except Exception as e:  # noqa: BLE001 - every failure is reported, then the next check
            out.write("check", name=name, ok=False, seconds=time.perf_counter() - start,
                      error=first_lines(e))
        else:
            out.write("check", name=name, ok=True, seconds=time.perf_counter() - start)


# --- bench: CUDA workloads beside PyTorch CUDA ------------------------------------------------

def _torch_cuda():
    """(torch, None) when PyTorch with a usable GPU is importable, else (None, reason)."""
    try:
        import torch
    except ImportError as e:
        return None, f"PyTorch is not importable ({e})"
    if not torch.cuda.is_available():
        return None, f"PyTorch {torch.__version__} has no usable GPU (torch.cuda.is_available())"
    return torch, None


def _median_time(run, reps, target_s):
    """Median over ``reps`` of the time per call, each rep timing enough calls for about
    ``target_s`` (each call waits for the GPU)."""
    number = 1
    if target_s > 0:
        start = time.perf_counter()
        run()
        number = max(1, int(target_s / max(time.perf_counter() - start, 1e-6)))
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(number):
            run()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def bench(out, simulator):
    import numgrad  # before PyTorch: Numba must not share PyTorch's OpenMP runtime
    sys.path.insert(0, BENCH_DIR)
    from cuda_workloads import CUDA_WORKLOADS, build

    libs = ["numgrad"]
    if simulator:
        out.write("skip", name="PyTorch CUDA comparison", reason="the simulator has no GPU")
    else:
        torch, reason = _torch_cuda()
        if torch is None:
            out.write("skip", name="PyTorch CUDA comparison", reason=reason)
        else:
            libs.append("torch")
            out.write("info", name="torch", version=torch.__version__,
                      cuda=torch.version.cuda, device=torch.cuda.get_device_name())
    reps, target = (1, 0.0) if simulator else (7, 0.05)
    for name in CUDA_WORKLOADS:
        for lib in libs:
            out.write("start", name=f"bench {name} ({lib})")
            start = time.perf_counter()
            try:
                if injected("bench") and lib == "numgrad":
                    raise RuntimeError("injected failure (--inject bench)")
                run, work = build(name, lib, tiny=simulator)
                run()  # compiles numgrad's kernels: the first call
                first = time.perf_counter() - start
                seconds = _median_time(run, reps, target)
            except Exception as e:  # noqa: BLE001 - report, go on with the next workload
                out.write("check", name=f"bench {name} ({lib})", ok=False,
                          seconds=time.perf_counter() - start, error=first_lines(e))
                continue
            out.write("check", name=f"bench {name} ({lib})", ok=True,
                      seconds=time.perf_counter() - start)
            out.write("bench", name=name, lib=lib, seconds=seconds, work=work,
                      first_call_s=first)
    del numgrad


# --- digits: the example's accuracy on the GPU ----------------------------------------------

def _shrink(example):
    """The digits example on 16 training and 16 test images, with narrow models (the
    simulator interprets every GPU thread in Python)."""
    from numgrad import nn
    whole = example.load_digits_split
    example.load_digits_split = lambda: tuple(
        t[:n] for t, n in zip(whole(), (16, 16, 16, 16)))
    example.make_mlp = lambda: nn.Sequential(nn.Linear(64, 8), nn.ReLU(), nn.Dropout(0.2),
                                             nn.Linear(8, 10))
    example.make_cnn = lambda: nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2),
        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.3), nn.Linear(2 * 4 * 4, 10))


def digits(out, simulator):
    import numgrad  # noqa: F401 - before scikit-learn and PyTorch
    try:
        import sklearn  # noqa: F401
    except ImportError as e:
        out.write("skip", name="digits example", reason=f"scikit-learn is not installed ({e})")
        return
    from numgrad.examples import digits as example

    epochs = None
    if simulator:  # the same program on one batch, with narrow models
        _shrink(example)
        epochs = 1
    for kind in ("mlp", "cnn"):
        out.write("start", name=f"digits {kind}")
        start = time.perf_counter()
        try:
            _, history = example.train(kind, epochs, quiet=True, device="cuda",
                                       batch_size=16 if simulator else 64)
        except Exception as e:  # noqa: BLE001
            out.write("check", name=f"digits {kind}", ok=False,
                      seconds=time.perf_counter() - start, error=first_lines(e))
            continue
        seconds = time.perf_counter() - start
        accuracy = history["test_acc"][-1]
        out.write("digits", name=kind, accuracy=accuracy, epochs=len(history["test_acc"]),
                  seconds=seconds)
        ok = simulator or accuracy >= DIGITS_MIN_ACCURACY
        out.write("check", name=f"digits {kind}", ok=ok, seconds=seconds,
                  error=None if ok else f"test accuracy {100 * accuracy:.2f}% < "
                                        f"{100 * DIGITS_MIN_ACCURACY:.0f}%")


PHASES = {"smoke": smoke, "bench": bench, "digits": digits}


def main(argv):
    phase, path = argv[0], argv[1]
    simulator = "--simulator" in argv
    out = Results(path, CompileTimer().install())
    PHASES[phase](out, simulator)
    out.write("done", compile=out.timer.totals())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
