"""Summary protocol buffers (tensorboard's own protos) for the values SummaryWriter logs.

The values are numgrad tensors, NumPy arrays or Python numbers; they become NumPy arrays on
the host (logging, not op math) before they are packed into tensorboard's protos.
"""

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto


def to_numpy(x):
    """A NumPy array of a numgrad tensor, an array or a number (PyTorch's ``make_np``)."""
    from numgrad.tensor import Tensor
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        from numgrad._dtype import bfloat16, float16
        x = x.detach().cpu()
        return (x.to(float16) if x.dtype == bfloat16 else x).numpy()  # NumPy has no bfloat16
    raise NotImplementedError(
        f"Got {type(x)}, but numpy array or torch tensor are expected.")


def _plugin(name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name,
                                                                  content=content))


def scalar(tag, value, new_style=False, double_precision=False):
    arr = to_numpy(value).squeeze()
    if arr.ndim != 0:
        raise AssertionError(
            f"Tensor should contain one element (0 dimensions). Was given size: {arr.size} "
            f"and {arr.ndim} dimensions.")
    number = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    if double_precision:
        proto = TensorProto(double_val=[number], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[number], dtype="DT_FLOAT")
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=_plugin("scalars"))])


# NumPy dtype kind/size -> (TensorProto dtype, field)
_TENSOR_FIELDS = {
    np.dtype(np.float32): ("DT_FLOAT", "float_val"),
    np.dtype(np.float64): ("DT_DOUBLE", "double_val"),
    np.dtype(np.int64): ("DT_INT64", "int64_val"),
    np.dtype(np.int32): ("DT_INT32", "int_val"),
    np.dtype(np.int16): ("DT_INT16", "int_val"),
    np.dtype(np.int8): ("DT_INT8", "int_val"),
    np.dtype(np.uint8): ("DT_UINT8", "uint32_val"),
    np.dtype(np.bool_): ("DT_BOOL", "bool_val"),
}


def tensor(tag, value):
    arr = to_numpy(value)
    if arr.dtype == np.float16:  # half storage: logged as float32 values
        arr = arr.astype(np.float32)
    if arr.nbytes >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if arr.dtype not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {arr.dtype}")
    dtype, field = _TENSOR_FIELDS[arr.dtype]
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=n) for n in arr.shape])
    proto = TensorProto(dtype=dtype, tensor_shape=shape, **{field: arr.reshape(-1).tolist()})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin("tensor"), tensor=proto)])


def default_bins():
    """TensorBoard's default histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    edges = []
    v = 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    histo = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def histogram(tag, values, bins, max_bins=None):
    values = to_numpy(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        # merge runs of `step` neighbouring buckets (the last run padded with empty ones)
        step = len(counts) // max_bins
        short = len(counts) % step
        if short:
            counts = np.concatenate([counts, np.zeros(step - short, counts.dtype)])
        counts = counts.reshape(-1, step).sum(axis=1)
        edges = np.append(edges[:-1:step], edges[-1])
    # keep the buckets from the first to the last non-empty one; TensorBoard stores right
    # edges only, so one bucket (empty) left of the first keeps the left edge visible
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:  # every value outside the bins, or NaN
        raise ValueError("The histogram is empty, please file a bug report.")
    first, last = int(nonzero[0]), int(nonzero[-1]) + 1
    if first > 0:
        counts = counts[first - 1:last]
    else:
        counts = np.concatenate([[0], counts[:last]])
    edges = edges[first:last + 1]
    histo = HistogramProto(min=values.min(), max=values.max(), num=len(values),
                           sum=values.sum(), sum_squares=values.dot(values),
                           bucket_limit=edges.tolist(), bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def _grid(batch, ncols=8):
    """N x C x H x W images (C of 1 or 3) tiled on one 3 x H' x W' canvas, 8 per row."""
    if batch.shape[1] == 1:
        batch = np.concatenate([batch] * 3, 1)
    if batch.ndim != 4 or batch.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = batch.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=batch.dtype)
    for i in range(n):
        r, c = divmod(i, ncols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = batch[i]
    return canvas


def to_hwc(arr, dataformats):
    """An H x W x C array (C of 3 or 4) of an image in ``dataformats`` (NCHW, CHW, HWC, HW...)."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise AssertionError(
            f"You can not use the same dimension shorthand twice. input_format: {dataformats}")
    if arr.ndim != len(fmt):
        raise AssertionError(
            f"size of input tensor and input format are different. tensor shape: "
            f"{arr.shape}, input_format: {dataformats}")
    if len(fmt) == 4:
        return _grid(arr.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    if len(fmt) == 2:
        return np.stack([arr.transpose([fmt.find(c) for c in "HW"])] * 3, 2)
    raise AssertionError(f"unsupported dataformats {dataformats!r}")


def image(tag, value, dataformats="NCHW"):
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("add_image needs the pillow package (pip install pillow)") from None
    hwc = to_hwc(to_numpy(value), dataformats)
    # uint8 images are 0..255; any other dtype is 0..1
    scale = 1 if hwc.dtype == np.uint8 else 255
    pixels = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    picture = Summary.Image(height=height, width=width, colorspace=channels,
                            encoded_image_string=buf.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=picture)])


