"""Compile the common kernels at install time, into a folder that ships with the package.

``pip install`` builds numgrad with ``setup.py``'s build step, which runs
``python -m numgrad._prebuild <build>/numgrad/_prebuilt``: the kernels listed in
``numgrad._common_kernels`` (the demo's: the tutorials' float32 autograd, float32 training of
an MLP and a small CNN; and a first training step of a GPT, a TransformerEncoder and a
char-LSTM) compile in a few processes into a fresh kernel cache, which then moves to
``_prebuilt/<version>-<hash>``. A program's first run loads them from there
(``numgrad.kernels._jit``) instead of compiling them, as PyTorch's first run loads its
compiled library.

The files are Numba's cache entries, keyed as usual by the kernel's code, its argument types
and this machine's CPU: copied to another CPU they are not used (the kernels compile there
as without them), and a marker file names the machine they were built for. Nothing here can
fail an install: a kernel that does not compile is left out, and a build that fails leaves no
folder. ``NUMGRAD_PREBUILD=0`` skips the step.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

KEEP = (".nbi", ".nbc", ".done")  # what a prebuilt folder holds
VERSION_FOLDER = re.compile(r"^[0-9][\w.+]*-[0-9a-f]{16}(-boundscheck)?$")
# seconds a compile process may take: a share of the list took over 900 s on a 2-core VM at
# load 19; setup.py gives the whole prebuild 1800 s
TIMEOUT_S = 1500


def _env(cache_root):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(NUMGRAD_CACHE_DIR=cache_root, NUMGRAD_PREBUILT="0",
               NUMGRAD_BACKGROUND_COMPILE="0")
    return env


def shares(kernels, jobs):
    """``kernels`` split into ``jobs`` lists, every signature of one function in the same list
    (two processes adding to one function's index file would lose one's entry)."""
    by_function = {}
    for module, qualname, sig in kernels:
        by_function.setdefault((module, qualname), []).append(sig)
    out = [[] for _ in range(jobs)]
    for i, ((module, qualname), sigs) in enumerate(by_function.items()):
        out[i % jobs].extend([module, qualname, s] for s in sigs)
    return [share for share in out if share]


def compile_share(entries):
    """Compile ``entries`` into this process's kernel cache: (folder, how many, failures)."""
    from numgrad import _background
    from numgrad.kernels import _jit

    failed = []
    for module, qualname, text in entries:
        try:
            _jit.find(module, qualname).compile(_background.parse_signature(text))
        except Exception as exc:
            failed.append(f"{module}.{qualname}({text}): {type(exc).__name__}: {exc}")
    return _jit.CACHE_DIR, len(entries) - len(failed), failed


def _finish(folder, common):
    """Mark ``folder`` as holding the common kernels for this machine (when ``common``: it does
    not otherwise); make it read-only for everyone but readable by all, as the package's other
    files."""
    import pickle

    from numgrad import _background
    from numgrad.kernels import _jit

    if common:
        _jit._write_private(_background._marker(folder), pickle.dumps(_jit.host_key()))
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.endswith(KEEP) and os.path.isfile(path):
            os.chmod(path, 0o644)
        else:
            _jit._remove(path)  # a lock file, a generated source: not part of the kernels
    os.chmod(folder, 0o755)


def build(dest, jobs=None, kernels=None):
    """Compile ``kernels`` (default: the common kernels, marked as such) in ``jobs`` processes
    and put them in ``dest/<version>-<hash>``, replacing what ``dest`` held; a summary dict."""
    from numgrad._background import common_kernels

    common = kernels is None
    kernels = common_kernels() if common else kernels
    jobs = jobs or min(os.cpu_count() or 1, 4)
    t0 = time.perf_counter()
    cache_root = tempfile.mkdtemp(prefix="numgrad-prebuild-")
    procs = []
    try:
        procs += [subprocess.Popen([sys.executable, "-m", "numgrad._prebuild", "--share",
                                   json.dumps(share)], env=_env(cache_root),
                                  stdout=subprocess.PIPE, text=True)
                 for share in shares(kernels, jobs)]
        folders, done, failed = set(), 0, []
        for proc in procs:
            out, _ = proc.communicate(timeout=TIMEOUT_S)
            if proc.returncode:
                raise RuntimeError(f"a compile process exited with status {proc.returncode}")
            folder, n, bad = json.loads(out.strip().splitlines()[-1])
            folders.add(folder)
            done += n
            failed += bad
        if len(folders) != 1 or not done:
            raise RuntimeError(f"nothing compiled ({failed[:3]})")
        folder = folders.pop()
        saved = dict(os.environ)
        os.environ.update(_env(cache_root))  # a numgrad loaded here uses the same cache root
        try:
            _finish(folder, common)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        os.makedirs(dest, exist_ok=True)
        for name in os.listdir(dest):  # earlier builds' folders (other versions or sources)
            if VERSION_FOLDER.match(name):
                shutil.rmtree(os.path.join(dest, name), ignore_errors=True)
        target = os.path.join(dest, os.path.basename(folder))
        shutil.move(folder, target)
        os.chmod(dest, 0o755)
    finally:
        for proc in procs:  # after a failure, no compile process outlives the build
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(cache_root, ignore_errors=True)
    return {"folder": target, "kernels": done, "failed": failed,
            "seconds": round(time.perf_counter() - t0, 1), "processes": len(procs)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", nargs="?", help="the _prebuilt folder to (re)write")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--share", help=argparse.SUPPRESS)  # a compile process's kernels
    opts = parser.parse_args(argv)
    if opts.share is not None:
        print(json.dumps(compile_share(json.loads(opts.share))))
        return 0
    if not opts.dest:
        parser.error("the destination folder is required")
    print(json.dumps(build(opts.dest, opts.jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
