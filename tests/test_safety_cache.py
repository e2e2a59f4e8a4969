"""The kernel disk cache can neither run someone else's code nor break a run.

Loading a cache file unpickles it, so numgrad reads only a folder that this user owns with
mode 0700 (files 0600), never a shared or predictable one, and compiles in memory with one
warning otherwise. A damaged cache file is discarded with a warning and the kernel recompiles.
Where the cache lives is decided when ``numgrad.kernels._jit`` loads, so every scenario runs
in a fresh interpreter with its own HOME / NUMGRAD_CACHE_DIR.
"""

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numgrad.kernels import _jit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OTHER_UID = 12345

posix = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="chown to another user needs root")

# Computes exp (one small kernel) and reports what the cache did: numgrad's cache warnings,
# and the disk-cache hits and misses of numgrad's kernels.
_PROBE = """
    import gc, json, os, warnings
    if {umask} is not None:
        os.umask({umask})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import numgrad as ng
        from numgrad.kernels import _jit
        out = ng.tensor([1.0, 2.0]).exp().tolist() if {compute} else None
    from numba.core.dispatcher import Dispatcher
    ours = [d for d in gc.get_objects()
            if isinstance(d, Dispatcher) and isinstance(d._cache, _jit._GuardedCache)]
    print(json.dumps({{
        "dir": _jit.CACHE_DIR, "cache": _jit.CACHE, "out": out,
        "warnings": [str(w.message) for w in caught if issubclass(w.category, _jit.CacheWarning)],
        "hits": sum(sum(d._cache_hits.values()) for d in ours),
        "misses": sum(sum(d._cache_misses.values()) for d in ours)}}))
"""


def _right(out):
    """exp([1, 2]) in float32, as NumPy computes it (numgrad's exp may differ by an ulp)."""
    return out is not None and np.allclose(out, np.exp(np.float32([1.0, 2.0])), rtol=1e-6)


def _probe(home, compute=True, umask=None, **env):
    """Run the probe with HOME=``home`` and no other cache setting unless given in ``env``."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("NUMGRAD_CACHE_DIR", "XDG_CACHE_HOME", "NUMBA_BOUNDSCHECK")}
    full.update(HOME=str(home), PYTHONPATH=ROOT, **{k: str(v) for k, v in env.items()})
    code = textwrap.dedent(_PROBE.format(umask=umask, compute=compute))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=full, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _mode(path):
    return os.stat(path).st_mode & 0o777


def _files(path):
    return sorted(os.listdir(path))


class _MakesMarker:
    """Unpickling this creates the file ``marker``: a stand-in for an attacker's code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache root holding the exp kernel's files; returns (root, version folder name)."""
    root = tmp_path_factory.mktemp("warm") / "cache"
    r = _probe(root.parent, NUMGRAD_CACHE_DIR=root)
    assert r["cache"] and _right(r["out"]) and r["misses"] >= 1
    return root, os.path.basename(r["dir"])


def _plant(folder, names, marker, mode, uid):
    """``folder`` holding a would-be index (and data file) under each of ``names`` whose
    unpickling creates ``marker``, sealed so numgrad would read it from a trusted folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(_jit.seal(pickle.dumps(_MakesMarker(str(marker)))))
    folder.chmod(mode)
    if uid is not None:
        os.chown(folder, uid, -1)


# --- (a) a folder that is not private is never read -------------------------------------------

PLANTS = [
    pytest.param("version", 0o700, OTHER_UID, id="version-folder-of-another-user", marks=as_root),
    pytest.param("version", 0o777, None, id="version-folder-0777"),
    pytest.param("version", 0o755, None, id="version-folder-0755"),
    pytest.param("root", 0o755, OTHER_UID, id="numgrad-folder-of-another-user", marks=as_root),
    pytest.param("root", 0o777, None, id="numgrad-folder-0777"),
    pytest.param("root", 0o775, None, id="numgrad-folder-group-writable"),
]


