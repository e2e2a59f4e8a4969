"""The GPU check in one command, from the checkout, with no install and no network:

    PYTHONPATH=. python benchmarks/gpu_check.py --out DIR [--budget 420] [--simulator]

Runs, each phase in its own process with a timeout carved from the remaining budget (so a hung
kernel cannot eat the budget), in this order:

1. smoke: one op of every family of the op table, the nn layers, a loss, Adam and dropout on
   'cuda', forward and backward, against the CPU;
2. bench: the CUDA workloads (``cuda_workloads.py``) beside PyTorch CUDA when it is
   importable: elementwise bandwidth as a share of a device copy, matmul TFLOP/s against
   cuBLAS, an MLP and a CNN training step;
3. digits: the digits example (``numgrad.examples.digits``) trained on the GPU, its accuracy;
4. tests: ``tests/cuda`` under pytest on the GPU, whatever time is left (the suite's kernels
   take longer to compile than the budget: see docs/development.md); the tests it did not
   reach are listed.

Kernels compile into a fresh cache under DIR (``NUMGRAD_CACHE_DIR``, ``NUMBA_CACHE_DIR``), so
the compile times reported are a first run's. Writes DIR/summary.md (pass/fail counts, each
failure's first lines, compile times, the numbers), DIR/results.json and the full log
DIR/gpu_check.log, prints the summary last and exits 1 if anything failed, else 0.

``--simulator`` runs the same logic on Numba's CUDA simulator at tiny sizes, without PyTorch
(``tests/test_gpu_check.py`` does, so the script cannot rot). ``--inject`` makes phases fail
or hang on purpose, for those tests.
"""

import argparse
import glob
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH_DIR)
PHASES_SCRIPT = os.path.join(BENCH_DIR, "gpu_check_phases.py")

# (phase, what it does, most of the budget it may take, least time worth starting it with);
# the tests take whatever is left
PHASES = [
    ("smoke", "every op family once, forward and backward, on the GPU against the CPU", 0.35,
     5.0),
    ("bench", "CUDA benchmarks beside PyTorch CUDA", 0.30, 5.0),
    ("digits", "the digits example trained on the GPU", 0.30, 5.0),
    ("tests", "tests/cuda on the GPU (pytest)", 1.0, 30.0),  # pytest starts and collects first
]
# tests/cuda files in the order they run: the kernels' own tests first, numgrad.compile last
TEST_ORDER = [
    "test_kernels_elementwise.py", "test_kernels_reduction.py", "test_kernels_linalg.py",
    "test_kernels_indexing.py", "test_kernels_nn.py", "test_kernels_optim.py",
    "test_device.py", "test_default_device_cuda.py", "test_autograd_cuda.py",
    "test_nn_cuda.py", "test_rnn_cuda.py", "test_benchmarks_cuda.py", "test_ops_cuda.py",
    "test_compile_cuda.py", "test_compile_cuda_fuse.py",
]
DEFAULT_BUDGET_S = 420
RESERVE_S = 2.0  # kept for writing the summary
KILL_GRACE_S = 3.0
INJECTABLE = ("smoke", "bench", "digits", "tests", "hang", "no-pytest")
VERSIONED = ("numpy", "numba", "numba-cuda", "torch", "pytest", "scikit-learn")


# --- running the phases --------------------------------------------------------------------

def test_files():
    """tests/cuda's test files, in the order they run."""
    found = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "tests", "cuda",
                                                                 "test_*.py"))}
    ordered = [f for f in TEST_ORDER if f in found] + sorted(found - set(TEST_ORDER))
    return [os.path.join("tests", "cuda", f) for f in ordered]


