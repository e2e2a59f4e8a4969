"""Trust for numgrad.nn: wrong shapes, dtypes, argument types and sizes raise PyTorch's
exception class with PyTorch's message (never a crash, a read outside a buffer or a silently
wrong value), and the inputs PyTorch accepts that used to fail now give its values.

Each table row is run under both libraries (``t`` is the module: ``torch`` or ``numgrad``)."""

import re
import warnings

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad
import numgrad.utils.data  # noqa: F401  (t.utils.data below)

if torch is not None:
    import torch.utils.data  # noqa: F401


def F(t):
    return t.nn.functional


def o(t, *shape):
    return t.ones(*shape)


def L(t, values):
    return t.tensor(values, dtype=t.long)


def _named(t, name):
    m = t.nn.Module()
    m.add_module(name, t.nn.ReLU())
    return m


def _attr_clash(t):
    m = t.nn.Module()
    m.foo = 3
    m.add_module("foo", t.nn.ReLU())


def _buffer(t, name, module=None):
    m = module or t.nn.Module()
    m.register_buffer(name, o(t, 2))


def _param_clash(t):
    m = t.nn.Module()
    m.x = 1
    m.register_parameter("x", t.nn.Parameter(o(t, 2)))


def _loader(t, **kw):
    return list(t.utils.data.DataLoader(t.utils.data.TensorDataset(t.arange(6.0)), **kw))


def _concat(t):
    return t.utils.data.ConcatDataset([t.utils.data.TensorDataset(o(t, 3))])