@posix
@pytest.mark.parametrize("where, mode, uid", PLANTS)
def test_planted_folder_is_never_read(tmp_path, warm, where, mode, uid):
    names = _files(warm[0] / warm[1])
    marker = tmp_path / "marker"
    version = tmp_path / "home" / ".cache" / "numgrad" / warm[1]
    if where == "root":  # a private version folder inside a folder others control
        _plant(version, names, marker, 0o700, uid)
        version.parent.chmod(mode)
        if uid is not None:
            os.chown(version.parent, uid, -1)
    else:
        _plant(version, names, marker, mode, uid)
    planted = version if where == "version" else version.parent
    before = (_files(version), _mode(planted), os.stat(planted).st_uid)
    r = _probe(tmp_path / "home")
    assert not marker.exists(), "a planted cache file was unpickled"
    assert _right(r["out"]) and not r["cache"] and r["dir"] is None
    assert len(r["warnings"]) == 1 and "cache is off" in r["warnings"][0], r["warnings"]
    assert str(planted) in r["warnings"][0]
    assert (_files(version), _mode(planted), os.stat(planted).st_uid) == before  # untouched


@posix
def test_planted_file_would_run_from_a_trusted_folder(tmp_path, warm):
    """Control for the test above: the planted files are ones numgrad would unpickle if their
    folder passed the checks (so that test shows the checks, not a format mismatch, saving us)."""
    marker = tmp_path / "marker"
    _plant(tmp_path / "home" / ".cache" / "numgrad" / warm[1], _files(warm[0] / warm[1]),
           marker, 0o700, None)
    _probe(tmp_path / "home")
    assert marker.exists()


@posix
@pytest.mark.parametrize("mode, uid", [pytest.param(0o777, None, id="0777"),
                                       pytest.param(0o770, None, id="group-writable"),
                                       pytest.param(0o700, OTHER_UID, id="another-user",
                                                    marks=as_root)])
def test_explicit_cache_dir_must_be_ours_and_closed(tmp_path, mode, uid):
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    chosen.chmod(mode)
    if uid is not None:
        os.chown(chosen, uid, -1)
    r = _probe(tmp_path, NUMGRAD_CACHE_DIR=chosen)
    assert _right(r["out"]) and not r["cache"]
    assert len(r["warnings"]) == 1 and str(chosen) in r["warnings"][0]
    assert _files(chosen) == [] and _mode(chosen) == mode


@posix
def test_explicit_cache_dir_is_created_private(tmp_path):
    chosen = tmp_path / "a" / "b"
    r = _probe(tmp_path, umask=0, NUMGRAD_CACHE_DIR=chosen)
    assert r["cache"] and r["warnings"] == [] and r["dir"].startswith(str(chosen))
    for d in (tmp_path / "a", chosen, r["dir"]):
        assert _mode(d) == 0o700, d


# --- (b) no shared fallback -------------------------------------------------------------------

@posix
def test_no_tmp_fallback_when_the_user_cache_is_unusable(tmp_path):
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    (home / ".cache").write_text("not a folder")  # unusable even by root
    r = _probe(home, TMPDIR=tmp)
    assert _right(r["out"]) and not r["cache"] and r["dir"] is None
    assert len(r["warnings"]) == 1 and "cache is off" in r["warnings"][0]
    assert os.listdir(tmp) == []


# --- (c) private whatever the umask ------------------------------------------------------------

