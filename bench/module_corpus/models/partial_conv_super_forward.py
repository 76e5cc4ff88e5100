import torch
import torch.nn.functional as F
from torch import nn


class PartialConv2d(nn.Conv2d):
    """NVIDIA/partialconv PartialConv2d: mask-renormalised conv with a cached last_size."""

    def __init__(self, *args, **kwargs):
        if 'multi_channel' in kwargs:
            self.multi_channel = kwargs['multi_channel']
            kwargs.pop('multi_channel')
        else:
            self.multi_channel = False
        if 'return_mask' in kwargs:
            self.return_mask = kwargs['return_mask']
            kwargs.pop('return_mask')
        else:
            self.return_mask = False
        super(PartialConv2d, self).__init__(*args, **kwargs)
        if self.multi_channel:
            self.weight_maskUpdater = torch.ones(self.out_channels, self.in_channels, self.kernel_size[0], self.kernel_size[1])
        else:
            self.weight_maskUpdater = torch.ones(1, 1, self.kernel_size[0], self.kernel_size[1])
        self.slide_winsize = self.weight_maskUpdater.shape[1] * self.weight_maskUpdater.shape[2] * \
            self.weight_maskUpdater.shape[3]
        self.last_size = (None, None, None, None)
        self.update_mask = None
        self.mask_ratio = None

    def forward(self, input, mask_in=None):
        assert len(input.shape) == 4
        if mask_in is not None or self.last_size != tuple(input.shape):
            self.last_size = tuple(input.shape)
            with torch.no_grad():
                if self.weight_maskUpdater.type() != input.type():
                    self.weight_maskUpdater = self.weight_maskUpdater.to(input)
                if mask_in is None:
                    if self.multi_channel:
                        mask = torch.ones(input.data.shape[0], input.data.shape[1], input.data.shape[2],
                                          input.data.shape[3]).to(input)
                    else:
                        mask = torch.ones(1, 1, input.data.shape[2], input.data.shape[3]).to(input)
                else:
                    mask = mask_in
                self.update_mask = F.conv2d(mask, self.weight_maskUpdater, bias=None, stride=self.stride,
                                            padding=self.padding, dilation=self.dilation, groups=1)
                self.mask_ratio = self.slide_winsize / (self.update_mask + 1e-8)
                self.update_mask = torch.clamp(self.update_mask, 0, 1)
                self.mask_ratio = torch.mul(self.mask_ratio, self.update_mask)
        raw_out = super(PartialConv2d, self).forward(torch.mul(input, mask) if mask_in is not None else input)
        if self.bias is not None:
            bias_view = self.bias.view(1, self.out_channels, 1, 1)
            output = torch.mul(raw_out - bias_view, self.mask_ratio) + bias_view
            output = torch.mul(output, self.update_mask)
        else:
            output = torch.mul(raw_out, self.mask_ratio)
        if self.return_mask:
            return output, self.update_mask
        else:
            return output


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = PartialConv2d(3, 6, 3, stride=2, padding=1, multi_channel=True, return_mask=True)
        self.enc2 = PartialConv2d(6, 8, 3, stride=2, padding=1, multi_channel=True, return_mask=True)
        self.dec = PartialConv2d(8 + 6, 3, 3, padding=1, multi_channel=True, return_mask=True, bias=False)

    def forward(self, img, mask):
        h1, m1 = self.enc1(img, mask)
        h1 = F.relu(h1)
        h2, m2 = self.enc2(h1, m1.expand(-1, 6, -1, -1).contiguous() if m1.size(1) == 1 else m1)
        h2 = F.relu(h2)
        up = F.interpolate(h2, scale_factor=2, mode='nearest')
        upm = F.interpolate(m2, scale_factor=2, mode='nearest')
        out, m3 = self.dec(torch.cat([up, h1], 1), torch.cat([upm, m1], 1))
        return out, m3


def make_inputs():
    img = torch.randn(2, 3, 8, 8)
    mask = (torch.rand(2, 3, 8, 8) > 0.3).float()
    return img, mask
