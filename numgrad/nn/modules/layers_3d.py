"""3-D pooling modules and InstanceNorm3d (thin wrappers over numgrad.nn.functional)."""

from numgrad.nn import functional as F
from numgrad.nn.modules.layers import AvgPool2d, _MaxPoolNd
from numgrad.nn.modules.layers_more import _Adaptive
from numgrad.nn.modules.norm_extra import _InstanceNorm


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
