"""``benchmarks/gpu_check.py``, the GPU check in one command, run end to end on Numba's CUDA
simulator (``--simulator``: tiny sizes, no PyTorch), so that the script cannot rot: every
phase, the summary and log it writes, its budget and timeouts, and how it reports failures."""

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu_check.py")
# the tests/cuda tests the full run reaches: two files' worth, one of them failed on purpose
TESTS_FILTER = "test_kernels_optim or test_clip_grad_norm"
# the simulator's time is mostly thread switches: on a loaded machine its phases take many
# times as long as their CPU time, so the full run gets a generous budget
BUDGET_S = 1800


def _cache_root():
    """The suite's own kernel cache: the check's CPU reference kernels are mostly there."""
    from numgrad.kernels import _jit
    return _jit._cache_root() or "off"


def gpu_check(out, *args, timeout=900):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # --simulator must choose it by itself
    start = time.perf_counter()
    r = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--simulator",
                        "--cache-dir", _cache_root(), *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=timeout)
    took = time.perf_counter() - start
    summary = (out / "summary.md").read_text()
    results = json.loads((out / "results.json").read_text())
    phases = {p["name"]: p for p in results["phases"]}
    return r, summary, phases, took


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """Every phase, with one smoke check and one test failing on purpose."""
    out = tmp_path_factory.mktemp("gpu_check")
    return (out, *gpu_check(out, "--tests-filter", TESTS_FILTER, "--inject", "smoke,tests",
                            "--budget", str(BUDGET_S)))


def test_every_phase_runs_on_the_simulator_and_the_summary_comes_last(full_run):
    out, r, summary, phases, _ = full_run
    assert r.returncode == 1, r.stdout + r.stderr  # the injected failures
    assert r.stdout.rstrip().endswith(summary.rstrip())  # printed last
    assert summary.startswith("# numgrad GPU check: FAILED")
    assert list(phases) == ["smoke", "bench", "digits", "tests"]
    assert "device: Numba's CUDA simulator, tiny sizes" in summary
    # smoke: one op of each family of the op table, the layers, Adam and dropout, all but the
    # injected failure passing
    smoke = phases["smoke"]
    assert smoke["status"] == "failed"
    names = [c["name"] for c in smoke["checks"]]
    assert len(names) >= 15 and {"op linear algebra: mm", "nn lstm", "optim adam",
                                 "random dropout"} <= set(names)
    assert [c["name"] for c in smoke["checks"] if not c["ok"]] == [names[0]]
    # bench: every CUDA workload on numgrad; PyTorch skipped with its reason
    assert phases["bench"]["status"] == "passed"
    for workload in ("c1_copy_64M_f32", "c2_elementwise_64M_f32", "c3_matmul_4096_f32",
                     "c4_mlp_step_b512", "c5_cnn_step_b128"):
        assert f"| {workload} |" in summary
    assert "of its copy" in summary and "TFLOP/s" in summary
    assert "skipped in bench: PyTorch CUDA comparison: the simulator has no GPU" in summary
    # digits: both models trained on the (simulated) GPU
    assert phases["digits"]["status"] == "passed"
    if importlib.util.find_spec("sklearn") is None:  # the example's data comes with it
        assert "skipped in digits: digits example: scikit-learn is not installed" in summary
    else:
        assert "digits mlp on the GPU: test accuracy" in summary
        assert "digits cnn on the GPU: test accuracy" in summary
    # tests: the selected tests/cuda tests ran under pytest, the first failed on purpose
    tests = phases["tests"]
    assert tests["status"] == "failed"
    assert len(tests["collected"]) == len(tests["checks"]) >= 5
    assert sum(not c["ok"] for c in tests["checks"]) == 1
    assert not tests["not_reached"]
    assert "| tests | failed |" in summary
    assert "no GPU compile (simulator)" in summary


def test_failures_are_listed_with_their_first_lines(full_run):
    out, _, summary, phases, _ = full_run
    failures = summary.split("## Failures (2)")[1]
    assert "* smoke: op arithmetic" in failures
    assert "AssertionError: injected failure (--inject smoke)" in failures
    failed_test = next(c["name"] for c in phases["tests"]["checks"] if not c["ok"])
    assert failed_test.startswith("tests/cuda/test_kernels_optim.py::")
    assert f"* tests: {failed_test}" in failures
    assert "AssertionError: injected failure (--inject tests)" in failures


