"""The module classes of numgrad.nn."""

from numgrad.nn.modules.conv_extra import (
    Conv1d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyLinear,
    UninitializedBuffer,
    UninitializedParameter,
)
from numgrad.nn.modules.layers import (
    GELU,
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from numgrad.nn.modules.layers_more import (
    AdaptiveAvgPool1d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AlphaDropout,
    AvgPool1d,
    Bilinear,
    ChannelShuffle,
    Dropout1d,
    Dropout2d,
    EmbeddingBag,
    Fold,
    LocalResponseNorm,
    MaxPool1d,
    PixelShuffle,
    PixelUnshuffle,
    RMSNorm,
    Unfold,
)
from numgrad.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from numgrad.nn.modules.module import Module, ModuleDict, ModuleList, Sequential
from numgrad.nn.modules.norm_extra import GroupNorm, InstanceNorm1d, InstanceNorm2d
from numgrad.nn.modules.padding import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from numgrad.nn.modules.parameter_containers import ParameterDict, ParameterList
from numgrad.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from numgrad.nn.modules.transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from numgrad.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [n for n in dir() if not n.startswith("_")]