@posix
def test_umask_000_still_gives_a_private_cache(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    r = _probe(home, umask=0)
    assert r["cache"] and r["warnings"] == [] and _right(r["out"])
    version = r["dir"]
    assert version.startswith(str(home / ".cache" / "numgrad"))
    for d in (home / ".cache", home / ".cache" / "numgrad", version):
        assert _mode(d) == 0o700, d
    files = _files(version)
    assert any(f.endswith(".nbi") for f in files) and any(f.endswith(".nbc") for f in files)
    assert all(_mode(os.path.join(version, f)) == 0o600 for f in files), files


# --- (d) damaged files are discarded, recompiled and rewritten --------------------------------

def _flip(data):
    data = bytearray(data)
    for i in (len(data) // 3, len(data) // 2, 2 * len(data) // 3):
        data[i] ^= 0xFF
    return bytes(data)


def _resealed_with_bad_data(data):
    key, _ = pickle.loads(data[len(_jit.seal(b"")):])  # a valid entry for the right key...
    return _jit.seal(pickle.dumps((key, ("not", "a", "compile result"))))  # ...that won't load


DAMAGE = {
    "empty": lambda d: b"",
    "half": lambda d: d[: len(d) // 2],
    "random-bytes": lambda d: random.Random(0).randbytes(len(d)),
    "plain-pickle-of-another-object": lambda d: pickle.dumps({"not": "a cache entry"}),
    "flipped-bytes": _flip,
    "sealed-wrong-object": lambda d: _jit.seal(pickle.dumps(["wrong", "object"])),
    "sealed-garbage": lambda d: _jit.seal(b"\x80\x04garbage that is no pickle"),
    "folder-in-its-place": None,
}
CASES = [(kind, how) for kind in (".nbi", ".nbc") for how in DAMAGE]
CASES.remove((".nbc", "folder-in-its-place"))  # the same read error as for the index
CASES.append((".nbc", "sealed-entry-that-does-not-rebuild"))


@pytest.mark.parametrize("kind, how", CASES, ids=[f"{k[1:]}-{h}" for k, h in CASES])
def test_damaged_cache_file_is_rebuilt(tmp_path, warm, kind, how):
    root = tmp_path / "cache"
    shutil.copytree(warm[0], root)
    version = root / warm[1]
    targets = [version / f for f in _files(version) if f.endswith(kind)]
    assert targets
    for path in targets:
        if how == "folder-in-its-place":
            path.unlink()
            (path / "sub").mkdir(parents=True)
        elif how == "sealed-entry-that-does-not-rebuild":
            path.write_bytes(_resealed_with_bad_data(path.read_bytes()))
        else:
            path.write_bytes(DAMAGE[how](path.read_bytes()))

    second = _probe(tmp_path, NUMGRAD_CACHE_DIR=root)
    assert _right(second["out"]) and second["cache"]
    assert second["misses"] >= 1
    assert any("discarded a damaged kernel cache file" in w for w in second["warnings"]), second

    third = _probe(tmp_path, NUMGRAD_CACHE_DIR=root)
    assert _right(third["out"]) and third["warnings"] == []
    assert third["misses"] == 0 and third["hits"] >= 1
    assert all(os.path.isfile(p) for p in targets)
    if hasattr(os, "getuid"):
        assert all(_mode(p) == 0o600 for p in targets)


def test_stale_data_file_is_not_used_for_another_signature(tmp_path, warm):
    """A data file left behind by a discarded index is ignored (its key is recorded in it)."""
    root = tmp_path / "cache"
    shutil.copytree(warm[0], root)
    version = root / warm[1]
    for f in _files(version):
        if f.endswith(".nbc"):
            blob = (version / f).read_bytes()
            key, data = pickle.loads(blob[len(_jit.seal(b"")):])
            (version / f).write_bytes(_jit.seal(pickle.dumps((("another", key), data))))
    r = _probe(tmp_path, NUMGRAD_CACHE_DIR=root)
    assert _right(r["out"]) and r["warnings"] == [] and r["misses"] >= 1


# --- (e) bounds-checked code has its own folder -----------------------------------------------

def test_boundscheck_has_its_own_cache_folder(tmp_path):
    plain = _probe(tmp_path, compute=False, NUMGRAD_CACHE_DIR=tmp_path / "c")
    checked = _probe(tmp_path, compute=False, NUMGRAD_CACHE_DIR=tmp_path / "c",
                     NUMBA_BOUNDSCHECK=1)
    assert plain["dir"] and checked["dir"] and plain["dir"] != checked["dir"]
    assert checked["dir"] == plain["dir"] + "-boundscheck"


# --- the GPU kernels' folder follows the same rules -------------------------------------------

_CUDA_PROBE = """
    import json, warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from numgrad.kernels import _jit
        try:
            from numgrad.kernels.cuda import _launch
        except ImportError as exc:
            print(json.dumps({"skip": str(exc)}))
            raise SystemExit
    print(json.dumps({"cache": _launch.CACHE, "dir": _jit.CACHE_DIR,
                      "warnings": [str(w.message) for w in caught]}))
"""


def _cuda_probe(cache_root):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(cache_root), NUMBA_ENABLE_CUDASIM="0",
               PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_CUDA_PROBE)], capture_output=True,
                       text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(f"numba.cuda does not import: {out['skip']}")
    return out


@posix
def test_gpu_cache_folder_is_private(tmp_path):
    first = _cuda_probe(tmp_path / "c")
    if not first["cache"] and not first["warnings"]:
        pytest.skip("no numba-cuda disk cache here")
    gpu = os.path.join(first["dir"], "cuda")
    assert first["cache"] and first["warnings"] == [] and _mode(gpu) == 0o700
    os.chmod(gpu, 0o777)
    second = _cuda_probe(tmp_path / "c")
    assert not second["cache"] and _mode(gpu) == 0o777
    assert len(second["warnings"]) == 1 and gpu in second["warnings"][0]