CASES = [
    # ---- linear
    ("linear bias of 2 for 1000 outputs",
     lambda t: F(t).linear(o(t, 2, 3), t.zeros(1000, 3), o(t, 2))),
    ("linear input/weight mismatch", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 5))),
    ("linear input/weight mismatch + bias", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 5), o(t, 4))),
    ("linear bias size", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 3), o(t, 5))),
    ("linear bias size 3-D input", lambda t: F(t).linear(o(t, 2, 2, 3), o(t, 4, 3), o(t, 5))),
    ("linear bias size 1-D input", lambda t: F(t).linear(o(t, 3), o(t, 4, 3), o(t, 5))),
    ("linear 2-D bias rows", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 3), o(t, 3, 4))),
    ("linear 3-D bias on 2-D input", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 3), o(t, 3, 2, 4))),
    ("linear 2-D bias on 3-D input", lambda t: F(t).linear(o(t, 2, 2, 3), o(t, 4, 3), o(t, 3, 4))),
    ("linear bias broadcasting up",
     lambda t: F(t).linear(o(t, 2, 2, 3), o(t, 4, 3), o(t, 3, 2, 2, 4))),
    ("linear 0-d input", lambda t: F(t).linear(t.tensor(1.0), o(t, 4, 3))),
    ("linear 1-D weight with bias", lambda t: F(t).linear(o(t, 2, 3), o(t, 3), o(t, 2))),
    ("linear bias dtype", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 3), o(t, 4).double())),
    ("linear input dtype with bias",
     lambda t: F(t).linear(o(t, 2, 3).double(), o(t, 4, 3), o(t, 4))),
    ("linear non-tensor bias", lambda t: F(t).linear(o(t, 2, 3), o(t, 4, 3), 3)),
    ("Linear([1., 2., 3.])", lambda t: t.nn.Linear([1.0, 2.0, 3.0])),
    ("Linear([1., 2., 3.], 4)", lambda t: t.nn.Linear([1.0, 2.0, 3.0], 4)),
    ("Linear(-1, 4)", lambda t: t.nn.Linear(-1, 4)),
    ("Linear(4, -2)", lambda t: t.nn.Linear(4, -2)),
    ("Linear(2.5, 4)", lambda t: t.nn.Linear(2.5, 4)),
    ("Linear forward wrong features", lambda t: t.nn.Linear(3, 4)(o(t, 2, 5))),
    # ---- convolution
    ("conv2d channel mismatch", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 2, 3, 3))),
    ("conv2d groups not dividing out channels",
     lambda t: F(t).conv2d(o(t, 1, 4, 5, 5), o(t, 3, 2, 3, 3), groups=2)),
    ("conv2d groups not dividing in channels",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 1, 3, 3), groups=2)),
    ("conv2d groups=0", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 1, 3, 3), groups=0)),
    ("conv2d groups=-1", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 1, 3, 3), groups=-1)),
    ("conv2d bias size", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), o(t, 2))),
    ("conv2d 2-D bias", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), o(t, 2, 2))),
    ("conv2d bias dtype",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), o(t, 4).double())),
    ("conv2d input dtype", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5).double(), o(t, 4, 3, 3, 3))),
    ("conv2d weight dtype", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3).double())),
    ("conv2d 3-D weight", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3))),
    ("conv2d 2-D weight", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3))),
    ("conv2d 5-D weight", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3, 3))),
    ("conv2d 2-D input", lambda t: F(t).conv2d(o(t, 5, 5), o(t, 4, 3, 3, 3))),
    ("conv2d 5-D input", lambda t: F(t).conv2d(o(t, 1, 1, 3, 5, 5), o(t, 4, 3, 3, 3))),
    ("conv2d kernel larger than input", lambda t: F(t).conv2d(o(t, 1, 3, 2, 2), o(t, 4, 3, 3, 3))),
    ("conv2d zero kernel", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 0, 3))),
    ("conv2d no out channels", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 0, 3, 3, 3))),
    ("conv2d stride=0", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), stride=0)),
    ("conv2d stride=-1", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), stride=-1)),
    ("conv2d dilation=0", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), dilation=0)),
    ("conv2d padding=-1", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), padding=-1)),
    ("conv2d 3 paddings",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), padding=(1, 1, 1))),
    ("conv2d 3 strides",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), stride=(1, 1, 1))),
    ("conv2d padding='valid2'",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), padding="valid2")),
    ("conv2d padding='same' stride 2",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), stride=2, padding="same")),
    ("conv2d padding='same' 3-D weight",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3), padding="same")),
    ("conv2d float stride", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), None, 1.5)),
    ("conv1d float stride", lambda t: F(t).conv1d(o(t, 1, 3, 5), o(t, 4, 3, 3), None, 1.5)),
    ("conv3d float padding",
     lambda t: F(t).conv3d(o(t, 1, 2, 3, 3, 3), o(t, 3, 2, 1, 1, 1), None, 1, 1.5)),
    ("conv1d stride list with a float",
     lambda t: F(t).conv1d(o(t, 1, 3, 5), o(t, 4, 3, 3), None, [1, 2.0])),
    ("conv2d dilation list with a float",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), None, 1, 0, [1, 2.0])),
    ("conv3d stride list with a float and a float padding",
     lambda t: F(t).conv3d(o(t, 1, 2, 3, 3, 3), o(t, 3, 2, 1, 1, 1), None, [1, 2.0], 1.5)),
    # a negative dilation fails with the parameter checks, a zero one after the shape checks
    ("conv2d dilation=-1", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), dilation=-1)),
    ("conv1d dilation=0", lambda t: F(t).conv1d(o(t, 1, 3, 5), o(t, 4, 3, 3), dilation=0)),
    ("conv3d dilation=0", lambda t: F(t).conv3d(o(t, 1, 2, 5, 5, 5), o(t, 3, 2, 3, 3, 3),
                                                dilation=0)),
    ("conv2d channel mismatch and dilation=0",
     lambda t: F(t).conv2d(o(t, 1, 2, 5, 5), o(t, 4, 3, 3, 3), dilation=0)),
    ("conv_transpose2d dilation=0",
     lambda t: F(t).conv_transpose2d(o(t, 1, 2, 5, 5), o(t, 2, 3, 3, 3), dilation=0)),
    ("conv_transpose3d channel mismatch and dilation=0",
     lambda t: F(t).conv_transpose3d(o(t, 1, 2, 3, 3, 3), o(t, 3, 3, 1, 1, 1), dilation=0)),
    ("conv_transpose1d dilation=-1",
     lambda t: F(t).conv_transpose1d(o(t, 1, 2, 5), o(t, 2, 3, 3), dilation=-1)),
    ("conv1d padding='same' 4-D weight",
     lambda t: F(t).conv1d(o(t, 1, 2, 5), o(t, 3, 2, 3, 3), padding="same")),
    ("conv1d padding='same' 6-D weight stride 2",
     lambda t: F(t).conv1d(o(t, 1, 2, 5), o(t, 3, 2, 3, 3, 3, 3), padding="same", stride=2)),
    ("conv2d float groups",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), None, 1, 0, 1, 1.5)),
    # ---- the argument parser's words for an argument given by keyword (no position) in the
    # functions PyTorch binds in C, and for one given by position
    ("conv2d stride='a' by keyword",
     lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), stride="a")),
    ("conv2d two keywords", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), padding=1,
                                                  groups=1.5)),
    ("conv2d all by keyword", lambda t: F(t).conv2d(input="a", weight=o(t, 4, 3, 3, 3))),
    ("conv2d a default given", lambda t: F(t).conv2d(o(t, 1, 3, 5, 5), o(t, 4, 3, 3, 3), None,
                                                     "a", 0)),
    ("conv_transpose2d groups=1.5 by keyword",
     lambda t: F(t).conv_transpose2d(o(t, 1, 3, 5, 5), o(t, 3, 4, 3, 3), groups=1.5)),
    ("conv_transpose2d padding 'same'",
     lambda t: F(t).conv_transpose2d(o(t, 1, 3, 5, 5), o(t, 3, 4, 3, 3), None, 1, "same")),
    ("conv_transpose2d padding 'same' by keyword",
     lambda t: F(t).conv_transpose2d(o(t, 1, 3, 5, 5), o(t, 3, 4, 3, 3), padding="same")),
    ("avg_pool2d kernel_size 'a'", lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), "a")),
    ("avg_pool2d kernel_size 'a' by keyword",
     lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), kernel_size="a")),
    ("avg_pool2d kernel_size ['a'] by keyword",
     lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), kernel_size=["a"])),
    ("avg_pool1d ceil_mode by keyword", lambda t: F(t).avg_pool1d(o(t, 1, 4), 2, ceil_mode="a")),
    ("lp_pool2d ceil_mode by keyword",
     lambda t: F(t).lp_pool2d(o(t, 1, 1, 4, 4), 2, 2, ceil_mode="a")),
    ("max_pool2d kernel_size by keyword (a Python function: by position)",
     lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), kernel_size="a")),
    ("pixel_shuffle 2.0", lambda t: F(t).pixel_shuffle(o(t, 1, 4, 2, 2), 2.0)),
    ("pixel_shuffle 2.0 by keyword",
     lambda t: F(t).pixel_shuffle(o(t, 1, 4, 2, 2), upscale_factor=2.0)),
    ("pixel_shuffle of a number", lambda t: F(t).pixel_shuffle(1, 2)),
    ("pixel_unshuffle 2.0 by keyword",
     lambda t: F(t).pixel_unshuffle(o(t, 1, 1, 4, 4), downscale_factor=2.0)),
    ("channel_shuffle 2.0", lambda t: F(t).channel_shuffle(o(t, 1, 4, 2, 2), 2.0)),
    ("channel_shuffle 2.0 by keyword",
     lambda t: F(t).channel_shuffle(o(t, 1, 4, 2, 2), groups=2.0)),
    ("one_hot 1.5", lambda t: F(t).one_hot(t.tensor([1]), 1.5)),
    ("one_hot 1.5 by keyword", lambda t: F(t).one_hot(t.tensor([1]), num_classes=1.5)),
    ("linear weight=1 by keyword", lambda t: F(t).linear(o(t, 2, 3), weight=1)),
    ("gelu input=1 by keyword", lambda t: F(t).gelu(input=1)),
    ("softplus beta='a' by keyword", lambda t: F(t).softplus(o(t, 2), beta="a")),
    ("cosine_similarity x2=1 by keyword", lambda t: F(t).cosine_similarity(o(t, 2, 3), x2=1)),
    ("sdpa attn_mask=1", lambda t: F(t).scaled_dot_product_attention(*[o(t, 1, 2, 3)] * 3, 1)),
    ("sdpa attn_mask=1 by keyword",
     lambda t: F(t).scaled_dot_product_attention(*[o(t, 1, 2, 3)] * 3, attn_mask=1)),
    ("sdpa value=1 by keyword",
     lambda t: F(t).scaled_dot_product_attention(o(t, 1, 2, 3), o(t, 1, 2, 3), value=1)),
    ("sdpa scale by position",
     lambda t: F(t).scaled_dot_product_attention(*[o(t, 1, 2, 3)] * 3, None, 0.0, False, 1.0)),
    ("Conv2d(stride=0) forward", lambda t: t.nn.Conv2d(3, 4, 3, stride=0)(o(t, 1, 3, 5, 5))),
    ("Conv2d(padding='valid2')", lambda t: t.nn.Conv2d(3, 4, 3, padding="valid2")),
    ("Conv2d(padding='same', stride=2)", lambda t: t.nn.Conv2d(3, 4, 3, stride=2, padding="same")),
    ("Conv2d(padding=-1) forward", lambda t: t.nn.Conv2d(3, 4, 3, padding=-1)(o(t, 1, 3, 5, 5))),
    ("Conv2d(kernel_size=2.5)", lambda t: t.nn.Conv2d(3, 4, 2.5)),
    ("Conv2d(kernel_size='a')", lambda t: t.nn.Conv2d(3, 4, "a")),
    ("Conv2d(3., 4, 3)", lambda t: t.nn.Conv2d(3.0, 4, 3)),
    ("Conv2d(kernel_size=-1)", lambda t: t.nn.Conv2d(3, 4, -1)),
    ("Conv2d(groups=0)", lambda t: t.nn.Conv2d(3, 4, 3, groups=0)),
    ("Conv2d(groups=-1)", lambda t: t.nn.Conv2d(3, 4, 3, groups=-1)),
    ("Conv2d in_channels % groups", lambda t: t.nn.Conv2d(3, 4, 3, groups=2)),
    ("Conv2d out_channels % groups", lambda t: t.nn.Conv2d(4, 3, 3, groups=2)),
    ("Conv2d(-3, 4, 3)", lambda t: t.nn.Conv2d(-3, 4, 3)),
    ("Conv2d(3, -4, 3)", lambda t: t.nn.Conv2d(3, -4, 3)),
    ("Conv2d(padding_mode='foo')", lambda t: t.nn.Conv2d(3, 4, 3, padding_mode="foo")),
    ("Conv2d(dilation=0) forward", lambda t: t.nn.Conv2d(3, 4, 3, dilation=0)(o(t, 1, 3, 5, 5))),
    ("Conv2d 3 strides forward",
     lambda t: t.nn.Conv2d(3, 4, 3, stride=(1, 1, 1))(o(t, 1, 3, 5, 5))),
    ("Conv2d forward wrong channels", lambda t: t.nn.Conv2d(3, 4, 3)(o(t, 1, 2, 5, 5))),
    ("Conv2d forward 2-D input", lambda t: t.nn.Conv2d(3, 4, 3)(o(t, 5, 5))),
    # ---- pooling
    ("max_pool2d kernel larger than input", lambda t: F(t).max_pool2d(o(t, 1, 1, 2, 2), 3)),
    ("avg_pool2d kernel larger than input", lambda t: F(t).avg_pool2d(o(t, 1, 1, 2, 2), 3)),
    ("max_pool2d pad > kernel/2", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), 3, padding=2)),
    ("avg_pool2d pad > kernel/2", lambda t: F(t).avg_pool2d(o(t, 1, 1, 5, 5), 3, padding=2)),
    ("max_pool2d pad > kernel/2 with dilation",
     lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 3, 1, 2, 2)),
    ("max_pool2d padding=-1", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), 3, padding=-1)),
    ("avg_pool2d padding=-1", lambda t: F(t).avg_pool2d(o(t, 1, 1, 5, 5), 3, padding=-1)),
    ("max_pool2d kernel 0", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), 0)),
    ("avg_pool2d kernel 0", lambda t: F(t).avg_pool2d(o(t, 1, 1, 5, 5), 0)),
    ("max_pool2d kernel 0 stride 1", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 0, 1)),
    ("max_pool2d kernel -2", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), -2)),
    ("max_pool2d stride 0", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), 2, stride=0)),
    ("avg_pool2d stride 0", lambda t: F(t).avg_pool2d(o(t, 1, 1, 5, 5), 2, stride=0)),
    ("max_pool2d stride -1", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), 2, stride=-1)),
    ("max_pool2d dilation 0", lambda t: F(t).max_pool2d(o(t, 1, 1, 5, 5), 2, dilation=0)),
    ("max_pool2d 2-D input", lambda t: F(t).max_pool2d(o(t, 4, 4), 2)),
    ("avg_pool2d 2-D input", lambda t: F(t).avg_pool2d(o(t, 4, 4), 2)),
    ("avg_pool2d 1-D input", lambda t: F(t).avg_pool2d(o(t, 4), 2)),
    ("max_pool2d 5-D input", lambda t: F(t).max_pool2d(o(t, 1, 1, 1, 4, 4), 2)),
    ("avg_pool2d 5-D input", lambda t: F(t).avg_pool2d(o(t, 1, 1, 1, 4, 4), 2)),
    ("AvgPool2d(2) on 2-D input", lambda t: t.nn.AvgPool2d(2)(o(t, 4, 4))),
    ("MaxPool2d(2) on 2-D input", lambda t: t.nn.MaxPool2d(2)(o(t, 4, 4))),
    ("MaxPool2d(0) forward", lambda t: t.nn.MaxPool2d(0)(o(t, 1, 1, 4, 4))),
    ("AvgPool2d(0) forward", lambda t: t.nn.AvgPool2d(0)(o(t, 1, 1, 4, 4))),
    ("max_pool2d float kernel", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 2.5)),
    ("avg_pool2d float kernel", lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), 2.5)),
    ("max_pool2d float in kernel pair", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), (2, 2.5))),
    ("max_pool2d float stride", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 2, 2.5)),
    ("max_pool2d 3 kernel sizes", lambda t: F(t).max_pool2d(o(t, 4, 4), (2, 2, 2))),
    ("avg_pool2d 3 kernel sizes", lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), (2, 2, 2))),
    ("max_pool2d 3 strides", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 2, (1, 1, 1))),
    ("max_pool2d 3 paddings", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 2, padding=(1, 1, 1))),
    ("max_pool2d ceil_mode=2", lambda t: F(t).max_pool2d(o(t, 1, 1, 4, 4), 2, ceil_mode=2)),
    ("max_pool2d no channels", lambda t: F(t).max_pool2d(o(t, 1, 0, 4, 4), 2)),
    # a 3-D pool checks kernel, stride and dilation before the empty dims (as the 2-D ones)
    ("max_pool3d no channels, stride -1",
     lambda t: F(t).max_pool3d(o(t, 1, 0, 5, 5, 5), 3, -1)),
    ("max_pool3d zero depth, dilation 0",
     lambda t: F(t).max_pool3d(o(t, 1, 1, 0, 5, 5), 3, 1, 0, 0)),
    ("avg_pool3d no channels, kernel 0 stride -1",
     lambda t: F(t).avg_pool3d(o(t, 1, 0, 5, 5, 5), 0, -1)),
    ("max_pool3d pad > kernel/2 with dilation",
     lambda t: F(t).max_pool3d(o(t, 1, 1, 5, 5, 5), 2, 1, 2, 3)),
    ("avg_pool3d kernel larger than input", lambda t: F(t).avg_pool3d(o(t, 1, 1, 2, 2, 2), 3)),
    ("max_pool2d zero height", lambda t: F(t).max_pool2d(o(t, 1, 1, 0, 4), 2)),
    ("avg_pool2d zero height", lambda t: F(t).avg_pool2d(o(t, 1, 1, 0, 4), 2)),
    ("max_pool2d bool", lambda t: F(t).max_pool2d(o(t, 1, 4, 4).bool(), 2)),
    ("avg_pool2d divisor_override=0",
     lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), 2, divisor_override=0)),
    ("avg_pool2d float divisor_override",
     lambda t: F(t).avg_pool2d(o(t, 1, 1, 4, 4), 2, divisor_override=1.5)),
    ("adaptive_avg_pool2d 2-D input", lambda t: F(t).adaptive_avg_pool2d(o(t, 4, 4), 2)),
    ("adaptive_avg_pool2d 1-D input", lambda t: F(t).adaptive_avg_pool2d(o(t, 4), 2)),
    ("adaptive_avg_pool2d output -1", lambda t: F(t).adaptive_avg_pool2d(o(t, 1, 1, 4, 4), -1)),
    ("adaptive_avg_pool2d empty height", lambda t: F(t).adaptive_avg_pool2d(o(t, 1, 1, 0, 4), 2)),
    ("adaptive_avg_pool2d 3 sizes",
     lambda t: F(t).adaptive_avg_pool2d(o(t, 1, 1, 4, 4), (2, 2, 2))),
    ("adaptive_avg_pool2d float size", lambda t: F(t).adaptive_avg_pool2d(o(t, 1, 1, 4, 4), 2.5)),
    ("adaptive_avg_pool2d int input",
     lambda t: F(t).adaptive_avg_pool2d(L(t, [[[[1, 2], [3, 4]]]]), 2)),
    # ---- unfold / fold / pad
    ("unfold 2-D input", lambda t: F(t).unfold(o(t, 5, 5), 2)),
    ("unfold 5-D input", lambda t: F(t).unfold(o(t, 1, 1, 1, 4, 4), 2)),
    ("unfold kernel larger than input", lambda t: F(t).unfold(o(t, 1, 1, 2, 3), 3)),
    ("unfold stride 0", lambda t: F(t).unfold(o(t, 1, 1, 4, 4), 2, stride=0)),
    ("unfold padding -1", lambda t: F(t).unfold(o(t, 1, 1, 4, 4), 2, padding=-1)),
    ("unfold kernel 0", lambda t: F(t).unfold(o(t, 1, 1, 4, 4), 0)),
    ("unfold 1 kernel size", lambda t: F(t).unfold(o(t, 1, 1, 4, 4), (2,))),
    ("unfold float kernel", lambda t: F(t).unfold(o(t, 1, 1, 4, 4), 2.5)),
    ("unfold no channels", lambda t: F(t).unfold(o(t, 1, 0, 4, 4), 2)),
    ("fold channels not divisible", lambda t: F(t).fold(o(t, 1, 5, 9), (4, 4), 2)),
    ("fold wrong number of blocks", lambda t: F(t).fold(o(t, 1, 4, 10), (4, 4), 2)),
    ("fold 4-D input", lambda t: F(t).fold(o(t, 1, 4, 9, 1), (4, 4), 2)),
    ("fold stride 0", lambda t: F(t).fold(o(t, 1, 4, 9), (4, 4), 2, stride=0)),
    ("fold output too small", lambda t: F(t).fold(o(t, 1, 4, 9), (1, 1), 2)),
    ("fold 1 output size", lambda t: F(t).fold(o(t, 1, 4, 9), (4,), 2)),
    ("pad odd length", lambda t: F(t).pad(o(t, 2, 2), (1,))),
    ("pad longer than dims", lambda t: F(t).pad(o(t, 2, 3), (1, 1, 1, 1, 1, 1))),
    ("pad crops below zero", lambda t: F(t).pad(o(t, 2, 3), (-2, -2))),
    ("pad unknown mode", lambda t: F(t).pad(o(t, 2, 3), (1, 1), mode="foo")),
    ("pad float width", lambda t: F(t).pad(o(t, 2, 3), (1.5, 1))),
    ("pad int widths", lambda t: F(t).pad(o(t, 2, 3), 1)),
    ("pad str value", lambda t: F(t).pad(o(t, 2, 3), (1, 1), value="a")),
    # ---- normalization
    ("layer_norm short weight", lambda t: F(t).layer_norm(o(t, 2, 8), (8,), o(t, 2), o(t, 8))),
    ("layer_norm short bias", lambda t: F(t).layer_norm(o(t, 2, 8), (8,), o(t, 8), o(t, 2))),
    ("layer_norm weight of other shape", lambda t: F(t).layer_norm(o(t, 2, 8), (8,), o(t, 2, 4))),
    ("layer_norm wrong normalized_shape", lambda t: F(t).layer_norm(o(t, 2, 8), (4,))),
    ("layer_norm normalized_shape too long", lambda t: F(t).layer_norm(o(t, 8), (2, 8))),
    ("layer_norm empty normalized_shape", lambda t: F(t).layer_norm(o(t, 2, 8), ())),
    ("layer_norm float normalized_shape", lambda t: F(t).layer_norm(o(t, 2, 8), 8.0)),
    ("layer_norm int input", lambda t: F(t).layer_norm(L(t, [[1, 2]]), (2,))),
    ("layer_norm weight dtype", lambda t: F(t).layer_norm(o(t, 2, 8), (8,), o(t, 8).double())),
    ("layer_norm input dtype", lambda t: F(t).layer_norm(o(t, 2, 8).double(), (8,), o(t, 8))),
    ("LayerNorm(4) on 8 features", lambda t: t.nn.LayerNorm(4)(o(t, 2, 8))),
    ("LayerNorm(-4)", lambda t: t.nn.LayerNorm(-4)),
    ("LayerNorm((2, 2.5))", lambda t: t.nn.LayerNorm((2, 2.5))),
    ("batch_norm running_mean size", lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 2), o(t, 3))),
    ("batch_norm running_var size", lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), o(t, 5))),
    ("batch_norm running_mean size training",
     lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 2), o(t, 3), training=True)),
    ("batch_norm weight size", lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), o(t, 3), o(t, 2))),
    ("batch_norm bias size",
     lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), o(t, 3), None, o(t, 2))),
    ("batch_norm 2-D running_mean", lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 1, 3), o(t, 3))),
    ("batch_norm eval without running_mean", lambda t: F(t).batch_norm(o(t, 4, 3), None, o(t, 3))),
    ("batch_norm eval without running_var", lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), None)),
    ("batch_norm 1-D input", lambda t: F(t).batch_norm(o(t, 4), o(t, 4), o(t, 4))),
    ("batch_norm 1-D input training",
     lambda t: F(t).batch_norm(o(t, 4), None, None, training=True)),
    ("batch_norm int input", lambda t: F(t).batch_norm(L(t, [[1, 2], [3, 4]]), o(t, 2), o(t, 2))),
    ("batch_norm double stats", lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3).double(), o(t, 3))),
    ("batch_norm double input",
     lambda t: F(t).batch_norm(o(t, 4, 3).double(), o(t, 3), o(t, 3))),
    ("batch_norm momentum=None training",
     lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), o(t, 3), momentum=None, training=True)),
    ("batch_norm momentum=None eval",
     lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), o(t, 3), momentum=None)),
    ("batch_norm eps=0 training",
     lambda t: F(t).batch_norm(o(t, 4, 3), o(t, 3), o(t, 3), eps=0, training=True)),
    ("BatchNorm1d(eps=-1) training",
     lambda t: t.nn.BatchNorm1d(3, eps=-1)(t.arange(12.0).reshape(4, 3))),
    ("BatchNorm1d(eps=-1) eval",
     lambda t: t.nn.BatchNorm1d(3, eps=-1).eval()(t.arange(12.0).reshape(4, 3))),
    ("BatchNorm1d wrong channels", lambda t: t.nn.BatchNorm1d(3)(o(t, 4, 5))),
    ("BatchNorm2d 3-D input", lambda t: t.nn.BatchNorm2d(3)(o(t, 3, 2, 2))),
    ("BatchNorm1d one value per channel", lambda t: t.nn.BatchNorm1d(3)(o(t, 1, 3))),
    ("BatchNorm1d(-3)", lambda t: t.nn.BatchNorm1d(-3)),
    ("BatchNorm1d(2.5)", lambda t: t.nn.BatchNorm1d(2.5)),
    # ---- embedding
    ("embedding index out of range", lambda t: F(t).embedding(L(t, [0, 5]), o(t, 5, 2))),
    ("embedding negative index", lambda t: F(t).embedding(L(t, [0, -1]), o(t, 5, 2))),
    ("embedding float indices", lambda t: F(t).embedding(o(t, 2), o(t, 5, 2))),
    ("embedding bool indices", lambda t: F(t).embedding(t.tensor([True]), o(t, 5, 2))),
    ("embedding uint8 indices",
     lambda t: F(t).embedding(t.tensor([0], dtype=t.uint8), o(t, 5, 2))),
    ("embedding 1-D weight", lambda t: F(t).embedding(L(t, [0]), o(t, 5))),
    ("embedding empty weight", lambda t: F(t).embedding(L(t, [0]), o(t, 0, 2))),
    ("embedding padding_idx out of range",
     lambda t: F(t).embedding(L(t, [0]), o(t, 5, 2), padding_idx=7)),
    ("embedding padding_idx -6", lambda t: F(t).embedding(L(t, [0]), o(t, 5, 2), padding_idx=-6)),
    ("embedding float padding_idx",
     lambda t: F(t).embedding(L(t, [0]), o(t, 5, 2), padding_idx=1.5)),
    ("Embedding index out of range", lambda t: t.nn.Embedding(5, 2)(L(t, [7]))),
    ("Embedding float indices", lambda t: t.nn.Embedding(5, 2)(o(t, 2))),
    ("Embedding(padding_idx=7)", lambda t: t.nn.Embedding(5, 2, padding_idx=7)),
    ("Embedding(padding_idx=-7)", lambda t: t.nn.Embedding(5, 2, padding_idx=-7)),
    ("Embedding(-5, 2)", lambda t: t.nn.Embedding(-5, 2)),
    ("Embedding(5.5, 2)", lambda t: t.nn.Embedding(5.5, 2)),
    ("Embedding _weight shape", lambda t: t.nn.Embedding(5, 2, _weight=o(t, 4, 2))),
    ("Embedding.from_pretrained 1-D", lambda t: t.nn.Embedding.from_pretrained(o(t, 5))),
    # ---- losses
    ("binary_cross_entropy weight of 2 on 8",
     lambda t: F(t).binary_cross_entropy(o(t, 8) * 0.5, o(t, 8), weight=o(t, 2))),
    ("binary_cross_entropy weight broadcasting up",
     lambda t: F(t).binary_cross_entropy(o(t, 4) * 0.5, o(t, 4), weight=o(t, 2, 4))),
    ("binary_cross_entropy target shape",
     lambda t: F(t).binary_cross_entropy(o(t, 8) * 0.5, o(t, 4))),
    ("binary_cross_entropy int target",
     lambda t: F(t).binary_cross_entropy(o(t, 4) * 0.5, L(t, [1, 0, 1, 0]))),
    ("binary_cross_entropy int input",
     lambda t: F(t).binary_cross_entropy(L(t, [1, 0, 1, 0]), o(t, 4))),
    ("binary_cross_entropy int input and target",
     lambda t: F(t).binary_cross_entropy(L(t, [1, 0]), L(t, [1, 0]))),
    ("binary_cross_entropy double target",
     lambda t: F(t).binary_cross_entropy(o(t, 2) * 0.5, o(t, 2).double())),
    ("binary_cross_entropy input outside [0, 1]",
     lambda t: F(t).binary_cross_entropy(o(t, 2) * 2, o(t, 2))),
    ("binary_cross_entropy reduction", lambda t: F(t).binary_cross_entropy(
        o(t, 4) * 0.5, o(t, 4), reduction="foo")),
    ("BCELoss weight of 2 on 8", lambda t: t.nn.BCELoss(weight=o(t, 2))(o(t, 8) * 0.5, o(t, 8))),
    ("bce_with_logits weight of 2 on 8",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 8), o(t, 8), weight=o(t, 2))),
    ("bce_with_logits pos_weight of 2 on 8",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 8), o(t, 8), pos_weight=o(t, 2))),
    ("bce_with_logits pos_weight broadcasting up",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 4), o(t, 4), pos_weight=o(t, 2, 4))),
    ("bce_with_logits weight broadcasting up",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 4), o(t, 4), weight=o(t, 2, 4))),
    ("bce_with_logits target shape",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 8), o(t, 4))),
    ("bce_with_logits int target",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 4), L(t, [1, 0, 1, 0]))),
    ("bce_with_logits bool target",
     lambda t: F(t).binary_cross_entropy_with_logits(o(t, 2), o(t, 2).bool())),
    ("bce_with_logits int input",
     lambda t: F(t).binary_cross_entropy_with_logits(L(t, [1, 2]), L(t, [1, 1]))),
    ("BCEWithLogitsLoss weight of 2 on 8",
     lambda t: t.nn.BCEWithLogitsLoss(weight=o(t, 2))(o(t, 8), o(t, 8))),
    ("BCEWithLogitsLoss pos_weight of 3 on 8",
     lambda t: t.nn.BCEWithLogitsLoss(pos_weight=o(t, 3))(o(t, 8), o(t, 8))),
    ("cross_entropy weight of 2 for 10 classes",
     lambda t: F(t).cross_entropy(o(t, 4, 10), L(t, [1, 2, 3, 9]), weight=o(t, 2))),
    ("cross_entropy weight of 2 for 10**6 classes",
     lambda t: F(t).cross_entropy(t.zeros(1, 10**6), L(t, [10**6 - 1]), weight=o(t, 2))),
    ("nll_loss weight of 2 for 10 classes",
     lambda t: F(t).nll_loss(o(t, 4, 10), L(t, [1, 2, 3, 9]), weight=o(t, 2))),
    ("nll_loss weight of 12 for 10 classes",
     lambda t: F(t).nll_loss(o(t, 4, 10), L(t, [1, 2, 3, 9]), weight=o(t, 12))),
    ("nll_loss 2-D weight",
     lambda t: F(t).nll_loss(o(t, 4, 10), L(t, [1, 2, 3, 9]), weight=o(t, 2, 5))),
    ("nll_loss spatial weight size",
     lambda t: F(t).nll_loss(o(t, 2, 3, 4, 5), t.zeros(2, 4, 5, dtype=t.long), weight=o(t, 2))),
    ("nll_loss weight dtype",
     lambda t: F(t).nll_loss(o(t, 4, 3), L(t, [1, 2, 0, 0]), o(t, 3).double())),
    ("cross_entropy target 5 of 3 classes", lambda t: F(t).cross_entropy(o(t, 4, 3),
                                                                         L(t, [1, 2, 5, 0]))),
    ("cross_entropy target -3", lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, -3, 0]))),
    ("nll_loss target 5 of 3 classes", lambda t: F(t).nll_loss(o(t, 4, 3), L(t, [1, 2, 5, 0]))),
    ("nll_loss 1-D input target 5", lambda t: F(t).nll_loss(o(t, 3), L(t, 5))),
    # no classes: the (N, C, 1, -1) view of a 3-D or 5-D input has no room for the targets
    ("nll_loss 3-D input of 0 classes",
     lambda t: F(t).nll_loss(o(t, 2, 0, 3), t.zeros(2, 3, dtype=t.long))),
    ("nll_loss 5-D input of 0 classes",
     lambda t: F(t).nll_loss(o(t, 2, 0, 3, 1, 1), t.zeros(2, 3, 1, 1, dtype=t.long))),
    ("cross_entropy target batch", lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0]))),
    ("cross_entropy 2-D target", lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [[1, 2], [0, 1]]))),
    ("cross_entropy spatial target",
     lambda t: F(t).cross_entropy(o(t, 2, 3, 4), L(t, [[1, 2, 0], [0, 1, 1]]))),
    ("cross_entropy 1-D target for 3-D input",
     lambda t: F(t).cross_entropy(o(t, 2, 3, 4), L(t, [1, 2]))),
    ("cross_entropy 4-D input 2-D target",
     lambda t: F(t).cross_entropy(o(t, 2, 3, 4, 5), L(t, [[1, 2], [0, 0]]))),
    ("nll_loss 4-D input target size",
     lambda t: F(t).nll_loss(o(t, 2, 3, 4, 5), t.zeros(2, 4, 6, dtype=t.long))),
    ("nll_loss 5-D input target size",
     lambda t: F(t).nll_loss(o(t, 2, 3, 4, 5, 6), t.zeros(2, 4, 5, 7, dtype=t.long))),
    ("nll_loss 1-D input, 2 targets", lambda t: F(t).nll_loss(o(t, 3), L(t, [1, 1]))),
    ("nll_loss 0-d input", lambda t: F(t).nll_loss(t.tensor(1.0), L(t, 1))),
    ("nll_loss 0-d target", lambda t: F(t).nll_loss(o(t, 4, 3), L(t, 1))),
    ("cross_entropy float target of other shape",
     lambda t: F(t).cross_entropy(o(t, 4, 3), o(t, 4))),
    ("cross_entropy int32 target",
     lambda t: F(t).cross_entropy(o(t, 4, 3), t.tensor([1, 2, 0, 0], dtype=t.int32))),
    ("nll_loss float target", lambda t: F(t).nll_loss(o(t, 4, 3), o(t, 4))),
    ("nll_loss int32 target",
     lambda t: F(t).nll_loss(o(t, 4, 3), t.tensor([1, 2, 0, 0], dtype=t.int32))),
    ("nll_loss bool target",
     lambda t: F(t).nll_loss(o(t, 4, 3), t.tensor([True, False, True, True]))),
    ("nll_loss int input", lambda t: F(t).nll_loss(L(t, [[1, 2, 3]]), L(t, [1]))),
    ("cross_entropy int input", lambda t: F(t).cross_entropy(L(t, [[1, 2, 3]]), L(t, [1]))),
    ("cross_entropy 0-d input and target",
     lambda t: F(t).cross_entropy(t.tensor(1.0), L(t, 1))),
    ("cross_entropy label_smoothing=2.0",
     lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0, 0]), label_smoothing=2.0)),
    ("cross_entropy label_smoothing=1.0000001", lambda t: F(t).cross_entropy(
        o(t, 4, 3), L(t, [1, 2, 0, 0]), label_smoothing=1.0000001)),
    ("cross_entropy probabilities label_smoothing=2.0",
     lambda t: F(t).cross_entropy(o(t, 4, 3), o(t, 4, 3), label_smoothing=2.0)),
    ("CrossEntropyLoss(label_smoothing=2.0)", lambda t: t.nn.CrossEntropyLoss(
        label_smoothing=2.0)(o(t, 4, 3), L(t, [1, 2, 0, 0]))),
    ("cross_entropy str label_smoothing",
     lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0, 0]), label_smoothing="a")),
    ("CrossEntropyLoss(ignore_index='x')",
     lambda t: t.nn.CrossEntropyLoss(ignore_index="x")(o(t, 4, 3), L(t, [1, 2, 0, 0]))),
    ("cross_entropy ignore_index='x'",
     lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0, 0]), ignore_index="x")),
    ("cross_entropy ignore_index=1.5",
     lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0, 0]), ignore_index=1.5)),
    ("nll_loss ignore_index='x'",
     lambda t: F(t).nll_loss(o(t, 4, 3), L(t, [1, 2, 0, 0]), ignore_index="x")),
    ("cross_entropy probabilities ignore_index",
     lambda t: F(t).cross_entropy(o(t, 4, 3), o(t, 4, 3), ignore_index=2)),
    ("cross_entropy probabilities weight of 2",
     lambda t: F(t).cross_entropy(o(t, 4, 3), o(t, 4, 3), weight=o(t, 2))),
    ("cross_entropy label smoothing weight of 2", lambda t: F(t).cross_entropy(
        o(t, 4, 3), L(t, [1, 2, 0, 0]), weight=o(t, 2), label_smoothing=0.1)),
    ("cross_entropy non-tensor weight",
     lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0, 0]), weight=3)),
    ("cross_entropy reduction",
     lambda t: F(t).cross_entropy(o(t, 4, 3), L(t, [1, 2, 0, 0]), reduction="x")),
    ("mse_loss shapes that do not broadcast", lambda t: F(t).mse_loss(o(t, 3), o(t, 4))),
    ("MSELoss shapes that do not broadcast", lambda t: t.nn.MSELoss()(o(t, 2, 3), o(t, 3, 2))),
    ("mse_loss int64", lambda t: F(t).mse_loss(L(t, [1, 2]), L(t, [1, 3]))),
    ("mse_loss bool", lambda t: F(t).mse_loss(t.tensor([True]), t.tensor([False]))),
    ("mse_loss weight size", lambda t: F(t).mse_loss(o(t, 2), o(t, 2), weight=o(t, 3))),
    ("mse_loss reduction", lambda t: F(t).mse_loss(o(t, 2), o(t, 2), reduction="x")),
    ("l1_loss shapes that do not broadcast", lambda t: F(t).l1_loss(o(t, 3), o(t, 4))),
    ("smooth_l1_loss shapes that do not broadcast",
     lambda t: F(t).smooth_l1_loss(o(t, 3), o(t, 4))),
    ("smooth_l1_loss int64", lambda t: F(t).smooth_l1_loss(L(t, [1, 2]), L(t, [1, 3]))),
    ("smooth_l1_loss beta=-1",
     lambda t: F(t).smooth_l1_loss(o(t, 2), o(t, 2), beta=-1.0)),
    # ---- dropout and activations
    ("dropout p=2", lambda t: F(t).dropout(o(t, 2), 2.0)),
    ("dropout p=-0.5", lambda t: F(t).dropout(o(t, 2), -0.5)),
    ("Dropout(2.0)", lambda t: t.nn.Dropout(2.0)),
    ("Dropout(-0.1)", lambda t: t.nn.Dropout(-0.1)),
    ("dropout int input", lambda t: F(t).dropout(L(t, [1, 2]), 0.5)),
    ("dropout bool input", lambda t: F(t).dropout(o(t, 2).bool(), 0.5)),
    ("gelu int input", lambda t: F(t).gelu(L(t, [1, 2]))),
    ("gelu approximate='x'", lambda t: F(t).gelu(o(t, 2), approximate="x")),
    ("silu int input", lambda t: F(t).silu(L(t, [1, 2]))),
    ("leaky_relu int input", lambda t: F(t).leaky_relu(L(t, [1, 2]))),
    ("leaky_relu str slope", lambda t: F(t).leaky_relu(o(t, 2), "a")),
    ("leaky_relu_ str slope by keyword", lambda t: F(t).leaky_relu_(o(t, 2), negative_slope="a")),
    ("elu_ str alpha by keyword", lambda t: F(t).elu_(o(t, 2), alpha="a")),
    ("celu_ str alpha", lambda t: F(t).celu_(o(t, 2), "a")),
    ("hardtanh_ str min_val by keyword", lambda t: F(t).hardtanh_(o(t, 2), min_val="a")),
    ("threshold_ str threshold", lambda t: F(t).threshold_(o(t, 2), "a", 0.0)),
    ("rrelu_ str lower by keyword", lambda t: F(t).rrelu_(o(t, 2), lower="a")),
    ("selu_ str input", lambda t: F(t).selu_("a")),
    ("one_hot float input", lambda t: F(t).one_hot(o(t, 3))),
    ("one_hot negative class", lambda t: F(t).one_hot(L(t, [0, -1]))),
    ("one_hot class 3 of 3", lambda t: F(t).one_hot(L(t, [0, 3]), 3)),
    ("one_hot num_classes=0", lambda t: F(t).one_hot(L(t, [0, 2]), 0)),
    ("one_hot int32 input", lambda t: F(t).one_hot(t.tensor([1], dtype=t.int32), 3)),
    ("one_hot empty", lambda t: F(t).one_hot(t.zeros(0, dtype=t.long))),
    ("one_hot float num_classes", lambda t: F(t).one_hot(L(t, [0, 1]), 2.5)),
    # ---- modules and containers
    ("ModuleDict({1: m})", lambda t: t.nn.ModuleDict({1: t.nn.ReLU()})),
    ("ModuleDict({'a.b': m})", lambda t: t.nn.ModuleDict({"a.b": t.nn.ReLU()})),
    ("ModuleDict({'a': 3})", lambda t: t.nn.ModuleDict({"a": 3})),
    ("ModuleDict({'keys': m})", lambda t: t.nn.ModuleDict({"keys": t.nn.ReLU()})),
    ("ModuleDict.update(3)", lambda t: t.nn.ModuleDict().update(3)),
    ("ModuleDict.update([('a',)])", lambda t: t.nn.ModuleDict().update([("a",)])),
    ("add_module('a.b')", lambda t: _named(t, "a.b")),
    ("add_module('')", lambda t: _named(t, "")),
    ("add_module(1)", lambda t: _named(t, 1)),
    ("add_module clashing with a parameter",
     lambda t: t.nn.Linear(2, 2).add_module("weight", t.nn.ReLU())),
    ("add_module clashing with an attribute", _attr_clash),
    ("add_module('training')", lambda t: _named(t, "training")),
    ("add_module(non-module)", lambda t: t.nn.Module().add_module("a", 3)),
    ("register_buffer('a.b')", lambda t: _buffer(t, "a.b")),
    ("register_buffer('')", lambda t: _buffer(t, "")),
    ("register_buffer(1)", lambda t: _buffer(t, 1)),
    ("register_buffer clashing with a parameter", lambda t: _buffer(t, "weight",
                                                                    t.nn.Linear(2, 2))),
    ("register_buffer(non-tensor)", lambda t: t.nn.Module().register_buffer("a", 3)),
    ("register_parameter clashing with an attribute", _param_clash),
    ("register_parameter(1)", lambda t: t.nn.Module().register_parameter(1, None)),
    ("register_parameter('a.b')", lambda t: t.nn.Module().register_parameter("a.b", None)),
    ("Module(3)", lambda t: t.nn.Module(3)),
    ("Module(a=3)", lambda t: t.nn.Module(a=3)),
    ("Module without forward", lambda t: t.nn.Module()(o(t, 2))),
    ("Sequential[3]", lambda t: t.nn.Sequential(t.nn.ReLU())[3]),
    ("Sequential['a']", lambda t: t.nn.Sequential(t.nn.ReLU())["a"]),
    ("Sequential[3] = m", lambda t: t.nn.Sequential(t.nn.ReLU()).__setitem__(3, t.nn.ReLU())),
    ("Sequential[0] = 3", lambda t: t.nn.Sequential(t.nn.ReLU()).__setitem__(0, 3)),
    ("Sequential(3)", lambda t: t.nn.Sequential(3)),
    ("ModuleList[3]", lambda t: t.nn.ModuleList([t.nn.ReLU()])[3]),
    ("ModuleList['a']", lambda t: t.nn.ModuleList([t.nn.ReLU()])["a"]),
    ("ModuleList[3] = m", lambda t: t.nn.ModuleList([t.nn.ReLU()]).__setitem__(3, t.nn.ReLU())),
    ("empty ModuleList[0] = m", lambda t: t.nn.ModuleList().__setitem__(0, t.nn.ReLU())),
    ("ModuleList([3])", lambda t: t.nn.ModuleList([3])),
    ("get_submodule of a missing name",
     lambda t: t.nn.Sequential(t.nn.ReLU()).get_submodule("1")),
    ("get_submodule of a parameter", lambda t: t.nn.Linear(2, 2).get_submodule("weight")),
    ("get_parameter of a missing name", lambda t: t.nn.Linear(2, 2).get_parameter("foo")),
    ("get_parameter of an attribute", lambda t: t.nn.Linear(2, 2).get_parameter("training")),
    ("assigning a tensor to a parameter",
     lambda t: setattr(t.nn.Linear(2, 2), "weight", o(t, 2, 2))),
    ("train('a')", lambda t: t.nn.Linear(2, 2).train("a")),
    ("to(int64)", lambda t: t.nn.Linear(2, 2).to(t.int64)),
    ("load_state_dict(3)", lambda t: t.nn.Linear(2, 2).load_state_dict(3)),
    ("load_state_dict wrong shape",
     lambda t: t.nn.Linear(2, 2).load_state_dict({"weight": o(t, 3, 3), "bias": o(t, 2)})),
    ("load_state_dict missing key", lambda t: t.nn.Linear(2, 2).load_state_dict(
        {"weight": o(t, 2, 2)})),
    # ---- argument types, as PyTorch's parser (and its Python) check them
    ("layer_norm normalized_shape=3", lambda t: F(t).layer_norm(o(t, 2, 3), 3)),
    ("layer_norm weight='a'", lambda t: F(t).layer_norm(o(t, 2, 3), (3,), "a")),
    ("layer_norm eps=None", lambda t: F(t).layer_norm(o(t, 2, 3), (3,), eps=None)),
    ("rms_norm weight=1.5", lambda t: F(t).rms_norm(o(t, 2, 3), (3,), 1.5)),
    ("rms_norm eps='a'", lambda t: F(t).rms_norm(o(t, 2, 3), (3,), eps="a")),
    ("group_norm bias=[1, 2]", lambda t: F(t).group_norm(o(t, 2, 4, 3), 2, bias=[1, 2])),
    ("group_norm num_groups=-1", lambda t: F(t).group_norm(o(t, 2, 4, 3), -1)),
    ("group_norm num_groups='a'", lambda t: F(t).group_norm(o(t, 2, 4, 3), "a")),
    ("batch_norm training='a'",
     lambda t: F(t).batch_norm(o(t, 2, 3), t.zeros(3), o(t, 3), training="a")),
    ("batch_norm running_mean None, running_var given",
     lambda t: F(t).batch_norm(o(t, 2, 3), None, o(t, 3), training=True)),
    ("batch_norm weight='a'", lambda t: F(t).batch_norm(o(t, 2, 3), t.zeros(3), o(t, 3), "a")),
    ("instance_norm use_input_stats=None",
     lambda t: F(t).instance_norm(o(t, 2, 3, 4), use_input_stats=None)),
    ("dropout input='a'", lambda t: F(t).dropout("a")),
    ("dropout training='a'", lambda t: F(t).dropout(o(t, 2, 3), 0.5, "a")),
    ("dropout in place training=None", lambda t: F(t).dropout(o(t, 2, 3), 0.5, None, True)),
    ("dropout2d training=1.5", lambda t: F(t).dropout2d(o(t, 2, 3, 4, 4), 0.5, 1.5)),
    ("alpha_dropout input=None", lambda t: F(t).alpha_dropout(None)),
    ("feature_alpha_dropout 1-D input", lambda t: F(t).feature_alpha_dropout(o(t, 3), 0.5, True)),
    ("dropout2d 1-D input", lambda t: F(t).dropout2d(o(t, 3), 0.5)),
    ("kl_div log_target='a'",
     lambda t: F(t).kl_div(o(t, 2, 3), o(t, 2, 3), reduction="sum", log_target="a")),
    ("pairwise_distance p=None", lambda t: F(t).pairwise_distance(o(t, 2, 3), o(t, 2, 3), None)),
    ("pairwise_distance keepdim='a' by keyword",
     lambda t: F(t).pairwise_distance(o(t, 2, 3), o(t, 2, 3), keepdim="a")),
    ("cosine_similarity dim=None", lambda t: F(t).cosine_similarity(o(t, 2, 3), o(t, 2, 3), None)),
    ("cosine_similarity eps=-1", lambda t: F(t).cosine_similarity(o(t, 2, 3), o(t, 2, 3), 1, -1)),
    ("pdist p='a'", lambda t: F(t).pdist(o(t, 3, 2), "a")),
    ("softmax dtype='a'", lambda t: F(t).softmax(o(t, 2, 3), 1, dtype="a")),
    ("log_softmax of a list", lambda t: F(t).log_softmax([1.0], 0)),
    ("softmin of a str", lambda t: F(t).softmin("a", 0)),
    ("gelu approximate by position", lambda t: F(t).gelu(o(t, 2), "tanh")),
    ("gelu approximate=None", lambda t: F(t).gelu(o(t, 2), approximate=None)),
    ("pad mode=None", lambda t: F(t).pad(o(t, 1, 2, 3), (1, 1), None)),
    ("smooth_l1_loss beta='a'", lambda t: F(t).smooth_l1_loss(o(t, 2, 3), o(t, 2, 3), beta="a")),
    ("mse_loss target='a'", lambda t: F(t).mse_loss(o(t, 2, 3), "a")),
    ("huber_loss delta=None", lambda t: F(t).huber_loss(o(t, 2, 3), o(t, 2, 3), delta=None)),
    ("huber_loss weight='a'", lambda t: F(t).huber_loss(o(t, 2, 3), o(t, 2, 3), weight="a")),
    ("interpolate scale_factor='a'",
     lambda t: F(t).interpolate(o(t, 1, 2, 3, 3), scale_factor="a", mode="bilinear")),
    ("interpolate align_corners=1.5",
     lambda t: F(t).interpolate(o(t, 1, 2, 3, 3), (4, 4), mode="bilinear", align_corners=1.5)),
    ("interpolate second scale 'a'",
     lambda t: F(t).interpolate(o(t, 1, 1, 2, 2, 2), scale_factor=[2.0, "a", 1])),
    ("interpolate area scale_factor='a'",
     lambda t: F(t).interpolate(o(t, 1, 2, 3, 3), scale_factor="a", mode="area")),
    ("interpolate mode=[1, 2]", lambda t: F(t).interpolate(o(t, 1, 2, 3, 3), 4, mode=[1, 2])),
    ("lp_pool1d norm_type='a'", lambda t: F(t).lp_pool1d(o(t, 1, 2, 6), "a", 2)),
    ("lp_pool2d kernel_size='a'", lambda t: F(t).lp_pool2d(o(t, 1, 2, 4, 4), 2, "a")),
    ("embedding sparse='a'", lambda t: F(t).embedding(L(t, [0, 2]), o(t, 3, 2), sparse="a")),
    ("embedding max_norm='a'", lambda t: F(t).embedding(L(t, [0, 2]), o(t, 3, 2), max_norm="a")),
    ("rrelu training=None", lambda t: F(t).rrelu(o(t, 2, 3), training=None)),
    ("poisson_nll_loss full='a'", lambda t: F(t).poisson_nll_loss(o(t, 2), o(t, 2), full="a")),
    ("triplet_margin_loss swap=None",
     lambda t: F(t).triplet_margin_loss(o(t, 2, 3), o(t, 2, 3), o(t, 2, 3), swap=None)),
    ("hinge_embedding_loss margin=None",
     lambda t: F(t).hinge_embedding_loss(o(t, 3), o(t, 3), None)),
    ("margin_ranking_loss margin='a'",
     lambda t: F(t).margin_ranking_loss(o(t, 3), o(t, 3), o(t, 3), "a")),
    ("multi_margin_loss margin=None",
     lambda t: F(t).multi_margin_loss(o(t, 2, 3), L(t, [0, 2]), margin=None)),
    ("binary_cross_entropy weight='a'",
     lambda t: F(t).binary_cross_entropy(o(t, 2, 3) / 2, o(t, 2, 3), "a")),
    ("bilinear bias='a'", lambda t: F(t).bilinear(o(t, 2, 3), o(t, 2, 2), o(t, 4, 3, 2), "a")),
    ("glu of a str", lambda t: F(t).glu("a")),
    ("adaptive_avg_pool2d of None", lambda t: F(t).adaptive_avg_pool2d(None, 2)),
    # ---- data
    ("DataLoader(batch_size=0)", lambda t: _loader(t, batch_size=0)),
    ("DataLoader(batch_size=-1)", lambda t: _loader(t, batch_size=-1)),
    ("DataLoader(batch_size=2.5)", lambda t: _loader(t, batch_size=2.5)),
    ("DataLoader(batch_size=True)", lambda t: _loader(t, batch_size=True)),
    ("DataLoader(batch_size='2')", lambda t: _loader(t, batch_size="2")),
    ("DataLoader(num_workers=-1)", lambda t: _loader(t, num_workers=-1)),
    ("DataLoader(drop_last='x')", lambda t: _loader(t, drop_last="x")),
    ("DataLoader(timeout=-1)", lambda t: _loader(t, timeout=-1)),
    ("DataLoader(prefetch_factor=2) without workers", lambda t: _loader(t, prefetch_factor=2)),
    ("DataLoader(persistent_workers=True) without workers",
     lambda t: _loader(t, persistent_workers=True)),
    ("DataLoader(sampler, shuffle=True)", lambda t: _loader(t, sampler=[0, 1], shuffle=True)),
    ("DataLoader(batch_size=None, drop_last=True)",
     lambda t: _loader(t, batch_size=None, drop_last=True)),
    ("BatchSampler(batch_size=0)", lambda t: t.utils.data.BatchSampler(range(3), 0, False)),
    ("BatchSampler(drop_last='x')", lambda t: t.utils.data.BatchSampler(range(3), 2, "x")),
    ("RandomSampler(num_samples=0)",
     lambda t: t.utils.data.RandomSampler(range(3), num_samples=0)),
    ("RandomSampler(replacement='x')",
     lambda t: t.utils.data.RandomSampler(range(3), replacement="x")),
    ("RandomSampler of an empty dataset", lambda t: t.utils.data.RandomSampler(range(0))),
    ("TensorDataset size mismatch", lambda t: t.utils.data.TensorDataset(o(t, 3), o(t, 4))),
    ("random_split lengths", lambda t: t.utils.data.random_split(range(5), [2, 2])),
    ("ConcatDataset index -5 of 3", lambda t: _concat(t)[-5]),
    ("ConcatDataset([])", lambda t: t.utils.data.ConcatDataset([])),
]

