"""Cold start: multithreaded kernels run their serial twin while a background process
compiles them into the disk cache (numgrad/_background.py), and the common kernels are
compiled there too. The results are the same bits, the next process compiles nothing, and a
worker that fails never reaches the program. The programs with a worker start on a cache
holding all but the multithreaded kernels (the reference run's): what they compile is what
matters."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import COMPILE_EVENTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A conv/pool/batch-norm/relu step large enough for the multithreaded kernels (batch 64 of
# 16x16 planes), forward and backward; prints its results' bytes and what this process
# compiled (Numba's compile events: loads from the disk cache are not compiles).
_PROGRAM = """
import hashlib, json, sys
""" + COMPILE_EVENTS.replace("{", "{{").replace("}", "}}") + """
import numgrad as ng
from numgrad import _background
{setup}
ng.manual_seed(0)
x = ng.randn(64, 4, 16, 16, requires_grad=True)
conv = ng.nn.Conv2d(4, 8, 3, padding=1)
bn = ng.nn.BatchNorm2d(8)
y = ng.nn.functional.max_pool2d(bn(conv(x)).relu(), 2)
y.square().sum().backward()
digest = hashlib.sha256()
for t in (y, x.grad, conv.weight.grad, bn.weight.grad):
    digest.update(t.detach().numpy().tobytes())
proc = _background._STATE["proc"]
print(json.dumps({{"digest": digest.hexdigest(), "compiled": compiled,
                  "worker": proc is not None, "failed": _background._STATE["failed"]}}))
"""


def _run(cache, background=True, setup="", common=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMGRAD_")}
    env["NUMGRAD_PREBUILT"] = "0"  # a cold start with nothing compiled at install time
    env.update(PYTHONPATH=ROOT, NUMGRAD_CACHE_DIR=str(cache),
               NUMGRAD_BACKGROUND_COMPILE="1" if background else "0")
    if background and not common and str(cache) != "off":
        _skip_common(cache, env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_PROGRAM.format(setup=setup))],
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _skip_common(cache, env):
    """Mark the common kernels done, so the worker compiles only what the program defers
    (the whole list takes a minute of CPU)."""
    code = ("from numgrad import _background; from numgrad.kernels import _jit; "
            "_jit._write_private(_background._marker(_jit.CACHE_DIR), b'', sealed=False)")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=ROOT)


def _wait_for_worker(cache, timeout=600):
    """Wait until the worker the last program started has finished. It creates its lock file
    only once it has imported Numba, which can be after the program exited: wait for that
    file first, then for the lock to be released."""
    sys.path.insert(0, ROOT)
    from numgrad import _background

    deadline = time.monotonic() + timeout
    folders = []
    while not folders:
        assert time.monotonic() < deadline, "no background worker started"
        folders = [os.path.join(cache, name) for name in os.listdir(cache)
                   if os.path.exists(os.path.join(cache, name, _background.LOCK_NAME))]
        time.sleep(0.1)
    time.sleep(0.5)  # between creating its lock file and locking it
    for folder in folders:
        while _background.worker_running(folder):
            assert time.monotonic() < deadline, "the background worker did not finish"
            time.sleep(0.1)


_PARALLEL = {"_max_pool2d_2x2__parallel", "_max_pool2d_bwd__parallel",
             "_batch_norm_apply__parallel", "_batch_norm_bwd_input__parallel", "u_flat_par__relu"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The program without a background process: every kernel compiled where it is called."""
    cache = tmp_path_factory.mktemp("cache-off")
    return dict(_run(cache, background=False), cache=cache)


def _missing_the_multithreaded(reference, cache):
    """``cache``: the reference run's kernels but the multithreaded ones that a program defers
    to the worker, so the program misses only those (the rest loads, as after an earlier run)."""
    shutil.copytree(reference["cache"], cache)
    for folder in cache.iterdir():
        for f in folder.iterdir() if folder.is_dir() else ():
            if f.name.split(".")[1:2] and f.name.split(".")[1].split("-")[0] in _PARALLEL:
                f.unlink()


def test_reference_run_uses_the_multithreaded_kernels(reference):
    assert _PARALLEL & set(reference["compiled"]), reference["compiled"]
    assert not reference["worker"]


def test_background_compile_gives_the_same_bits_and_fills_the_cache(tmp_path, reference):
    _missing_the_multithreaded(reference, tmp_path / "cache")
    first = _run(tmp_path / "cache")
    assert first["worker"] and not first["failed"]
    assert first["digest"] == reference["digest"]  # the serial twins' results, bit for bit
    assert not _PARALLEL & set(first["compiled"]), first["compiled"]  # deferred
    _wait_for_worker(tmp_path / "cache")
    second = _run(tmp_path / "cache")
    assert second["compiled"] == []  # the worker compiled the multithreaded kernels
    assert not second["worker"]  # and nothing was left to defer
    assert second["digest"] == reference["digest"]


