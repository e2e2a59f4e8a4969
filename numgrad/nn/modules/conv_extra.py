"""Conv1d, Conv3d, ConvTranspose1d/2d and the lazy layers (LazyLinear, LazyConv1d/2d/3d,
LazyConvTranspose1d/2d, LazyBatchNorm1d/2d/3d), with PyTorch's arguments, checks, ``repr``
and default initialization (the same numbers for one seed)."""


from numgrad import _dtype, _factories
from numgrad.nn import functional as F
from numgrad.nn.modules.layers import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Conv2d,
    Linear,
    _param,
    mode_widths,
    reset_conv,
)
from numgrad.nn.modules.module import Module
from numgrad.nn.parameter import Parameter
from numgrad.tensor import Tensor, _init_like_wrap

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """What Conv1d and the transposed convolutions share: argument checks, parameters (weight
    (out, in/groups, *k), or (in, out/groups, *k) when transposed), initialization, repr."""

    _dims = 1
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, bias, padding_mode, output_padding=0, dtype=None):
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        stride = _ntuple(stride, n)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, n)
        if padding_mode not in _PADDING_MODES:
            raise ValueError("padding_mode must be one of {'zeros', 'reflect', 'replicate', "
                             f"'circular'}}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = stride
        self.padding = padding
        self.dilation = _ntuple(dilation, n)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = _param(*shape, dtype=dtype)
        if bias:
            self.bias = _param(out_channels, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        reset_conv(self.weight, self.bias)

    def extra_repr(self):
        n = self._dims
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) input; ``padding_mode`` pads with ``F.pad`` first."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype=dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            widths = mode_widths(self.padding, self.kernel_size, self.dilation)
            return F.conv1d(F.pad(input, widths, mode=self.padding_mode), self.weight,
                            self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) input; ``padding_mode`` pads with ``F.pad``
    first."""

    _dims = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype=dtype)

    def forward(self, input):
        if self.padding_mode == "zeros":
            return F.conv3d(input, self.weight, self.bias, self.stride, self.padding,
                            self.dilation, self.groups)
        widths = mode_widths(self.padding, self.kernel_size, self.dilation)
        return F.conv3d(F.pad(input, widths, mode=self.padding_mode), self.weight, self.bias,
                        self.stride, 0, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, dtype=dtype)

    def _output_padding(self, input, output_size):
        """PyTorch's output_padding for an explicit ``output_size``."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        has_batch = input.dim() == n + 2
        requested = output_size
        output_size = list(output_size)
        if len(output_size) == n + 2 - (not has_batch) or len(output_size) == n + 2:
            output_size = output_size[-n:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must "
                             f"have {n} or {n + 2 - (not has_batch)} elements (got "
                             f"{len(output_size)})")
        lo = [(input.shape[d - n] - 1) * self.stride[d] - 2 * self.padding[d]
              + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        hi = [v + s - 1 for v, s in zip(lo, self.stride)]
        result = []
        for d in range(n):
            smallest, largest = lo[d], hi[d]
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {requested}, but valid sizes "
                                 f"range from {lo} to {hi} (for an input of "
                                 f"{input.shape[-n:]})")
            result.append(output_size[d] - smallest)
        return tuple(result)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution with PyTorch's initialization."""

    _dims = 1

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution with PyTorch's initialization."""

    _dims = 2

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


# ---- lazy layers -------------------------------------------------------------------------


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet: lazy modules materialize it on their first
    call. Its shape and values cannot be read until then (PyTorch's error)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return super().__new__(cls, None, requires_grad)

    def __repr__(self):
        return "<UninitializedParameter>"

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def materialize(self, shape, device=None, dtype=None):
        """Become a ``Parameter`` of ``shape`` (uninitialized values), in place."""
        data = _factories.empty(*shape, dtype=dtype)
        self._data = data._data
        self.__class__ = self.cls_to_become


class UninitializedBuffer(Tensor):
    """A buffer whose shape is not known yet (``UninitializedParameter``'s twin for
    buffers: running statistics of the lazy batch norms)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        import numpy as np
        t = object.__new__(cls)
        _init_like_wrap(t, np.empty((0,), np.float32))
        return t

    def __init__(self, *args, **kwargs):
        pass

    def __repr__(self):
        return "<UninitializedBuffer>"

    shape = UninitializedParameter.shape

    def materialize(self, shape, device=None, dtype=None):
        """Become a ``Tensor`` of ``shape`` (uninitialized values), in place."""
        self._data = _factories.empty(*shape, dtype=dtype)._data
        self.__class__ = self.cls_to_become


def _is_lazy(p):
    return isinstance(p, (UninitializedParameter, UninitializedBuffer))


class _LazyMixin:
    """Parameters materialized by the first call, then the module becomes ``cls_to_become``."""

    cls_to_become = None

    def has_uninitialized_params(self):
        return any(_is_lazy(p) for p in self._parameters.values())

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self._in_size() != 0:
            super().reset_parameters()

    def __call__(self, *args, **kwargs):
        if self.has_uninitialized_params():
            self.initialize_parameters(*args, **kwargs)
            self.__class__ = self.cls_to_become
            return self(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class LazyLinear(_LazyMixin, Linear):
    """``Linear`` whose ``in_features`` is read off the first input."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, out_features, bias, dtype=dtype)
        self.weight = UninitializedParameter()
        if bias:
            self.bias = UninitializedParameter()

    def _in_size(self):
        return self.in_features

    def initialize_parameters(self, input, *args, **kwargs):
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        Linear.reset_parameters(self)


class _LazyConv(_LazyMixin):
    """A convolution whose ``in_channels`` is read off the first input."""

    _spatial = 2

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, out_channels, kernel_size, stride, padding, dilation, 1, bias,
                         padding_mode, dtype=dtype)
        self.groups = groups  # PyTorch checks it against the channels on the first call
        self.weight = UninitializedParameter()
        if bias:
            self.bias = UninitializedParameter()

    def _in_size(self):
        return self.in_channels

    def _in_channels_of(self, input):
        n = self._spatial + 1
        if input.dim() not in (n, n + 1):
            raise RuntimeError(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == n + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        self.in_channels = self._in_channels_of(input)
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        if getattr(self, "transposed", False):
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        self.weight.materialize((*shape, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.cls_to_become.reset_parameters(self)


class LazyConv1d(_LazyConv, Conv1d):
    """``Conv1d`` whose ``in_channels`` is read off the first input."""

    cls_to_become = Conv1d
    _spatial = 1


class LazyConv2d(_LazyConv, Conv2d):
    """``Conv2d`` whose ``in_channels`` is read off the first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """``Conv3d`` whose ``in_channels`` is read off the first input."""

    cls_to_become = Conv3d
    _spatial = 3


class _LazyConvTranspose(_LazyConv):
    """A transposed convolution whose ``in_channels`` is read off the first input."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        _ConvTransposeNd.__init__(self, 0, out_channels, kernel_size, stride, padding,
                                  output_padding, 1, bias, dilation, padding_mode, dtype=dtype)
        self.groups = groups
        self.weight = UninitializedParameter()
        if bias:
            self.bias = UninitializedParameter()


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """``ConvTranspose1d`` whose ``in_channels`` is read off the first input."""

    cls_to_become = ConvTranspose1d
    _spatial = 1


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """``ConvTranspose2d`` whose ``in_channels`` is read off the first input."""

    cls_to_become = ConvTranspose2d


class _LazyBatchNorm(_LazyMixin):
    """A batch norm whose ``num_features`` is read off the first input's dim 1; its first
    call materializes the weights and running statistics, then the module becomes
    ``cls_to_become`` (even when it has none to materialize, as PyTorch's)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, False, False, dtype=dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter()
            if bias:
                self.bias = UninitializedParameter()
        if track_running_stats:
            self.running_mean = UninitializedBuffer()
            self.running_var = UninitializedBuffer()
            self.num_batches_tracked = _factories.tensor(0, dtype=_dtype.int64)

    def has_uninitialized_params(self):
        return any(_is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def _in_size(self):
        return self.num_features

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            t = getattr(self, name)
            if t is not None:
                t.materialize((self.num_features,))
        self.reset_parameters()

    def __call__(self, *args, **kwargs):
        self.initialize_parameters(*args, **kwargs)
        self.__class__ = self.cls_to_become
        return self(*args, **kwargs)


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """``BatchNorm1d`` whose ``num_features`` is read off the first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """``BatchNorm2d`` whose ``num_features`` is read off the first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyBatchNorm, BatchNorm3d):
    """``BatchNorm3d`` whose ``num_features`` is read off the first input."""

    cls_to_become = BatchNorm3d