# parts of a message that differ between equal errors: the order of a Python set, and the
# lines on why each overload did not match that PyTorch adds when every argument is given
_SET = re.compile(r"\{('[^{}]*')\}")
_WHY = re.compile(r"\n      didn't match because [^\n]*")


def _normalize(msg):
    msg = _SET.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", msg)
    return _WHY.sub("", msg)


def _outcome(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib)
        except Exception as e:  # the outcome under test
            return type(e).__name__, _normalize(str(e))
    return None


@requires_torch
@pytest.mark.parametrize("fn", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_error_matches_pytorch(fn):
    expected = _outcome(torch, fn)
    assert expected is not None, "PyTorch accepts this call: the row belongs elsewhere"
    assert _outcome(numgrad, fn) == expected


def test_table_names_are_unique():
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names))


def test_errors_without_pytorch():
    """A few rows whose outcome is known without PyTorch at hand."""
    nF = numgrad.nn.functional
    with pytest.raises(RuntimeError, match="expanded size of the tensor \\(1000\\)"):
        nF.linear(numgrad.ones(2, 3), numgrad.zeros(1000, 3), numgrad.ones(2))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        nF.cross_entropy(numgrad.ones(4, 3), numgrad.tensor([1, 2, 5, 0]))
    with pytest.raises(IndexError, match="index out of range in self"):
        nF.embedding(numgrad.tensor([0, 5]), numgrad.ones(5, 2))
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        numgrad.utils.data.DataLoader([1, 2], batch_size=0)


