"""Kernels compiled at install time (numgrad/_prebuild.py, run by setup.py's build step): a
program's first run loads them instead of compiling them, gets the same bits, starts no
background compile of the common kernels, and never reads a prebuilt folder that someone
other than its owner (or root) could have written; a damaged file is ignored with a warning.
Each scenario runs in a fresh interpreter (where the folder is found is decided at load)."""

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import COMPILE_EVENTS

from numgrad import _prebuild
from numgrad._common_kernels import KERNELS
from numgrad.kernels import _jit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = sorted({qualname for _, qualname, _ in KERNELS})

posix = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")

# A program run in a fresh interpreter: prints the bytes of its results, the kernels this process
# compiled (Numba's compile events; loads from a cache are not compiles), numgrad's cache
# warnings and the prebuilt folder used. Its body is one of the two below.
_HEAD = """
import hashlib, json, warnings
""" + COMPILE_EVENTS + """
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numgrad as ng
    from numgrad import _background
    from numgrad.kernels import _jit
    import numgrad.nn.functional as F
    ng.manual_seed(0)
    digest = hashlib.sha256()
"""
# One MLP training step (random init, Linear, ReLU, cross-entropy, Adam) and one CNN step
TRAIN = """
    x, y = ng.rand(64, 1, 8, 8), ng.randint(0, 10, (64,))
    mlp = ng.nn.Sequential(ng.nn.Flatten(), ng.nn.Linear(64, 32), ng.nn.ReLU(),
                           ng.nn.Linear(32, 10))
    cnn = ng.nn.Sequential(ng.nn.Conv2d(1, 8, 3, padding=1), ng.nn.BatchNorm2d(8),
                           ng.nn.ReLU(), ng.nn.MaxPool2d(2), ng.nn.Flatten(),
                           ng.nn.Linear(128, 10))
    for model in (mlp, cnn):
        opt = ng.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(2):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        for p in model.parameters():
            digest.update(p.detach().numpy().tobytes())
"""
# A few common kernels (random init, ReLU): enough to read the prebuilt folder, if it is read
SMALL = """
    digest.update(ng.rand(64).relu().numpy().tobytes())
"""
_TAIL = """
    ng.ones(3).neg().tolist()  # a kernel outside the common list
    worker = _background._STATE["proc"] is not None
    _background.stop()
print(json.dumps({"digest": digest.hexdigest(), "compiled": compiled,
                  "prebuilt": _jit.PREBUILT_DIR, "worker": worker,
                  "warnings": [str(w.message) for w in caught
                               if issubclass(w.category, _jit.CacheWarning)]}))
"""


def _run(cache, prebuilt, background=False, pythonpath=(), body=TRAIN, common=None):
    """The program in a fresh interpreter, ``common`` the file of the common kernel list."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMGRAD_")}
    env.update(PYTHONPATH=os.pathsep.join([ROOT, *map(str, pythonpath)]),
               NUMGRAD_CACHE_DIR=str(cache), NUMGRAD_BACKGROUND_COMPILE=str(int(background)))
    if prebuilt is not None:
        env["NUMGRAD_PREBUILT"] = str(prebuilt)
    if common is not None:
        env["NUMGRAD_COMMON_KERNELS"] = str(common)
    code = textwrap.dedent(_HEAD) + body + _TAIL
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The program with nothing prebuilt: it compiles the common kernels itself."""
    return _run(tmp_path_factory.mktemp("cold"), prebuilt=0)


@pytest.fixture(scope="module")
def small_reference(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("cold-small"), prebuilt=0, body=SMALL)


@pytest.fixture(scope="module")
def built(tmp_path_factory, reference, small_reference):
    """A ``_prebuilt`` folder as the build step writes it: (its root, the version folder, the
    list's file). The list is the common kernels the programs use (NUMGRAD_COMMON_KERNELS):
    the install builds the whole list, and .ci/run checks it holds every kernel."""
    used = set(reference["compiled"]) | set(small_reference["compiled"])
    kernels = [e for e in KERNELS if e[1] in used]
    common = tmp_path_factory.mktemp("list") / "common.json"
    common.write_text(json.dumps(kernels))
    dest = tmp_path_factory.mktemp("package") / "_prebuilt"
    saved = os.environ.get("NUMGRAD_COMMON_KERNELS")
    os.environ["NUMGRAD_COMMON_KERNELS"] = str(common)  # the marker names this list
    try:
        summary = _prebuild.build(str(dest), jobs=2)
    finally:
        if saved is None:
            del os.environ["NUMGRAD_COMMON_KERNELS"]
        else:
            os.environ["NUMGRAD_COMMON_KERNELS"] = saved
    assert summary["failed"] == [] and summary["kernels"] == len(kernels) > 10, summary
    return dest, summary["folder"], common


def test_reference_compiles_the_common_kernels(reference):
    assert set(COMMON) & set(reference["compiled"]), reference["compiled"]
    assert reference["prebuilt"] is None and reference["warnings"] == []


def test_prebuilt_kernels_load_instead_of_compiling(tmp_path, built, reference):
    out = _run(tmp_path / "cache", prebuilt=built[0], common=built[2])
    assert out["prebuilt"] == built[1]
    assert not set(COMMON) & set(out["compiled"]), out["compiled"]
    assert "u_flat__neg" in out["compiled"]  # what is not prebuilt still compiles
    assert out["digest"] == reference["digest"] and out["warnings"] == []
    cached = os.listdir(os.path.join(tmp_path / "cache", os.path.basename(built[1])))
    assert not [f for f in cached if f.split(".")[1].split("-")[0] in COMMON], cached


