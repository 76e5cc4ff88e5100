import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


def resize(input, size=None, scale_factor=None, mode='nearest', align_corners=None, warning=True):
    if warning:
        if size is not None and align_corners:
            input_h, input_w = tuple(int(x) for x in input.shape[2:])
            output_h, output_w = tuple(int(x) for x in size)
            if output_h > input_h or output_w > output_h:
                if ((output_h > 1 and output_w > 1 and input_h > 1 and input_w > 1)
                        and (output_h - 1) % (input_h - 1) and (output_w - 1) % (input_w - 1)):
                    warnings.warn(
                        f'When align_corners={align_corners}, '
                        'the output would more aligned if '
                        f'input size {(input_h, input_w)} is `x+1` and '
                        f'out size {(output_h, output_w)} is `nx+1`')
    return F.interpolate(input, size, scale_factor, mode, align_corners)


class ConvModule(nn.Sequential):
    def __init__(self, cin, cout, k=1):
        super().__init__(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class Model(nn.Module):
    """mmseg BaseDecodeHead._transform_inputs ('resize_concat' / 'multiple_select' / single index), the
    mmseg resize() wrapper with its align_corners warning built from tuple(int(x) for x in shape),
    torch.backends.cudnn.enabled check, cls_seg with dropout, losses dict with seg logits resized to labels."""

    def __init__(self, in_channels=(4, 8, 16), channels=8, num_classes=3, in_index=(0, 1, 2),
                 input_transform='resize_concat', align_corners=True, ignore_index=255):
        super().__init__()
        self.input_transform = input_transform
        self.in_index = list(in_index)
        self.align_corners = align_corners
        self.ignore_index = ignore_index
        if input_transform == 'resize_concat':
            self.in_channels = sum(in_channels)
        else:
            self.in_channels = in_channels
        self.fuse = ConvModule(self.in_channels, channels, 3)
        self.dropout = nn.Dropout2d(0.1)
        self.conv_seg = nn.Conv2d(channels, num_classes, kernel_size=1)

    def _transform_inputs(self, inputs):
        if self.input_transform == 'resize_concat':
            inputs = [inputs[i] for i in self.in_index]
            upsampled_inputs = [
                resize(input=x, size=inputs[0].shape[2:], mode='bilinear', align_corners=self.align_corners)
                for x in inputs
            ]
            inputs = torch.cat(upsampled_inputs, dim=1)
        elif self.input_transform == 'multiple_select':
            inputs = [inputs[i] for i in self.in_index]
        else:
            inputs = inputs[self.in_index]
        return inputs

    def cls_seg(self, feat):
        if self.dropout is not None:
            feat = self.dropout(feat)
        return self.conv_seg(feat)

    def forward(self, c1, c2, c3, gt_semantic_seg):
        x = self._transform_inputs([c1, c2, c3])
        if torch.backends.cudnn.enabled and x.is_cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        seg_logits = self.cls_seg(self.fuse(x))
        seg_logit = resize(input=seg_logits, size=gt_semantic_seg.shape[2:], mode='bilinear',
                           align_corners=self.align_corners)
        seg_label = gt_semantic_seg.squeeze(1)
        loss = dict()
        loss['loss_seg'] = F.cross_entropy(seg_logit, seg_label, ignore_index=self.ignore_index)
        valid = seg_label != self.ignore_index
        loss['acc_seg'] = (seg_logit.argmax(1)[valid] == seg_label[valid]).float().mean() * 100
        return seg_logits, loss


def make_inputs():
    gt = torch.randint(0, 3, (2, 1, 17, 17))
    gt[:, :, :3] = 255
    return torch.randn(2, 4, 8, 8), torch.randn(2, 8, 4, 4), torch.randn(2, 16, 2, 2), gt