def test_a_failing_worker_never_reaches_the_program(tmp_path, reference):
    # the worker's interpreter exits at once with an error: the first deferral may still
    # write into its pipe; after that the program compiles everything itself
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    setup = f"_background.sys.executable = {str(fake)!r}"
    _missing_the_multithreaded(reference, tmp_path / "cache")
    out = _run(tmp_path / "cache", setup=setup)
    assert out["digest"] == reference["digest"]
    # a worker that cannot even start
    _missing_the_multithreaded(reference, tmp_path / "cache2")
    out = _run(tmp_path / "cache2", setup="_background.sys.executable = '/nonexistent/python'")
    assert out["failed"] and not out["worker"]
    assert out["digest"] == reference["digest"]
    assert _PARALLEL & set(out["compiled"])  # compiled in the program, as without a worker


def test_no_worker_without_a_disk_cache(reference):
    out = _run("off")
    assert not out["worker"]
    assert out["digest"] == reference["digest"]


def _common_sample(path):
    """A few entries of the common list, serial and multithreaded kernels both, written where
    ``NUMGRAD_COMMON_KERNELS`` reads them (the whole list is the install's: see .ci/run)."""
    from numgrad._common_kernels import KERNELS
    from numgrad.kernels import _jit

    def parallel(entry):
        return bool(_jit.find(*entry[:2]).targetoptions.get("parallel"))

    serial = [e for e in KERNELS if not parallel(e)]
    fewest_args = min((e for e in KERNELS if parallel(e)), key=lambda e: e[2].count(","))
    sample = serial[:2] + serial[-1:] + [fewest_args]
    path.write_text(json.dumps(sample))
    return sample


def test_common_kernels_are_precompiled_in_the_background(tmp_path):
    """The common list alone (no program kernels): after a cold run and its worker, a fresh
    process finds every common kernel in the disk cache, and the list's marker."""
    sample = _common_sample(tmp_path / "common.json")
    assert len(sample) == 4
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMGRAD_")}
    env["NUMGRAD_PREBUILT"] = "0"  # a cold start with nothing compiled at install time
    env.update(PYTHONPATH=ROOT, NUMGRAD_CACHE_DIR=str(tmp_path / "cache"),
               NUMGRAD_BACKGROUND_COMPILE="1", NUMGRAD_COMMON_KERNELS=str(tmp_path / "common.json"))
    start = textwrap.dedent("""
        import numgrad as ng
        ng.ones(3).neg().tolist()  # one kernel misses the cache: the worker starts
    """)
    subprocess.run([sys.executable, "-c", start], env=env, check=True, cwd=ROOT, timeout=300)
    # the worker compiles the list at the lowest priority, and CI runs its sanitizer pass
    # beside this one
    _wait_for_worker(tmp_path / "cache")
    check = textwrap.dedent("""
        import json
        from numgrad import _background
        from numgrad.kernels import _jit
        import os
        missing = [e for e in _background.common_kernels() if not _jit.is_cached(
            _jit.find(e[0], e[1]), _background.parse_signature(e[2]))]
        print(json.dumps({"missing": missing, "listed": len(_background.common_kernels()),
                          "marker": os.path.exists(_background._marker(_jit.CACHE_DIR))}))
    """)
    r = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True,
                       check=True, cwd=ROOT, timeout=300)
    out = json.loads(r.stdout)
    assert out == {"missing": [], "listed": 4, "marker": True}


def test_common_kernels_name_existing_kernels_and_signatures():
    from numgrad import _background, _common_kernels
    from numgrad.kernels import _jit

    assert _common_kernels.KERNELS
    for module, qualname, text in _common_kernels.KERNELS:
        assert _jit.find(module, qualname) is not None, (module, qualname)
        sig = _background.parse_signature(text)
        assert _background.describe_signature(sig) == text


def test_signature_text_round_trip():
    from numba import types

    from numgrad import _background

    sig = (types.Array(types.float32, 4, "A"), types.Array(types.int64, 2, "C"),
           types.float64, types.int64, types.boolean, types.Array(types.boolean, 1, "C"))
    text = _background.describe_signature(sig)
    assert _background.parse_signature(text) == sig
    readonly = types.Array(types.float32, 1, "C", readonly=True)
    assert _background.describe_signature((readonly,)) is None
    assert _background.describe_signature((types.unicode_type,)) is None


def test_serial_twins_are_declared_for_the_exact_pairs_only():
    from numgrad.kernels.cpu import elementwise as EW
    from numgrad.kernels.cpu import rows as ROWS
    from numgrad.kernels.cpu import windows as WIN

    assert WIN._POOL_2X2[1]._numgrad_serial is WIN._POOL_2X2[0]
    assert WIN._POOL_BWD[1]._numgrad_serial is WIN._POOL_BWD[0]
    assert EW.relu.nd_par._numgrad_serial is EW.relu.nd
    assert EW.relu.flat_par._numgrad_serial is EW.relu.flat
    # fastmath kernels (the softmax and layer norm rows) may vectorize differently in the
    # two: no twin
    for pair in (ROWS._SOFTMAX_ROWS, ROWS._LAYER_NORM, ROWS._LAYER_NORM_BWD):
        assert getattr(pair[1], "_numgrad_serial", None) is None


def test_background_switch():
    from numgrad import _background

    env = dict(os.environ)
    try:
        for value, on in [("0", False), ("off", False), ("1", True), ("", True)]:
            os.environ[_background.ENV] = value
            assert _background.enabled() is on
    finally:
        os.environ.clear()
        os.environ.update(env)