def test_the_full_log_holds_every_phase_output(full_run):
    out, _, summary, _, _ = full_run
    log = (out / "gpu_check.log").read_text()
    for phase in ("smoke", "bench", "digits", "tests"):
        assert f"===== {phase}:" in log
    assert "1 failed" in log and "-m pytest" in log  # pytest's own report and command
    assert log.rstrip().endswith(summary.rstrip())


def test_a_hung_phase_is_killed_and_the_budget_leaves_the_rest_not_reached(tmp_path):
    r, summary, phases, took = gpu_check(tmp_path, "--budget", "20", "--phases",
                                         "smoke,tests", "--inject", "hang")
    assert r.returncode == 0, r.stdout + r.stderr  # nothing failed: nothing was checked
    assert summary.startswith("# numgrad GPU check: PASSED (incomplete: smoke, tests)")
    # the smoke test's share of the budget is 35%: 7 s, then it is killed
    assert phases["smoke"]["status"].startswith("timed out after")
    assert phases["smoke"]["status"].endswith(" in the device's name")  # where it hung
    assert 7 <= phases["smoke"]["seconds"] < 11  # SIGTERM, and SIGKILL 3 s later
    # the 11 s left are too few for pytest to start and collect: tests/cuda is not reached
    assert phases["tests"]["status"] == "not reached"
    assert "Phases not reached (budget spent): tests" in summary
    assert "## Not reached in tests" in summary
    assert "* tests/cuda/test_kernels_elementwise.py (all its tests)" in summary
    assert took < 30  # the budget and the interpreter's start


def test_tests_are_reported_not_run_without_pytest(tmp_path):
    r, summary, phases, _ = gpu_check(tmp_path, "--phases", "tests", "--inject", "no-pytest")
    assert r.returncode == 0
    assert phases["tests"]["status"] == "not run"
    assert "| tests | not run (pytest is not installed" in summary


TIMER_PROGRAM = """
import json, sys, time, types
sys.path.insert(0, {bench!r})
import numba
from numba.cuda.dispatcher import CUDADispatcher

def fake_compile(dispatcher, sig):  # a kernel compilation: adds an overload, takes 50 ms
    if sig not in dispatcher.overloads:
        time.sleep(0.05)
        dispatcher.overloads[sig] = object()
        if dispatcher.inner is not None:  # a device function compiled inside the kernel
            CUDADispatcher.compile(dispatcher.inner, sig)
    return dispatcher.overloads[sig]

CUDADispatcher.compile = fake_compile
from gpu_check_phases import CompileTimer
timer = CompileTimer().install()
f = numba.njit(lambda x: x + 1)
f(1)
f(1.0)
f(2)  # already compiled
device_fn = types.SimpleNamespace(overloads={{}}, inner=None)
kernel = types.SimpleNamespace(overloads={{}}, inner=device_fn)
CUDADispatcher.compile(kernel, "f4")
CUDADispatcher.compile(kernel, "f4")  # found in memory: not a compilation
print(json.dumps(timer.totals()))
"""


