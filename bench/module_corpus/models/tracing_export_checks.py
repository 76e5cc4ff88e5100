import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


def _is_exporting():
    return torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or torch.jit.is_scripting()


class DynamicPadConv(nn.Module):
    """ONNX-friendly branches common in detectron2/yolo/timm code: checks for tracing/export/scripting
    select between numerically identical implementations."""

    def __init__(self, c_in, c_out, k=3, s=2):
        super().__init__()
        self.k, self.s = k, s
        self.conv = nn.Conv2d(c_in, c_out, k, s, 0)

    def forward(self, x):
        ih, iw = x.shape[-2:]
        if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
            ih_t = torch.as_tensor(ih)
            pad_h = torch.clamp((torch.ceil(ih_t / self.s) - 1) * self.s + self.k - ih_t, min=0).int().item()
            pad_w = pad_h
        else:
            pad_h = max((-(ih // -self.s) - 1) * self.s + self.k - ih, 0)
            pad_w = max((-(iw // -self.s) - 1) * self.s + self.k - iw, 0)
        x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return self.conv(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = DynamicPadConv(3, 8)
        self.conv2 = DynamicPadConv(8, 8)
        self.fc = nn.Linear(8, 4)
        self.export_mode = False

    def forward(self, x):
        if not torch.jit.is_scripting() and x.shape[-1] % 2 == 1:
            if not _is_exporting():
                warnings.warn("odd input width; padding dynamically")
        y = self.conv2(F.relu(self.conv1(x)))
        if _is_exporting() or self.export_mode:
            pooled = y.mean(dim=(2, 3))
        else:
            pooled = F.adaptive_avg_pool2d(y, 1).flatten(1)
        out = self.fc(pooled)
        if torch.compiler.is_compiling():
            return out, y.shape[-1]
        return out.clone(), y.size(-1)


def make_inputs():
    return (torch.randn(2, 3, 15, 13),)
