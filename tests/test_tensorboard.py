"""numgrad.utils.tensorboard.SummaryWriter: event files read back with tensorboard's reader,
and compared with what torch.utils.tensorboard writes for the same calls."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import numgrad as ng

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)

from numgrad.utils.tensorboard import SummaryWriter  # noqa: E402

SIZES = {"images": 0, "histograms": 0, "scalars": 0, "tensors": 0}


def _read(path):
    acc = EventAccumulator(str(path), size_guidance=SIZES)
    acc.Reload()
    return acc


def _log_everything(Writer, logdir, tensor):
    """The same calls through either writer; ``tensor`` builds that library's tensors."""
    rng = np.random.default_rng(0)
    values = rng.standard_normal(200)
    with Writer(logdir) as w:
        for step in range(3):
            w.add_scalar("loss", tensor(np.float32(2.5 - step)), step)
        w.add_scalar("lr", 0.125, 7)
        w.add_scalar("np", np.float64(3.25), 1)
        w.add_scalars("run", {"a": 1.5, "b": tensor(np.float32(-2.0))}, 4)
        w.add_histogram("hist", tensor(values), 0)
        w.add_histogram("hist_auto", values, 1, bins="auto")
        w.add_histogram("hist_few", tensor(values), 2, bins=64, max_bins=10)
        w.add_image("chw", tensor(rng.random((3, 6, 5), dtype=np.float32)), 0)
        w.add_image("hwc", rng.integers(0, 255, (4, 7, 3), dtype=np.uint8), 0,
                    dataformats="HWC")
        w.add_image("hw", rng.random((5, 9)), 0, dataformats="HW")
        w.add_images("batch", tensor(rng.random((10, 1, 4, 3), dtype=np.float32)), 0)
        w.add_text("note", "hello **world**", 3)
        w.add_pr_curve("pr", tensor(rng.integers(0, 2, 50)), tensor(rng.random(50)), 2,
                       num_thresholds=9)
        w.add_pr_curve_raw("pr_raw", *[tensor(rng.random(4)) for _ in range(6)], 5,
                           num_thresholds=4)
        w.add_hparams({"lr": 0.1, "opt": "sgd", "layers": 2, "nesterov": True}, {"hp/acc": 0.75},
                      run_name="hp")


def _summary_of(acc):
    """Everything but wall times: tags, steps and values of each kind."""
    tags = acc.Tags()
    out = {"scalars": {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags["scalars"]}}
    hist = {}
    for t in tags["histograms"]:
        for e in acc.Histograms(t):
            h = e.histogram_value
            hist[t] = (e.step, h.min, h.max, h.num, h.sum, h.sum_squares,
                       list(h.bucket_limit), list(h.bucket))
    out["histograms"] = hist
    out["images"] = {t: [(e.step, e.width, e.height) for e in acc.Images(t)]
                     for t in tags["images"]}
    out["tensors"] = {t: [(e.step, e.tensor_proto.string_val, list(e.tensor_proto.float_val),
                           [d.size for d in e.tensor_proto.tensor_shape.dim])
                          for e in acc.Tensors(t)] for t in tags["tensors"]}
    return out


def _ng_tensor(a):
    return ng.tensor(a)