# ========================================================================================
# inputs PyTorch accepts: the same values (and gradients) as PyTorch
# ========================================================================================

def _ramp(t, *shape):
    """float64 weights -0.5 ... 0.5 over ``shape``."""
    n = int(np.prod(shape))
    return (t.arange(float(n), dtype=t.float64) / max(n - 1, 1) - 0.5).reshape(*shape)


VALUE_CASES = [
    ("max_pool2d unbatched", (3, 6, 7), lambda t, x: F(t).max_pool2d(x, 2)),
    ("max_pool2d unbatched, padding and dilation", (2, 7, 7),
     lambda t, x: F(t).max_pool2d(x, 3, 2, 1, 2, ceil_mode=True)),
    ("avg_pool2d unbatched", (3, 6, 7), lambda t, x: F(t).avg_pool2d(x, 3, 2, 1)),
    ("avg_pool2d negative divisor", (1, 2, 4, 4),
     lambda t, x: F(t).avg_pool2d(x, 2, divisor_override=-3)),
    ("MaxPool2d unbatched", (2, 4, 4), lambda t, x: t.nn.MaxPool2d(2)(x)),
    ("AvgPool2d unbatched", (2, 4, 4), lambda t, x: t.nn.AvgPool2d(2)(x)),
    ("adaptive_avg_pool2d unbatched", (2, 4, 6), lambda t, x: F(t).adaptive_avg_pool2d(x, 2)),
    ("adaptive_avg_pool2d 5x7 -> 2x3", (2, 3, 5, 7),
     lambda t, x: F(t).adaptive_avg_pool2d(x, (2, 3))),
    ("adaptive_avg_pool2d (None, 2)", (1, 2, 4, 4),
     lambda t, x: F(t).adaptive_avg_pool2d(x, (None, 2))),
    ("adaptive_avg_pool2d 1x1", (2, 3, 5, 7), lambda t, x: F(t).adaptive_avg_pool2d(x, 1)),
    ("conv2d unbatched", (3, 6, 6),
     lambda t, x: F(t).conv2d(x, _ramp(t, 2, 3, 3, 3), _ramp(t, 2), padding=1)),
    ("conv2d padding='same' even kernel", (1, 3, 5, 6),
     lambda t, x: F(t).conv2d(x, _ramp(t, 4, 3, 2, 2), padding="same")),
    ("conv2d padding='same' even kernel, dilation", (1, 2, 6, 6),
     lambda t, x: F(t).conv2d(x, _ramp(t, 4, 2, 2, 2), padding="same", dilation=(3, 1))),
    ("conv2d empty batch", (0, 3, 5, 5),
     lambda t, x: F(t).conv2d(x, t.ones(4, 3, 3, 3, dtype=t.float64), t.ones(4, dtype=t.float64))),
    ("unfold unbatched", (2, 5, 5), lambda t, x: F(t).unfold(x, 2, padding=1)),
    ("fold unbatched", (8, 9), lambda t, x: F(t).fold(x, (4, 4), 2)),
    ("pad negative widths", (3, 5), lambda t, x: F(t).pad(x, (-1, 2, 1, -2))),
    ("pad crop to nothing", (2, 3), lambda t, x: F(t).pad(x, (-1, -2))),
    ("linear 3-D input, 2-D bias", (2, 2, 3),
     lambda t, x: F(t).linear(x, _ramp(t, 4, 3), _ramp(t, 2, 4))),
    ("mse_loss weight", (3, 4),
     lambda t, x: F(t).mse_loss(x, t.ones(3, 4), weight=t.arange(12.0).reshape(3, 4))),
    ("l1_loss weight", (3, 4),
     lambda t, x: F(t).l1_loss(x, t.ones(3, 4), weight=t.arange(12.0).reshape(3, 4),
                               reduction="sum")),
    ("mse_loss size_average=False", (3, 4),
     lambda t, x: F(t).mse_loss(x, t.zeros(3, 4), size_average=False)),
    ("nll_loss reduce=False", (4, 3),
     lambda t, x: F(t).nll_loss(x, t.tensor([0, 2, 1, 1]), reduce=False)),
    ("smooth_l1_loss beta=0", (3, 4), lambda t, x: F(t).smooth_l1_loss(x, t.zeros(3, 4),
                                                                       beta=0.0)),
    ("bce_with_logits double target", (6,),
     lambda t, x: F(t).binary_cross_entropy_with_logits(x, t.ones(6, dtype=t.float64) / 3)),
    ("embedding max_norm", (5, 3),
     lambda t, x: F(t).embedding(t.tensor([[0, 2], [2, 4]]), x.detach() * 3, max_norm=1.0)),
    ("embedding scale_grad_by_freq", (5, 3),
     lambda t, x: F(t).embedding(t.tensor([[0, 2], [2, 2]]), x, scale_grad_by_freq=True)),
    ("relu inplace", (3, 4), lambda t, x: F(t).relu(x * 1, inplace=True)),
    ("leaky_relu inplace", (3, 4), lambda t, x: F(t).leaky_relu(x * 1, 0.2, True)),
    ("hardtanh_ min_val above max_val", (3, 4), lambda t, x: F(t).hardtanh_(x * 3, 0.5, -0.5)),
    ("one_hot empty with num_classes", None,
     lambda t, x: F(t).one_hot(t.zeros(0, dtype=t.long), 3)),
    ("batch_norm empty batch", (0, 3),
     lambda t, x: F(t).batch_norm(x, t.zeros(3), t.ones(3), training=True)),
    ("layer_norm empty", (0, 8), lambda t, x: F(t).layer_norm(x, (8,))),
    ("leaky_relu negative_slope=True", (3, 4), lambda t, x: F(t).leaky_relu(x, True)),
    ("group_norm eps=True", (2, 4, 3), lambda t, x: F(t).group_norm(x, 2, eps=True)),
    ("layer_norm eps as a 0-d tensor", (2, 3),
     lambda t, x: F(t).layer_norm(x, (3,), eps=t.tensor(0.5))),
    ("instance_norm eps=0", (2, 3, 4), lambda t, x: F(t).instance_norm(x, eps=0.0)),
    ("interpolate scale_factor [2, True]", (1, 2, 3, 3),
     lambda t, x: F(t).interpolate(x, scale_factor=[2, True])),
]


