"""The demo learns: the digits MLP reaches 97% and the CNN 98% test accuracy (fixed split and
seed), and the curves plot is written."""

import importlib.util
import os

import pytest

HAVE_DEMO_DEPS = all(importlib.util.find_spec(m) for m in ("sklearn", "matplotlib"))
pytestmark = pytest.mark.skipif(not HAVE_DEMO_DEPS, reason="scikit-learn/matplotlib missing")


def test_digits_models_reach_their_accuracy(tmp_path):
    from numgrad.examples import digits
    histories = digits.main(["--out", str(tmp_path)])
    assert histories["mlp"]["test_acc"][-1] >= 0.97
    assert histories["cnn"]["test_acc"][-1] >= 0.98
    path = tmp_path / "digits_curves.png"
    assert path.exists() and os.path.getsize(path) > 10_000
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
