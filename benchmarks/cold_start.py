"""Cold start: the digits example's first run on a cold kernel cache, beside a warm run and
the same script under PyTorch, each in a fresh process (wall time of the whole command).

"first run after install" has the kernels `pip install` compiles (numgrad/_prebuild.py, run
here once into a temporary folder: its time is printed) and an empty kernel cache; "nothing
prebuilt" has neither (NUMGRAD_PREBUILT=0): every kernel compiles in the program or its
background worker.

    python benchmarks/cold_start.py [--repeat 3] [--args "--epochs 1" ...] [--numgrad-path DIR]
        [--no-background]
    python benchmarks/cold_start.py --model gpt   # or lstm, cnn, generate: a model's first step
    python benchmarks/cold_start.py --record [--numgrad-path DIR]   # rewrite _common_kernels.py

"numgrad cold" runs with a new, empty NUMGRAD_CACHE_DIR; its background compile worker (see
numgrad/_background.py) may still be filling the cache when the program exits: the script
waits for it (time shown apart, not counted) before "numgrad warm" runs with that cache. The
PyTorch run is examples/digits.py with `import torch` in place of numgrad's imports. Rows
are interleaved, N rounds; the table shows the median and the range. --numgrad-path runs
another checkout's numgrad (e.g. `git archive HEAD` unpacked) for before/after comparisons;
--no-background sets NUMGRAD_BACKGROUND_COMPILE=0.
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DIGITS = os.path.join(ROOT, "numgrad", "examples", "digits.py")
COMMON = os.path.join(ROOT, "numgrad", "_common_kernels.py")
FIRST_STEP = os.path.join(HERE, "first_step.py")

TORCH_IMPORTS = {"import numgrad as torch\n": "import torch\n",
                 "from numgrad import nn\n": "from torch import nn\n",
                 "from numgrad.utils.data import": "from torch.utils.data import"}


def torch_script(folder):
    """examples/digits.py with PyTorch's imports, written into ``folder``."""
    with open(DIGITS) as fh:
        src = fh.read()
    for ours, theirs in TORCH_IMPORTS.items():
        assert ours in src, ours
        src = src.replace(ours, theirs)
    path = os.path.join(folder, "digits_torch.py")
    with open(path, "w") as fh:
        fh.write(src)
    return path


def _env(numgrad_path, cache=None, background=True, prebuilt="0"):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [numgrad_path, env.get("PYTHONPATH")] if p)
    env["NUMGRAD_PREBUILT"] = prebuilt
    if cache is not None:
        env["NUMGRAD_CACHE_DIR"] = cache
    if not background:
        env["NUMGRAD_BACKGROUND_COMPILE"] = "0"
    return env


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"{shlex.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return wall


WAIT = """
import glob, sys, time
from numgrad import _background
time.sleep(0.5)  # a worker started just before the program exited takes its lock
for d in glob.glob(sys.argv[1] + "/*/"):
    while _background.worker_running(d.rstrip("/")):
        time.sleep(0.05)
"""


def wait_for_worker(cache, env):
    """Seconds until the background compile worker of the cache ``cache`` is done."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", WAIT, cache], env=env, check=True)
    return time.perf_counter() - t0


def prebuild(numgrad_path, out):
    """The install step's kernels, compiled into ``out``/_prebuilt: (folder, seconds)."""
    dest = os.path.join(out, "_prebuilt")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "numgrad._prebuild", dest],
                       env=_env(numgrad_path), capture_output=True, text=True)
    if r.returncode:
        print(f"(no prebuilt kernels: {r.stderr.strip().splitlines()[-1:]})")
        return None, None
    return dest, time.perf_counter() - t0


def measure(args, repeat, numgrad_path, background, out, prebuilt, model=None):
    """The rows of one command: the digits example with ``args``, or with ``model`` (gpt,
    lstm) the first training step of that benchmark model (``first_step.py``)."""
    if model:
        ng_cmd = [sys.executable, FIRST_STEP, "numgrad", model]
        torch_cmd = [sys.executable, FIRST_STEP, "torch", model]
    else:
        extra = shlex.split(args) + ["--out", out]
        ng_cmd = [sys.executable, "-m", "numgrad.examples.digits", *extra]
        torch_cmd = [sys.executable, torch_script(out), *extra]
    rows = {"installed": [], "numgrad cold": [], "numgrad warm": [], "PyTorch": [],
            "worker after exit": []}
    for _ in range(repeat):
        if prebuilt:
            cache = tempfile.mkdtemp(prefix="numgrad-installed-")
            try:
                env = _env(numgrad_path, cache, background, prebuilt)
                rows["installed"].append(timed(ng_cmd, env))
                wait_for_worker(cache, env)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        cache = tempfile.mkdtemp(prefix="numgrad-cold-")
        try:
            env = _env(numgrad_path, cache, background)
            rows["numgrad cold"].append(timed(ng_cmd, env))
            rows["worker after exit"].append(wait_for_worker(cache, env) - 0.5)
            rows["numgrad warm"].append(timed(ng_cmd, env))
            wait_for_worker(cache, env)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        rows["PyTorch"].append(timed(torch_cmd, _env(None)))
    return rows


def fmt(times):
    if not times:
        return "-"
    return f"{statistics.median(times):.2f} s ({min(times):.2f}-{max(times):.2f})"


# --- recording the common kernels --------------------------------------------------------------

# then the first run of these benchmark rows (``workloads.py``)
MODEL_STEPS = ("8_gpt_step_sdpa", "12_encoder_step", "11_lstm_step", "7_cnn_step_28x28_b64",
               "9_gpt_step_manual", "10_gpt_generate_100")