@requires_torch
@pytest.mark.parametrize("shape,fn", [c[1:] for c in VALUE_CASES],
                         ids=[c[0] for c in VALUE_CASES])
def test_value_matches_pytorch(shape, fn):
    outs = []
    for lib in (numgrad, torch):
        x = None
        if shape is not None:
            data = np.random.default_rng(0).standard_normal(shape)
            x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        out = fn(lib, x)
        grad = None
        if x is not None and out.requires_grad and out.numel():
            out.backward(lib.ones_like(out) if out.dim() else None)
            grad = x.grad
        outs.append((out, grad))
    (out, grad), (t_out, t_grad) = outs
    assert str(out.dtype) == str(t_out.dtype)
    assert_close(out, t_out, rtol=1e-10, atol=1e-12)
    assert (grad is None) == (t_grad is None)
    if grad is not None:
        assert_close(grad, t_grad, rtol=1e-10, atol=1e-12)


@requires_torch
def test_batch_size_none_yields_converted_samples():
    got = list(numgrad.utils.data.DataLoader(numgrad.utils.data.TensorDataset(
        numgrad.arange(3.0)), batch_size=None))
    expected = list(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(
        torch.arange(3.0)), batch_size=None))
    assert [type(b).__name__ for b in got] == [type(b).__name__ for b in expected]
    assert [float(b[0]) for b in got] == [float(b[0]) for b in expected]