def text(tag, string):
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    proto = TensorProto(dtype="DT_STRING", string_val=[string.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    meta = _plugin("text", TextPluginData(version=0).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The hparams plugin's three summaries: experiment, session start, session end."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    from numgrad.tensor import Tensor

    for name, d in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict)):
        if not isinstance(d, dict):
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError(
            "parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")

    infos = []
    start = SessionStartInfo()
    # as PyTorch: int and float (and bool, an int) are numbers, str are strings
    kinds = (((int, float), "number_value", "DATA_TYPE_FLOAT64"),
             (str, "string_value", "DATA_TYPE_STRING"),
             (bool, "bool_value", "DATA_TYPE_BOOL"))
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            start.hparams[k].number_value = float(to_numpy(v).reshape(-1)[0])
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
            continue
        for types, field, kind in kinds:
            if isinstance(v, types):
                setattr(start.hparams[k], field, v)
                domain = None
                if k in domains:
                    domain = struct_pb2.ListValue(
                        values=[struct_pb2.Value(**{field: d}) for d in domains[k]])
                infos.append(HParamInfo(name=k, type=DataType.Value(kind),
                                        domain_discrete=domain))
                break
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")

    def wrap(tag, **content):
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        meta = _plugin(metadata.PLUGIN_NAME, data.SerializeToString())
        return Summary(value=[Summary.Value(tag=tag, metadata=meta)])

    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    return (wrap(metadata.EXPERIMENT_TAG, experiment=experiment),
            wrap(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            wrap(metadata.SESSION_END_INFO_TAG, session_end_info=end))


def pr_curve_data(labels, predictions, num_thresholds, weights=None):
    """Rows tp, fp, tn, fn, precision, recall at ``num_thresholds`` thresholds in [0, 1]."""
    labels = to_numpy(labels).astype(np.float64)
    predictions = to_numpy(predictions)
    weights = 1.0 if weights is None else to_numpy(weights)
    bucket = np.int32(np.floor(predictions * (num_thresholds - 1)))
    span = (0, num_thresholds - 1)
    pos, _ = np.histogram(bucket, bins=num_thresholds, range=span, weights=labels * weights)
    neg, _ = np.histogram(bucket, bins=num_thresholds, range=span,
                          weights=(1.0 - labels) * weights)
    # counts at or above each threshold: sums from the right
    tp = np.cumsum(pos[::-1])[::-1]
    fp = np.cumsum(neg[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve(tag, data, num_thresholds):
    """The pr_curves plugin's summary of a 6 x thresholds array."""
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    data = np.asarray(data)
    meta = _plugin("pr_curves", PrCurvePluginData(
        version=0, num_thresholds=num_thresholds).SerializeToString())
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=n) for n in data.shape[:2]])
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=shape)
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=proto)])