def child_env(args, cache):
    env = dict(os.environ)
    path = [ROOT, BENCH_DIR] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["NUMGRAD_CACHE_DIR"] = cache  # numgrad's CPU and GPU kernels (in <version>-<hash>/)
    env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")  # anything else Numba caches
    env["NUMGRAD_BACKGROUND_COMPILE"] = "0"  # no compile worker outliving a phase's timeout
    env["NUMGRAD_PREBUILT"] = "0"  # every kernel compiles: a first run's cost
    env["NUMGRAD_GPU_CHECK_INJECT"] = ",".join(args.inject)
    env["PYTHONUNBUFFERED"] = "1"
    if args.simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    return env


class Log:
    """The full log: the script's own lines and every phase's output, in order."""

    def __init__(self, path):
        self.path = path
        self.fh = open(path, "ab", buffering=0)

    def line(self, text, echo=True):
        self.fh.write((text + "\n").encode())
        if echo:
            print(text, flush=True)

    def offset(self):
        return self.fh.tell()

    def since(self, offset):
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")


def run_process(cmd, env, timeout, log):
    """Run ``cmd`` with its output in the log; (exit status or None if it timed out, seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.fh, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        code = proc.wait(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        code = None
        _kill(proc)
    except KeyboardInterrupt:  # the phase has its own session: Ctrl-C does not reach it
        _kill(proc)
        raise
    return code, time.perf_counter() - start


def _kill(proc):
    """End ``proc`` and everything it started: SIGTERM, then SIGKILL after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=KILL_GRACE_S)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def read_records(path):
    records = []
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                try:
                    records.append(json.loads(line))
                except ValueError:  # a line cut short by the kill
                    pass
    return records


def pytest_missing(env, args):
    """Why pytest cannot run the tests here, or None."""
    if "no-pytest" in args.inject:
        return "pytest is not installed (No module named 'pytest'; injected)"
    probe = subprocess.run([sys.executable, "-c", "import pytest"], env=env,
                           capture_output=True, text=True, timeout=120)
    if probe.returncode:
        lines = probe.stderr.strip().splitlines() or [f"exit {probe.returncode}"]
        return f"pytest is not importable ({lines[-1]})"
    return None


def run_phase(name, timeout, env, args, out, log):
    """One phase in its own process; its result as a dict."""
    results = os.path.join(out, f"{name}.jsonl")
    if os.path.exists(results):
        os.remove(results)
    phase = {"name": name, "timeout_s": round(timeout, 1)}
    start = time.perf_counter()
    if name == "tests":
        reason = pytest_missing(env, args)
        if reason:
            phase.update(status="not run", reason=reason, seconds=time.perf_counter() - start)
            return phase
        cmd = [sys.executable, "-m", "pytest", *test_files(), "-p", "gpu_check_pytest",
               "-p", "no:cacheprovider", "-o", "addopts=", "-q", "--rootdir", ROOT]
        if args.tests_filter:
            cmd += ["-k", args.tests_filter]
        env = dict(env, NUMGRAD_GPU_CHECK_RESULTS=results)
    else:
        cmd = [sys.executable, PHASES_SCRIPT, name, results]
        if args.simulator:
            cmd.append("--simulator")
    log.line(f"\n===== {name}: {dict(PHASES_WHAT)[name]} (timeout {timeout:.0f} s)")
    log.line("$ " + " ".join(cmd), echo=False)
    offset = log.offset()
    code, _ = run_process(cmd, env, timeout - (time.perf_counter() - start), log)
    phase["seconds"] = time.perf_counter() - start
    return judge(phase, code, read_records(results),
                 lambda: log.since(offset).strip().splitlines()[-4:])


