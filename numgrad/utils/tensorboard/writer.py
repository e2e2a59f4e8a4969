"""``SummaryWriter``: PyTorch's TensorBoard writer, on tensorboard's EventFileWriter."""

import math
import os
import time

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from numgrad.utils.tensorboard import _summary
from numgrad.utils.tensorboard._graph import graph_def


class FileWriter:
    """One event file in ``log_dir``; events are queued and written by a background thread."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph, walltime=None):
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


class SummaryWriter:
    """Writes scalars, histograms, images, text, graphs and hparams for TensorBoard.

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``; every event file's
    name ends with ``filename_suffix``. Values may be numgrad tensors, NumPy arrays or numbers.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            import socket
            from datetime import datetime
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _summary.default_bins()

    def _get_file_writer(self):
        """The main FileWriter, made again after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard hides the events at or after purge_step from earlier runs
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def _add(self, summary, global_step, walltime):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._add(_summary.scalar(tag, scalar_value, new_style=new_style,
                                  double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """One run per key, ``<log_dir>/<main_tag>_<key>``, each logging ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run = root + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(run)
            if writer is None:
                writer = FileWriter(run, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[run] = writer
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        self._add(_summary.tensor(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(_summary.histogram(tag, values, bins, max_bins=max_bins), global_step,
                  walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(_summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                         bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._add(_summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._add(_summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them) as an image (a batch of images)."""
        figures = figure if isinstance(figure, list) else [figure]
        pictures = np.stack([_figure_pixels(f, close) for f in figures])
        if isinstance(figure, list):
            self.add_images(tag, pictures, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, pictures[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._add(_summary.text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of one forward call ``model(*input_to_model)``, traced by autograd.

        numgrad has no TorchScript: the graph is read from the autograd nodes the forward
        records (ops named as PyTorch's forward ops, parameters under their module paths).
        """
        self._get_file_writer().add_graph(graph_def(model, input_to_model, verbose))

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        """A precision-recall curve of binary ``labels`` and ``predictions`` in [0, 1]."""
        num_thresholds = min(num_thresholds, 127)  # PyTorch's cap
        data = _summary.pr_curve_data(labels, predictions, num_thresholds, weights)
        self._add(_summary.pr_curve(tag, data, num_thresholds), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        num_thresholds = min(num_thresholds, 127)
        rows = (true_positive_counts, false_positive_counts, true_negative_counts,
                false_negative_counts, precision, recall)
        data = np.stack([_summary.to_numpy(r) for r in rows])
        self._add(_summary.pr_curve(tag, data, num_thresholds), global_step, walltime)

    def add_onnx_graph(self, prototxt):
        _unsupported("add_onnx_graph")

    def add_image_with_boxes(self, *args, **kwargs):
        _unsupported("add_image_with_boxes")

    def add_video(self, *args, **kwargs):
        _unsupported("add_video")

    def add_audio(self, *args, **kwargs):
        _unsupported("add_audio")

    def add_mesh(self, *args, **kwargs):
        _unsupported("add_mesh")

    def add_custom_scalars(self, *args, **kwargs):
        _unsupported("add_custom_scalars")

    def add_custom_scalars_multilinechart(self, *args, **kwargs):
        _unsupported("add_custom_scalars_multilinechart")

    def add_custom_scalars_marginchart(self, *args, **kwargs):
        _unsupported("add_custom_scalars_marginchart")

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """Hyperparameters and metrics, in the run ``<log_dir>/<run_name>`` (default: time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_name = run_name or str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as run:
            for summary in summaries:
                run.file_writer.add_summary(summary, global_step)
            for k, v in metric_dict.items():
                run.add_scalar(k, v, global_step)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """Points for the projector: ``tensors.tsv`` (+ ``metadata.tsv``, ``sprite.png``)."""
        from google.protobuf import text_format
        from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

        mat = _summary.to_numpy(mat)
        step = 0 if global_step is None else global_step
        subdir = f"{str(step).zfill(5)}/{_escape(tag)}"
        root = self._get_file_writer().get_logdir()
        path = os.path.join(root, subdir)
        if os.path.exists(path):
            if not os.path.isdir(path):
                raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        else:
            os.makedirs(path)
        info_extra = {}
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _write_tsv(metadata, metadata_header, os.path.join(path, "metadata.tsv"))
            info_extra["metadata_path"] = subdir + "/metadata.tsv"
        if label_img is not None:
            images = _summary.to_numpy(label_img)
            if mat.shape[0] != images.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _write_sprite(images, os.path.join(path, "sprite.png"))
        if mat.ndim != 2:
            raise AssertionError(
                "mat should be 2D, where mat.size(0) is the number of data points")
        with open(os.path.join(path, "tensors.tsv"), "w") as fh:
            for row in mat:
                fh.write("\t".join(str(v.item()) for v in row) + "\n")
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        info = self._projector_config.embeddings.add(
            tensor_name=f"{tag}:{str(step).zfill(5)}", tensor_path=subdir + "/tensors.tsv",
            **info_extra)
        if label_img is not None:
            info.sprite.image_path = subdir + "/sprite.png"
            info.sprite.single_image_dim.extend([images.shape[3], images.shape[2]])
        with open(os.path.join(root, "projector_config.pbtxt"), "w") as fh:
            fh.write(text_format.MessageToString(self._projector_config))

    def flush(self):
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        if self.all_writers is None:
            return  # closing twice is fine
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _unsupported(name):
    raise NotImplementedError(
        f"SummaryWriter.{name} is not supported by numgrad yet (scalars, histograms, images, "
        "figures, text, graphs, hparams, embeddings and PR curves are)")


def _escape(tag):
    """``%``, ``/`` and ``\\`` of a tag as %xx, so a tag is one folder name."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write_tsv(metadata, header, filename):
    if header:
        if len(header) != len(metadata[0]):
            raise AssertionError(
                "len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [header] + list(metadata)]
    else:
        lines = [str(x) for x in metadata]
    with open(filename, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _write_sprite(images, filename):
    """N x C x H x W images on a square grid, as the projector expects."""
    from PIL import Image
    side = math.ceil(images.shape[0] ** 0.5)
    chw = _summary._grid(images, ncols=side)
    square = np.zeros((chw.shape[2], chw.shape[2], 3))
    square[:chw.shape[1]] = chw.transpose(1, 2, 0)
    Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(filename, format="PNG")


def _figure_pixels(figure, close):
    """A C x H x W float array in [0, 1] of a matplotlib figure drawn on an Agg canvas."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    if close:
        plt.close(figure)
    return rgba[:, :, :3].transpose(2, 0, 1).astype(np.float32) / 255
