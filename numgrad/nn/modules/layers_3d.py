"""3-D pooling modules, InstanceNorm3d, LazyInstanceNorm1d/2d/3d, LPPool1d/2d/3d,
MaxUnpool1d/2d/3d and (Lazy)ConvTranspose3d (thin wrappers over numgrad.nn.functional)."""

from numgrad.nn import functional as F
from numgrad.nn.modules.conv_extra import _ConvTransposeNd, _LazyBatchNorm, _LazyConvTranspose
from numgrad.nn.modules.layers import AvgPool2d, _MaxPoolNd
from numgrad.nn.modules.layers_more import _Adaptive
from numgrad.nn.modules.module import Module
from numgrad.nn.modules.norm_extra import InstanceNorm1d, InstanceNorm2d, _InstanceNorm


class MaxPool3d(_MaxPoolNd):
    _pool = staticmethod(F.max_pool3d)


class AvgPool3d(AvgPool2d):
    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_Adaptive):
    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_Adaptive):
    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class InstanceNorm3d(_InstanceNorm):
    _dims = 4


class LazyInstanceNorm1d(_LazyBatchNorm, InstanceNorm1d):
    """``InstanceNorm1d`` whose ``num_features`` is read off the first input's dim 1."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyBatchNorm, InstanceNorm2d):
    """``InstanceNorm2d`` whose ``num_features`` is read off the first input's dim 1."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyBatchNorm, InstanceNorm3d):
    """``InstanceNorm3d`` whose ``num_features`` is read off the first input's dim 1."""

    cls_to_become = InstanceNorm3d


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return self._pool(input, float(self.norm_type), self.kernel_size, self.stride,
                          self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _pool = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _pool = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _pool = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._n
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride if stride is not None else kernel_size, n)
        self.padding = _tuple(padding, n)

    def forward(self, input, indices, output_size=None):
        return self._unpool(input, indices, self.kernel_size, self.stride, self.padding,
                            output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


class MaxUnpool1d(_MaxUnpoolNd):
    _n, _unpool = 1, staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _n, _unpool = 2, staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _n, _unpool = 3, staticmethod(F.max_unpool3d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution with PyTorch's initialization."""

    _dims = 3

    def forward(self, input, output_size=None):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """``ConvTranspose3d`` whose ``in_channels`` is read off the first input."""

    cls_to_become = ConvTranspose3d
    _spatial = 3
