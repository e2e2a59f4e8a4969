"""pytest plugin for the test phase of ``gpu_check.py`` (``-p gpu_check_pytest``).

Appends to ``$NUMGRAD_GPU_CHECK_RESULTS``, one JSON line each, the moment it is known: the
collected test ids, then each test's start and its outcome, duration, first lines of its
failure and the kernel compile time so far. A run killed at its timeout has therefore said
which tests it finished, which one it was in and which it did not reach, with no junit file or
summary needed.
"""

import os

import pytest
from gpu_check_phases import CompileTimer, Results, injected

_STATE = {}


def pytest_configure(config):
    path = os.environ.get("NUMGRAD_GPU_CHECK_RESULTS")
    if path:
        _STATE["out"] = Results(path, CompileTimer().install())


def pytest_collection_finish(session):
    if "out" in _STATE:
        _STATE["out"].write("collected", ids=[item.nodeid for item in session.items])


def pytest_runtest_logstart(nodeid, location):
    if "out" in _STATE:
        _STATE["out"].write("start", name=nodeid)


def _first_lines(report, n=4):
    text = report.longreprtext or ""
    errors = [line for line in text.splitlines() if line.startswith("E ")]
    lines = errors or text.strip().splitlines()[-n:]
    return "\n".join(line[1:].strip() if line.startswith("E ") else line
                     for line in lines[:n])


def pytest_collectreport(report):
    if "out" in _STATE and report.failed:
        _STATE["out"].write("check", name=report.nodeid or "collection", ok=False,
                            outcome="error", seconds=0.0, error=_first_lines(report))


def pytest_runtest_logreport(report):
    out = _STATE.get("out")
    if out is None:
        return
    # one line per test: its call, or the setup that failed or skipped it, or a failing teardown
    if report.when == "call" or (report.when == "setup" and not report.passed) or (
            report.when == "teardown" and report.failed):
        outcome = report.outcome if report.when == "call" or report.skipped else "error"
        error = None
        if report.failed:
            error = _first_lines(report)
        elif report.skipped and isinstance(report.longrepr, tuple):
            error = str(report.longrepr[2])
        out.write("check", name=report.nodeid, ok=not report.failed, outcome=outcome,
                  seconds=report.duration, error=error)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if injected("tests") and not _STATE.get("injected"):
        _STATE["injected"] = True
        raise AssertionError("injected failure (--inject tests): the GPU's result differs "
                             "from the CPU's")