def test_the_compile_timer_counts_each_compilation_once():
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    code = TIMER_PROGRAM.format(bench=os.path.join(ROOT, "benchmarks"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    totals = json.loads(r.stdout.strip().splitlines()[-1])
    assert totals["cpu_n"] == 2 and totals["cpu_s"] > 0  # two CPU specializations
    assert totals["cuda_n"] == 1  # the kernel, its device function inside it
    assert 0.1 <= totals["cuda_s"] < 5  # both 50 ms, counted in the kernel's


def _load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tests_stopped_at_the_budget_name_the_test_they_were_in_and_the_rest():
    gpu_check = _load_script()
    ids = ["tests/cuda/a.py::t1", "tests/cuda/a.py::t2", "tests/cuda/b.py::t3"]
    records = [{"kind": "collected", "ids": ids},
               {"kind": "start", "name": ids[0]},
               {"kind": "check", "name": ids[0], "ok": True, "outcome": "passed",
                "compile": {"cuda_s": 2.0, "cuda_n": 3, "cpu_s": 1.0, "cpu_n": 1}},
               {"kind": "start", "name": ids[1]}]
    phase = gpu_check.judge({"name": "tests", "seconds": 300.2}, None, records, list)
    assert phase["status"] == "timed out after 300 s in tests/cuda/a.py::t2"
    assert phase["not_reached"] == ids[1:]
    assert phase["compile"]["cuda_n"] == 3
    # a process that dies in a check: a failure, with the last lines it printed
    phase = gpu_check.judge({"name": "smoke", "seconds": 5.0}, -11,
                            [{"kind": "start", "name": "op unary: neg"}],
                            lambda: ["Fatal Python error: Segmentation fault"])
    assert phase["status"] == "crashed (exit -11) in op unary: neg"
    assert phase["checks"] == [{"name": "smoke process in op unary: neg", "ok": False,
                                "error": "Fatal Python error: Segmentation fault"}]


def test_the_gpu_summary_has_pytorch_beside_numgrad_and_the_compile_times():
    """The summary of a run on a GPU (the simulator has no PyTorch rows, nor GPU compiles)."""
    gpu_check = _load_script()

    def bench(name, lib, seconds, work):
        return {"kind": "bench", "name": name, "lib": lib, "seconds": seconds, "work": work,
                "first_call_s": 1.5}

    compile_totals = {"cuda_s": 12.5, "cuda_n": 40, "cpu_s": 3.0, "cpu_n": 9}
    phases = [
        {"name": "smoke", "status": "passed", "seconds": 30.0, "compile": compile_totals,
         "checks": [{"name": "op unary: neg", "ok": True}],
         "records": [{"kind": "device", "name": "NVIDIA H100 80GB HBM3", "capability": [9, 0]}]},
        {"name": "bench", "status": "passed", "seconds": 20.0, "compile": compile_totals,
         "checks": [], "records": [
             bench("c1_copy_64M_f32", "numgrad", 0.0002, 2 ** 29),
             bench("c1_copy_64M_f32", "torch", 0.0002, 2 ** 29),
             bench("c2_elementwise_64M_f32", "numgrad", 0.0004, 3 * 2 ** 28),
             bench("c2_elementwise_64M_f32", "torch", 0.0003, 3 * 2 ** 28),
             bench("c3_matmul_4096_f32", "numgrad", 0.1, 2 * 4096 ** 3),
             bench("c3_matmul_4096_f32", "torch", 0.005, 2 * 4096 ** 3),
             bench("c4_mlp_step_b512", "numgrad", 0.002, None),
             bench("c4_mlp_step_b512", "torch", 0.001, None)]},
        {"name": "digits", "status": "passed", "seconds": 40.0, "checks": [], "records": [
            {"kind": "digits", "name": "mlp", "accuracy": 0.9733, "epochs": 40, "seconds": 9}]},
        {"name": "tests", "status": "timed out after 300 s", "seconds": 300.0, "checks": [
            {"name": "tests/cuda/a.py::t1", "ok": True, "outcome": "passed"},
            {"name": "tests/cuda/a.py::t2", "ok": True, "outcome": "skipped"}],
         "not_reached": ["tests/cuda/b.py::t3"], "compile": compile_totals},
    ]
    args = gpu_check.parse(["--out", "/tmp/x"])
    args.cache_dir = "/tmp/x/kernel-cache"
    env = {k: "1" for k in ("python", "commit", "date", *gpu_check.VERSIONED)}
    text, ok = gpu_check.summary_text(args, env, phases, used=400, budget=420)
    assert ok
    assert text.startswith("# numgrad GPU check: PASSED (incomplete: tests)")
    assert "device: NVIDIA H100 80GB HBM3 (compute capability (9, 0))" in text
    assert "| smoke | passed | 1 | 0 | 0 | 0 | 30.0 s | 12.5 s (40 GPU kernels); CPU 3.0 s (9) |"\
        in text
    assert "| tests | timed out after 300 s | 1 | 0 | 1 | 1 | 300.0 s |" in text
    assert "GPU kernel compilation: 37.5 s for 120 kernels" in text
    assert "| c1_copy_64M_f32 | 2684 GB/s | 2684 GB/s | 1.00 | 1.50 s |" in text
    assert "| c2_elementwise_64M_f32 | 2013 GB/s (0.75 of its copy) | 2684 GB/s (1.00 of its " \
        "copy) | 0.75 |" in text
    assert "| c3_matmul_4096_f32 | 1.37 TFLOP/s | 27.49 TFLOP/s | 0.05 |" in text
    assert "| c4_mlp_step_b512 | 2.000 ms | 1.000 ms | 0.50 |" in text
    assert "digits mlp on the GPU: test accuracy 97.33% after 40 epochs" in text
    assert "* tests/cuda/b.py::t3" in text