def judge(phase, code, records, output_tail):
    """Fill in ``phase`` from its process's exit status (None: killed at its timeout), the
    records it wrote and, for a crash, the last lines of its output (``output_tail()``)."""
    name = phase["name"]
    phase["exit"] = code
    phase["records"] = records
    checks = {}
    for r in records:  # a test reported twice (call, then teardown) keeps its failure
        if r["kind"] == "check" and (r["name"] not in checks or not r["ok"]):
            checks[r["name"]] = r
    phase["checks"] = list(checks.values())
    compiles = [r["compile"] for r in records if r.get("compile")]
    phase["compile"] = compiles[-1] if compiles else None
    if name == "tests":
        collected = next((r["ids"] for r in records if r["kind"] == "collected"), None)
        phase["collected"] = collected
        phase["not_reached"] = ([i for i in collected if i not in checks] if collected is not None
                                else [f + " (all its tests: collection did not finish)"
                                      for f in test_files()])
    failed = [c for c in phase["checks"] if not c["ok"]]
    started = [r["name"] for r in records if r["kind"] == "start"]
    # what it was doing when it was stopped or crashed
    where = f" in {started[-1]}" if started and started[-1] not in checks else ""
    if code is None:
        phase["status"] = f"timed out after {phase['seconds']:.0f} s{where}"
    elif name == "tests" and code == 5:
        phase["status"] = "no tests collected"
        phase["not_reached"] = []
    elif failed or (name == "tests" and code == 1):
        phase["status"] = "failed"
    elif code != 0:
        phase["status"] = f"crashed (exit {code}){where}"
        phase["checks"].append({"name": f"{name} process{where}", "ok": False,
                                "error": "\n".join(output_tail())})
    else:
        phase["status"] = "passed"
    return phase


PHASES_WHAT = [(n, w) for n, w, _, _ in PHASES]


# --- the summary ---------------------------------------------------------------------------