RECORD = f"BENCHMARKS, MODEL_STEPS = {HERE!r}, {MODEL_STEPS!r}\n" + """
import json, sys
from numba.core.dispatcher import Dispatcher

from numgrad import _background
from numgrad.kernels import _jit

compiled, depth = [], [0]
_compile = Dispatcher.compile


def compile(self, sig):
    # every kernel the program compiles or loads (from the disk cache or the install's
    # prebuilt kernels), not the helpers compiled inside another kernel's compile
    if depth[0] == 0 and tuple(sig) not in self.overloads:
        compiled.append((self, tuple(sig)))
    depth[0] += 1
    try:
        return _compile(self, sig)
    finally:
        depth[0] -= 1


Dispatcher.compile = compile
from numgrad import __main__ as demo
demo.main(sys.argv[1:])
# then the first run of the benchmark models at their benchmark sizes (the sizes pick serial
# or multithreaded kernels)
sys.path.insert(0, BENCHMARKS)
import workloads
for name in MODEL_STEPS:
    workloads.WORKLOADS[name]("numgrad")()
out = []
for dispatcher, sig in compiled:
    text = _background.describe_signature(sig)
    name = _jit.kernel_name(dispatcher)
    if text is not None and _jit.find(*name) is dispatcher and list(name) + [text] not in out:
        out.append(list(name) + [text])
# a kernel picked by the CPU's vector width (the few-rows linear tiles) brings its twins, so
# that an install on a machine of the other kind prebuilds the one it runs
from numgrad.kernels.cpu import linalg
twins = [list(_jit.kernel_name(d)) for d in linalg._FEW_ROWS_LINEAR.values()]
for entry in list(out):
    if entry[:2] in twins:
        for twin in twins:
            if twin + entry[2:] not in out:
                out.insert(out.index(entry) + 1, twin + entry[2:])
print("RECORDED" + json.dumps(out))
"""

CHECK = """
import json, sys
from numgrad.kernels import _jit
print(json.dumps([e for e in json.loads(sys.argv[1]) if _jit.find(e[0], e[1]) is not None]))
"""


def record(out, numgrad_path=ROOT):
    """The kernels the demo (``python -m numgrad``: the tutorial part, then the digits example's
    MLP and CNN, one epoch each) and then the first run of the benchmark GPT (training step,
    masked-attention step, generation), TransformerEncoder, char-LSTM and CNN
    (``workloads.py``) compile or load, in the order they first call them, as
    numgrad/_common_kernels.py. The run starts on an empty kernel cache; kernels already
    prebuilt for ``numgrad_path`` load from there, which only makes the recording faster."""
    cache = tempfile.mkdtemp(prefix="numgrad-record-")
    try:
        env = _env(numgrad_path, cache, background=False, prebuilt="1")
        r = subprocess.run([sys.executable, "-c", RECORD, "--epochs", "1", "--out", out],
                           env=env, capture_output=True, text=True, check=True,
                           cwd=out)  # not a checkout's folder: its numgrad would come first
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    entries = json.loads(r.stdout.split("RECORDED", 1)[1])
    # keep the kernels a fresh process can find by name (not those made at run time)
    r = subprocess.run([sys.executable, "-c", CHECK, json.dumps(entries)], env=env,
                       capture_output=True, text=True, check=True, cwd=out)
    entries = json.loads(r.stdout)
    with open(COMMON) as fh:
        head = fh.read().split("KERNELS = ", 1)[0]
    lines = [head + "KERNELS = ("]
    lines += [f"    ({m!r}, {q!r}, {s!r})," for m, q, s in entries]
    with open(COMMON, "w") as fh:
        fh.write("\n".join(lines + [")", ""]))
    print(f"{len(entries)} kernels written to {COMMON}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--args", action="append", default=None,
                        help="the digits example's arguments (repeatable; default: none, "
                        "then --epochs 1)")
    parser.add_argument("--numgrad-path", default=ROOT)
    parser.add_argument("--no-background", action="store_true")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--model", choices=("gpt", "lstm", "cnn", "generate"),
                        help="time a benchmark model's first training step instead")
    opts = parser.parse_args()
    out = tempfile.mkdtemp(prefix="numgrad-cold-out-")
    try:
        if opts.record:
            return record(out, opts.numgrad_path)
        print(f"numgrad from {opts.numgrad_path}"
              f"{' (NUMGRAD_BACKGROUND_COMPILE=0)' if opts.no_background else ''}; "
              f"{opts.repeat} rounds, median (min-max)\n")
        prebuilt, seconds = prebuild(opts.numgrad_path, out)
        if prebuilt:
            print(f"install step's kernel compile (numgrad._prebuild): {seconds:.1f} s\n")
        print("| command | numgrad, first run after install | numgrad, nothing prebuilt | "
              "numgrad warm | PyTorch | worker busy after exit (nothing prebuilt) |")
        print("|---|---|---|---|---|---|")
        for args in [None] if opts.model else opts.args or ["", "--epochs 1"]:
            rows = measure(args, opts.repeat, opts.numgrad_path, not opts.no_background, out,
                           prebuilt, opts.model)
            cmd = (f"first_step.py {opts.model}" if opts.model
                   else textwrap.shorten(f"digits.py {args}".strip(), 60))
            print(f"| `{cmd}` | {fmt(rows['installed'])} | {fmt(rows['numgrad cold'])} | "
                  f"{fmt(rows['numgrad warm'])} | {fmt(rows['PyTorch'])} | "
                  f"{fmt(rows['worker after exit'])} |", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