def test_folder_layout(built):
    files = os.listdir(built[1])
    assert all(f.endswith(_prebuild.KEEP) for f in files), files
    assert sum(f.endswith(".done") for f in files) == 1
    if hasattr(os, "getuid"):
        assert all(os.stat(os.path.join(built[1], f)).st_mode & 0o777 == 0o644 for f in files)


def test_no_background_compile_of_what_is_prebuilt(tmp_path, built):
    out = _run(tmp_path / "cache", prebuilt=built[0], background=True, common=built[2])
    assert not out["worker"], "the common kernels were prebuilt for this machine"


def test_prebuilt_for_another_machine_leaves_the_background_compile_on(tmp_path, built):
    """The marker names the machine the kernels were built for; on another, the worker runs."""
    copy = tmp_path / "_prebuilt"
    shutil.copytree(built[0], copy)
    folder = copy / os.path.basename(built[1])
    marker = next(f for f in folder.iterdir() if f.name.endswith(".done"))
    marker.chmod(0o600)
    marker.write_bytes(_jit.seal(pickle.dumps(("x86_64-unknown-linux-gnu", "other", ""))))
    marker.chmod(0o644)
    out = _run(tmp_path / "cache", prebuilt=copy, background=True, common=built[2])
    assert out["worker"]


def test_a_checkout_finds_the_installed_kernels(tmp_path, built, reference):
    """``python -m numgrad`` run from a source checkout imports the checkout's numgrad; after
    ``pip install .`` it uses the installed distribution's prebuilt folder (same sources)."""
    if os.path.isdir(os.path.join(ROOT, "numgrad", "_prebuilt", os.path.basename(built[1]))):
        pytest.skip("this checkout has its own prebuilt kernels (an editable install)")
    site = tmp_path / "site"
    shutil.copytree(built[0], site / "numgrad" / "_prebuilt")
    meta = site / "numgrad-0.0.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: numgrad\nVersion: 0.0.0\n")
    out = _run(tmp_path / "cache", prebuilt=None, pythonpath=[site], common=built[2])
    assert out["prebuilt"] == str(site / "numgrad" / "_prebuilt" / os.path.basename(built[1]))
    assert not set(COMMON) & set(out["compiled"])
    assert out["digest"] == reference["digest"]


class _MakesMarker:
    """Unpickling this creates the file ``marker``: a stand-in for an attacker's code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _planted(tmp_path, built, marker):
    """A copy of the prebuilt folder whose every file runs code when unpickled."""
    copy = tmp_path / "_prebuilt"
    folder = copy / os.path.basename(built[1])
    shutil.copytree(built[0], copy)
    for f in folder.iterdir():
        f.write_bytes(_jit.seal(pickle.dumps(_MakesMarker(str(marker)))))
    return copy, folder


@posix
@pytest.mark.parametrize("where, mode", [("folder", 0o777), ("folder", 0o775),
                                         ("root", 0o777), ("root", 0o757), ("files", 0o666),
                                         ("files", 0o664)])
def test_prebuilt_writable_by_others_is_never_read(tmp_path, built, small_reference, where,
                                                  mode):
    marker = tmp_path / "marker"
    copy, folder = _planted(tmp_path, built, marker)
    if where == "files":
        for f in folder.iterdir():
            f.chmod(mode)
    else:
        (folder if where == "folder" else copy).chmod(mode)
    out = _run(tmp_path / "cache", prebuilt=copy, body=SMALL, common=built[2])
    assert not marker.exists(), "a planted prebuilt file was unpickled"
    assert out["digest"] == small_reference["digest"] and out["warnings"] == []


@posix
def test_planted_prebuilt_would_run_from_a_closed_folder(tmp_path, built):
    """Control for the test above: the same files in a folder closed to others are read."""
    marker = tmp_path / "marker"
    copy, _ = _planted(tmp_path, built, marker)
    _run(tmp_path / "cache", prebuilt=copy, body=SMALL, common=built[2])
    assert marker.exists()


def test_damaged_prebuilt_file_is_ignored_with_a_warning(tmp_path, built, reference):
    copy = tmp_path / "_prebuilt"
    shutil.copytree(built[0], copy)
    folder = copy / os.path.basename(built[1])
    damaged = [f for f in folder.iterdir() if f.name.startswith("nn.adam_step")
               and f.name.endswith(".nbc")]
    assert damaged
    for f in damaged:
        blob = bytearray(f.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        f.write_bytes(bytes(blob))
    before = {f: f.read_bytes() for f in damaged}
    out = _run(tmp_path / "cache", prebuilt=copy, common=built[2])
    assert out["digest"] == reference["digest"]
    assert "adam_step" in out["compiled"]
    assert any("ignored a damaged prebuilt kernel file" in w for w in out["warnings"]), out
    assert {f: f.read_bytes() for f in damaged} == before  # the package's files stay


def test_shares_keep_each_function_in_one_process():
    shares = _prebuild.shares(KERNELS, 3)
    assert sorted(map(tuple, sum(shares, []))) == sorted(KERNELS)
    owner = {}
    for i, share in enumerate(shares):
        for module, qualname, _ in share:
            assert owner.setdefault((module, qualname), i) == i