def test_written_events_read_back(tmp_path):
    _log_everything(SummaryWriter, tmp_path, _ng_tensor)
    acc = _read(tmp_path)
    s = _summary_of(acc)
    assert s["scalars"]["loss"] == [(0, 2.5), (1, 1.5), (2, 0.5)]
    assert s["scalars"]["lr"] == [(7, 0.125)] and s["scalars"]["np"] == [(1, 3.25)]
    values = np.random.default_rng(0).standard_normal(200)
    step, mn, mx, num, total, sq, limits, counts = s["histograms"]["hist"]
    assert (step, num) == (0, 200) and sum(counts) == 200
    assert mn == values.min() and mx == values.max()
    assert total == pytest.approx(values.sum()) and sq == pytest.approx(values @ values)
    assert counts[0] == 0 and counts[-1] > 0 and limits[-1] >= mx and limits[0] < mn
    assert len(s["histograms"]["hist_few"][6]) == 12  # 64 bins in runs of 6, one empty left
    assert s["images"]["chw"] == [(0, 5, 6)] and s["images"]["hwc"] == [(0, 7, 4)]
    assert s["images"]["hw"] == [(0, 9, 5)]
    assert s["images"]["batch"] == [(0, 8 * 3, 2 * 4)]  # 8 per row, 2 rows
    assert s["tensors"]["note/text_summary"] == [(3, [b"hello **world**"], [], [1])]
    (step, _, curve, shape), = s["tensors"]["pr"]
    tp, fp, tn, fn, precision, recall = np.reshape(curve, shape)
    assert step == 2 and shape == [6, 9] and fn[0] == 0 and tn[0] == 0
    assert tp[0] + fp[0] == 50 and recall[0] == 1 and np.all(np.diff(tp) <= 0)
    assert s["tensors"]["pr_raw"][0][3] == [6, 4]
    # add_scalars: one run per key, each logging the main tag
    for key, value in (("a", 1.5), ("b", -2.0)):
        sub = _read(tmp_path / f"run_{key}")
        assert [(e.step, e.value) for e in sub.Scalars("run")] == [(4, value)]
    # add_hparams: its own run with the plugin's summaries and the metric as a scalar
    hp = _read(tmp_path / "hp")
    assert [(e.value) for e in hp.Scalars("hp/acc")] == [0.75]
    from tensorboard.plugins.hparams import metadata
    content = hp.PluginTagToContent(metadata.PLUGIN_NAME)
    start = metadata.parse_session_start_info_plugin_data(
        content[metadata.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.1
    assert start.hparams["opt"].string_value == "sgd"
    assert start.hparams["layers"].number_value == 2
    experiment = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    assert [m.name.tag for m in experiment.metric_infos] == ["hp/acc"]


def test_same_events_as_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    _log_everything(SummaryWriter, tmp_path / "ng", _ng_tensor)
    _log_everything(TorchWriter, tmp_path / "pt", torch.tensor)
    assert _summary_of(_read(tmp_path / "ng")) == _summary_of(_read(tmp_path / "pt"))
    for sub in ("run_a", "run_b", "hp"):
        assert _summary_of(_read(tmp_path / "ng" / sub)) == \
            _summary_of(_read(tmp_path / "pt" / sub))
    hp = [_read(tmp_path / lib / "hp").PluginTagToContent("hparams") for lib in ("ng", "pt")]
    assert hp[0] == hp[1] and len(hp[0]) == 3
    # the PNG bytes of the images are PyTorch's too
    ng_acc, pt_acc = _read(tmp_path / "ng"), _read(tmp_path / "pt")
    for tag in ("chw", "hwc", "hw", "batch"):
        assert ng_acc.Images(tag)[0].encoded_image_string == \
            pt_acc.Images(tag)[0].encoded_image_string


def test_graph_of_a_forward(tmp_path):
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.ReLU(), ng.nn.Linear(4, 2))
    x = ng.rand(5, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, x)
    graph = _read(tmp_path).Graph()
    nodes = {n.name: n for n in graph.node}
    assert nodes["input/input"].op == "IO Node"
    assert nodes["output/output.0"].input == ["Sequential/Addmm_1"]
    assert nodes["Sequential/Relu_0"].input == ["Sequential/Addmm_0"]
    assert "input/input" in nodes["Sequential/Addmm_0"].input
    assert "Sequential/0/bias" in nodes["Sequential/Addmm_0"].input
    assert {n.op for n in graph.node} == {"IO Node", "Parameter", "Addmm", "Relu", "T"}
    shape = nodes["Sequential/0/weight"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [4, 3]
    assert not x.requires_grad and model[0].weight.grad is None
    # a function of two inputs returning a tuple, one output an input as it is
    with SummaryWriter(tmp_path / "fn") as w:
        w.add_graph(lambda a, idx: (a.exp() * a, idx), (x, ng.tensor([1, 2])))
    nodes = {n.name: n for n in _read(tmp_path / "fn").Graph().node}
    assert nodes["lambda/Mul_0"].input == ["lambda/Exp_0", "input/a"]
    assert nodes["output/output.1"].input == ["input/idx"]


def test_writer_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1", filename_suffix=".ng")
    w.add_scalar("x", 1, 0)
    w.add_scalar("half", ng.tensor(0.5, dtype=ng.bfloat16), 1)  # as float16, as PyTorch
    w.flush()
    w.close()
    w.close()  # twice is fine
    (run,) = os.listdir(tmp_path / "runs")
    assert run.endswith("_lr0.1") and os.uname().nodename in run
    (event_file,) = os.listdir(tmp_path / "runs" / run)
    assert [e.value for e in _read(tmp_path / "runs" / run).Scalars("half")] == [0.5]
    assert event_file.startswith("events.out.tfevents.") and event_file.endswith(".ng")
    assert w.get_logdir() == os.path.join("runs", run)
    # purge_step: TensorBoard drops the older events at or after it
    with SummaryWriter("p") as w:
        for step in range(4):
            w.add_scalar("y", step, step)
    with SummaryWriter("p", purge_step=2) as w:
        w.add_scalar("y", 10.0, 2)
    assert [(e.step, e.value) for e in _read(tmp_path / "p").Scalars("y")] == \
        [(0, 0.0), (1, 1.0), (2, 10.0)]


def test_embedding_files(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(ng.tensor([[1.0, 2.0], [3.0, 4.5]]), metadata=["a", "b"],
                        label_img=ng.rand(2, 3, 2, 2), tag="emb/x")
    folder = tmp_path / "00000" / "emb%2fx"
    assert (folder / "tensors.tsv").read_text() == "1.0\t2.0\n3.0\t4.5\n"
    assert (folder / "metadata.tsv").read_text() == "a\nb\n"
    assert (folder / "sprite.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    config = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "emb/x:00000"' in config and "single_image_dim: 2" in config


def test_errors_match_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    from conftest import raised
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    with SummaryWriter(tmp_path / "a") as w, TorchWriter(tmp_path / "b") as t:
        calls = [
            lambda w, T: w.add_scalar("x", T(np.ones(3, np.float32))),
            lambda w, T: w.add_scalar("x", "s"),
            lambda w, T: w.add_histogram("h", T(np.zeros(0, np.float32))),
            lambda w, T: w.add_image("i", T(np.ones((3, 4), np.float32))),
            lambda w, T: w.add_image("i", np.ones((3, 4, 4)), dataformats="CCW"),
            lambda w, T: w.add_hparams([], {}),
            lambda w, T: w.add_hparams({"a": [1]}, {}),
            lambda w, T: w.add_histogram_raw("r", 0, 1, 1, 1, 1, [1, 2], [1]),
        ]
        for call in calls:
            got = raised(call, w, ng.tensor)
            want = raised(call, t, torch.tensor)
            assert got[0] == want[0], (got, want)
            assert " ".join(got[1].split()) == " ".join(want[1].split())
        with pytest.raises(NotImplementedError, match="add_video is not supported"):
            w.add_video("v", ng.zeros(1, 1, 3, 2, 2))


def test_makemore_import_and_light_numgrad():
    # import numgrad never imports tensorboard; the writer's module is where it is imported
    code = ("import sys, numgrad, numgrad.utils; assert 'tensorboard' not in sys.modules; "
            "from numgrad.utils.tensorboard import SummaryWriter; "
            "assert 'tensorboard' in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_import_error_without_tensorboard(monkeypatch):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith(("tensorboard.", "numgrad.utils.tensorb")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match="TensorBoard logging requires TensorBoard version "
                                          "1.15 or above"):
        importlib.import_module("numgrad.utils.tensorboard")


def test_figure_as_image(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with SummaryWriter(tmp_path) as w:
        fig = plt.figure(figsize=(2, 1), dpi=10)
        w.add_figure("fig", fig, 0)
        w.add_figure("figs", [plt.figure(figsize=(1, 1), dpi=10) for _ in range(2)], 1)
    acc = _read(tmp_path)
    assert [(e.step, e.width, e.height) for e in acc.Images("fig")] == [(0, 20, 10)]
    assert [(e.step, e.width, e.height) for e in acc.Images("figs")] == [(1, 20, 10)]
    assert not plt.get_fignums()
