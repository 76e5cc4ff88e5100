from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvDropoutNormNonlin(nn.Module):
    def __init__(self, input_channels, output_channels, conv_op=nn.Conv2d, conv_kwargs=None, norm_op=nn.InstanceNorm2d,
                 norm_op_kwargs=None, dropout_op=nn.Dropout2d, dropout_op_kwargs=None, nonlin=nn.LeakyReLU, nonlin_kwargs=None):
        super().__init__()
        if nonlin_kwargs is None:
            nonlin_kwargs = {"negative_slope": 1e-2, "inplace": True}
        if dropout_op_kwargs is None:
            dropout_op_kwargs = {"p": 0.5, "inplace": True}
        if norm_op_kwargs is None:
            norm_op_kwargs = {"eps": 1e-5, "affine": True, "momentum": 0.1}
        if conv_kwargs is None:
            conv_kwargs = {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 1, "bias": True}
        self.conv_kwargs = conv_kwargs
        self.conv = conv_op(input_channels, output_channels, **self.conv_kwargs)
        if dropout_op is not None and dropout_op_kwargs["p"] is not None and dropout_op_kwargs["p"] > 0:
            self.dropout = dropout_op(**dropout_op_kwargs)
        else:
            self.dropout = None
        self.instnorm = norm_op(output_channels, **norm_op_kwargs)
        self.lrelu = nonlin(**nonlin_kwargs)

    def forward(self, x):
        x = self.conv(x)
        if self.dropout is not None:
            x = self.dropout(x)
        return self.lrelu(self.instnorm(x))


class StackedConvLayers(nn.Module):
    def __init__(self, input_feature_channels, output_feature_channels, num_convs, first_stride=None, **kw):
        super().__init__()
        conv_kwargs = {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 1, "bias": True}
        if first_stride is not None:
            conv_kwargs_first_conv = deepcopy(conv_kwargs)
            conv_kwargs_first_conv["stride"] = first_stride
        else:
            conv_kwargs_first_conv = conv_kwargs
        self.blocks = nn.Sequential(
            *([ConvDropoutNormNonlin(input_feature_channels, output_feature_channels, conv_kwargs=conv_kwargs_first_conv, **kw)] +
              [ConvDropoutNormNonlin(output_feature_channels, output_feature_channels, conv_kwargs=conv_kwargs, **kw)
               for _ in range(num_convs - 1)]))

    def forward(self, x):
        return self.blocks(x)


class Model(nn.Module):
    """MIC-DKFZ nnU-Net Generic_UNet: deep supervision returns a tuple of seg outputs, upscale_logits ops,
    final_nonlin lambda, _deep_supervision/do_ds flags."""

    def __init__(self, input_channels=1, base_num_features=4, num_classes=3, num_pool=3, deep_supervision=True,
                 upscale_logits=False, final_nonlin=lambda x: F.softmax(x, 1)):
        super().__init__()
        self._deep_supervision = deep_supervision
        self.do_ds = deep_supervision
        self.upscale_logits = upscale_logits
        self.final_nonlin = final_nonlin
        self.num_classes = num_classes
        kw = dict(dropout_op_kwargs={"p": 0, "inplace": True})
        self.conv_blocks_context = []
        self.conv_blocks_localization = []
        self.tu = []
        self.seg_outputs = []
        output_features = base_num_features
        input_features = input_channels
        for d in range(num_pool):
            first_stride = 2 if d != 0 else None
            self.conv_blocks_context.append(StackedConvLayers(input_features, output_features, 2, first_stride, **kw))
            input_features = output_features
            output_features = int(round(output_features * 2))
        final_num_features = output_features
        self.conv_blocks_context.append(nn.Sequential(StackedConvLayers(input_features, output_features, 1, 2, **kw),
                                                      StackedConvLayers(output_features, final_num_features, 1, **kw)))
        for u in range(num_pool):
            nfeatures_from_down = final_num_features
            nfeatures_from_skip = self.conv_blocks_context[-(2 + u)].blocks[-1].conv.out_channels
            n_features_after_tu_and_concat = nfeatures_from_skip * 2
            final_num_features = nfeatures_from_skip
            self.tu.append(nn.ConvTranspose2d(nfeatures_from_down, nfeatures_from_skip, 2, 2, bias=False))
            self.conv_blocks_localization.append(nn.Sequential(
                StackedConvLayers(n_features_after_tu_and_concat, nfeatures_from_skip, 1, **kw),
                StackedConvLayers(nfeatures_from_skip, final_num_features, 1, **kw)))
        for ds in range(len(self.conv_blocks_localization)):
            self.seg_outputs.append(nn.Conv2d(self.conv_blocks_localization[ds][-1].blocks[-1].conv.out_channels,
                                              num_classes, 1, 1, 0, 1, 1, False))
        self.upscale_logits_ops = []
        cum_upsample = [2 ** i for i in range(num_pool - 1, 0, -1)]
        for usl in range(num_pool - 1):
            if self.upscale_logits:
                self.upscale_logits_ops.append(nn.Upsample(scale_factor=cum_upsample[usl], mode="nearest"))
            else:
                self.upscale_logits_ops.append(lambda x: x)
        self.conv_blocks_localization = nn.ModuleList(self.conv_blocks_localization)
        self.conv_blocks_context = nn.ModuleList(self.conv_blocks_context)
        self.tu = nn.ModuleList(self.tu)
        self.seg_outputs = nn.ModuleList(self.seg_outputs)
        if self.upscale_logits:
            self.upscale_logits_ops = nn.ModuleList(self.upscale_logits_ops)

    def forward(self, x):
        skips = []
        seg_outputs = []
        for d in range(len(self.conv_blocks_context) - 1):
            x = self.conv_blocks_context[d](x)
            skips.append(x)
        x = self.conv_blocks_context[-1](x)
        for u in range(len(self.tu)):
            x = self.tu[u](x)
            x = torch.cat((x, skips[-(u + 1)]), dim=1)
            x = self.conv_blocks_localization[u](x)
            seg_outputs.append(self.final_nonlin(self.seg_outputs[u](x)))
        if self._deep_supervision and self.do_ds:
            return tuple([seg_outputs[-1]] + [i(j) for i, j in zip(list(self.upscale_logits_ops)[::-1], seg_outputs[:-1][::-1])])
        return seg_outputs[-1]


def make_inputs():
    return (torch.randn(1, 1, 16, 16),)