def environment(args):
    env = {"python": platform.python_version(), "machine": platform.node(),
           "date": time.strftime("%Y-%m-%d %H:%M")}
    for pkg in VERSIONED:
        try:
            env[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            env[pkg] = "not installed"
    try:
        env["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                       capture_output=True, text=True,
                                       timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        env["commit"] = "?"
    if not args.simulator and shutil.which("nvidia-smi"):
        try:
            env["nvidia-smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                 "--format=csv,noheader"], capture_output=True, text=True,
                timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return env


def _counts(phase):
    checks = phase.get("checks", [])
    outcome = [c.get("outcome", "passed" if c["ok"] else "failed") for c in checks]
    return {"passed": outcome.count("passed"),
            "failed": sum(1 for c in checks if not c["ok"]),
            "skipped": outcome.count("skipped"),
            "not reached": len(phase.get("not_reached") or [])}


def _compile_cell(phase):
    c = phase.get("compile")
    if not c:
        return "-"
    gpu = "no GPU compile (simulator)" if phase.get("simulator") else (
        f"{c['cuda_s']:.1f} s ({c['cuda_n']} GPU kernels)")
    return f"{gpu}; CPU {c['cpu_s']:.1f} s ({c['cpu_n']})"


def bench_table(phase):
    rows = {}
    for r in phase.get("records", []):
        if r["kind"] == "bench":
            rows.setdefault(r["name"], {})[r["lib"]] = r
    if not rows:
        return []
    copy = {lib: r["work"] / r["seconds"] for lib, r in rows.get("c1_copy_64M_f32", {}).items()}
    lines = ["| workload | numgrad | PyTorch CUDA | numgrad / PyTorch | numgrad first call |",
             "|---|---|---|---|---|"]
    for name, libs in rows.items():
        cells, value = [], {}
        for lib in ("numgrad", "torch"):
            r = libs.get(lib)
            if r is None:
                cells.append("-")
                continue
            t, work = r["seconds"], r["work"]
            if name.startswith(("c1", "c2")):
                value[lib] = work / t
                cell = f"{work / t / 1e9:.0f} GB/s"
                if name.startswith("c2") and lib in copy:
                    cell += f" ({work / t / copy[lib]:.2f} of its copy)"
            elif name.startswith("c3"):
                value[lib] = work / t
                cell = f"{work / t / 1e12:.2f} TFLOP/s"
            else:
                value[lib] = 1 / t
                cell = f"{t * 1e3:.3f} ms"
            cells.append(cell)
        ratio = "-"
        if len(value) == 2:  # speed ratio: above 1, numgrad is faster
            ratio = f"{value['numgrad'] / value['torch']:.2f}"
        first = libs.get("numgrad", {}).get("first_call_s")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio} | "
                     f"{'-' if first is None else f'{first:.2f} s'} |")
    return lines


def summary_text(args, env, phases, used, budget):
    failures = [(p["name"], c) for p in phases for c in p.get("checks", []) if not c["ok"]]
    ok = not failures
    incomplete = [p["name"] for p in phases if p["status"] not in ("passed", "failed")]
    verdict = "FAILED" if not ok else "PASSED" + (
        f" (incomplete: {', '.join(incomplete)})" if incomplete else "")
    device = next((r for p in phases for r in p.get("records", []) if r["kind"] == "device"),
                  None)
    unknown = ("Numba's CUDA simulator" if args.simulator
               else "unknown (the smoke test did not report it)")
    lines = [
        f"# numgrad GPU check: {verdict}",
        "",
        f"device: {device['name'] if device else unknown}"
        + (f" (compute capability {tuple(device['capability'])})"
           if device and device.get('capability') else "")
        + (", tiny sizes" if args.simulator else ""),
        "versions: " + ", ".join(f"{k} {env[k]}" for k in ("python",) + VERSIONED)
        + f"; commit {env['commit']}; {env['date']}",
    ]
    if env.get("nvidia-smi"):
        lines.append(f"nvidia-smi: {env['nvidia-smi']}")
    lines += [f"budget {budget:.0f} s, used {used:.0f} s; kernel cache {args.cache_dir}", "",
              "| phase | status | passed | failed | skipped | not reached | time | "
              "kernel compile |", "|---|---|---|---|---|---|---|---|"]
    for p in phases:
        n = _counts(p)
        status = p["status"] + (f" ({p['reason']})" if p.get("reason") else "")
        secs = f"{p['seconds']:.1f} s" if "seconds" in p else "-"
        lines.append(f"| {p['name']} | {status} | {n['passed']} | {n['failed']} | "
                     f"{n['skipped']} | {n['not reached']} | {secs} | {_compile_cell(p)} |")
    lines.append("")
    total = [p["compile"] for p in phases if p.get("compile")]
    if total and not args.simulator:
        lines.append(f"GPU kernel compilation: {sum(c['cuda_s'] for c in total):.1f} s for "
                     f"{sum(c['cuda_n'] for c in total)} kernels (CPU kernels: "
                     f"{sum(c['cpu_s'] for c in total):.1f} s for "
                     f"{sum(c['cpu_n'] for c in total)})")
    skips = [(p["name"], r) for p in phases for r in p.get("records", []) if r["kind"] == "skip"]
    for name, r in skips:
        lines.append(f"skipped in {name}: {r['name']}: {r['reason']}")
    if failures:
        lines += ["", f"## Failures ({len(failures)})", ""]
        for phase, c in failures:
            lines.append(f"* {phase}: {c['name']}")
            lines += ["    " + line for line in (c.get("error") or "").splitlines()[:4]]
    bench = next((p for p in phases if p["name"] == "bench"), {})
    table = bench_table(bench)
    digits = [r for p in phases for r in p.get("records", []) if r["kind"] == "digits"]
    if table or digits:
        lines += ["", "## Numbers" + (" (simulator: tiny sizes, not speeds)"
                                      if args.simulator else ""), ""]
    if table:
        lines += ["Medians of timed runs, each waiting for the GPU; ratio above 1: numgrad is "
                  "faster.", ""] + table + [""]
    for r in digits:
        lines.append(f"digits {r['name']} on the GPU: test accuracy {100 * r['accuracy']:.2f}% "
                     f"after {r['epochs']} epoch{'s' if r['epochs'] != 1 else ''} "
                     f"({r['seconds']:.1f} s with compilation)")
    for p in phases:
        missing = p.get("not_reached") or []
        if missing:
            lines += ["", f"## Not reached in {p['name']} ({len(missing)})", ""]
            lines += [f"* {m}" for m in missing[:40]]
            if len(missing) > 40:
                lines.append(f"* ... and {len(missing) - 40} more (all in results.json)")
    unreached = [p["name"] for p in phases if p["status"] == "not reached"]
    if unreached:
        lines += ["", "Phases not reached (budget spent): " + ", ".join(unreached)]
    lines += ["", f"Full log: {os.path.join(args.out, 'gpu_check.log')}"]
    return "\n".join(lines) + "\n", ok


# --- the command ---------------------------------------------------------------------------

def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for the summary, log and kernel cache")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                   help=f"seconds for all phases together (default {DEFAULT_BUDGET_S})")
    p.add_argument("--simulator", action="store_true",
                   help="run on Numba's CUDA simulator at tiny sizes, without PyTorch")
    p.add_argument("--phases", default=",".join(p[0] for p in PHASES),
                   help="the phases to run, comma-separated (default: all, in order)")
    p.add_argument("--tests-filter", default=None, metavar="EXPR",
                   help="pytest -k expression selecting tests/cuda tests")
    p.add_argument("--cache-dir", default=None,
                   help="kernel cache folder, as NUMGRAD_CACHE_DIR (default DIR/kernel-cache, "
                   "emptied first: a first run's compile times)")
    p.add_argument("--inject", default="", help="for the tests of this script: comma-separated "
                   f"failures to cause, of {', '.join(INJECTABLE)}")
    args = p.parse_args(argv)
    args.out = os.path.abspath(args.out)
    args.phases = [s for s in args.phases.split(",") if s]
    args.inject = [s for s in args.inject.split(",") if s]
    for bad in set(args.phases) - {p[0] for p in PHASES}:
        p.error(f"unknown phase {bad!r}")
    for bad in set(args.inject) - set(INJECTABLE):
        p.error(f"unknown --inject {bad!r}")
    return args


def main(argv=None):
    args = parse(argv)
    start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    if args.cache_dir is None:
        args.cache_dir = os.path.join(args.out, "kernel-cache")
        shutil.rmtree(args.cache_dir, ignore_errors=True)  # a fresh cache: a first run's cost
    args.cache_dir = os.path.abspath(args.cache_dir)
    os.makedirs(args.cache_dir, mode=0o700, exist_ok=True)
    log_path = os.path.join(args.out, "gpu_check.log")
    if os.path.exists(log_path):
        os.remove(log_path)
    log = Log(log_path)
    env = environment(args)
    log.line(f"numgrad GPU check{' (simulator)' if args.simulator else ''}: budget "
             f"{args.budget:.0f} s, phases {', '.join(args.phases)}; writing {args.out}")
    log.line(json.dumps(env), echo=False)
    cenv = child_env(args, args.cache_dir)
    phases = []
    for name, _, cap, least in PHASES:
        if name not in args.phases:
            continue
        left = args.budget - (time.perf_counter() - start) - RESERVE_S
        timeout = min(cap * args.budget, left)
        if timeout < least:
            phase = {"name": name, "status": "not reached"}
            if name == "tests":
                phase["not_reached"] = [f + " (all its tests)" for f in test_files()]
            log.line(f"\n===== {name}: not reached ({max(left, 0):.0f} s of the budget left)")
        else:
            phase = run_phase(name, timeout, cenv, args, args.out, log)
            n = _counts(phase)
            log.line(f"----- {name}: {phase['status']}: {n['passed']} passed, {n['failed']} "
                     f"failed, {n['skipped']} skipped, {n['not reached']} not reached "
                     f"({phase['seconds']:.1f} s)")
        phase["simulator"] = args.simulator
        phases.append(phase)
    used = time.perf_counter() - start
    text, ok = summary_text(args, env, phases, used, args.budget)
    with open(os.path.join(args.out, "summary.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump({"ok": ok, "environment": env, "budget_s": args.budget, "used_s": used,
                   "simulator": args.simulator, "phases": phases}, fh, indent=1, default=str)
    log.line("\n" + text, echo=False)
    print("\n" + text, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
