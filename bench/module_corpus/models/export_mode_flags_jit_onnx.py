import torch
import torch.nn as nn
import torch.nn.functional as F


class Detect(nn.Module):
    """YOLO-style detect layer that changes behaviour under export: torch.jit.is_scripting(),
    torch.jit.is_tracing(), torch.onnx.is_in_onnx_export(), a self.export class flag, and
    torch._C._get_tracing_state() checks people copy from older repos."""

    export = False

    def __init__(self, nc=2, ch=8, na=2):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.na = na
        self.m = nn.Conv2d(ch, self.no * self.na, 1)
        self.register_buffer("anchor_grid", torch.tensor([[10., 13.], [16., 30.]]).view(1, na, 1, 1, 2))

    def forward(self, x, stride=8):
        x = self.m(x)
        bs, _, ny, nx = x.shape
        x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        if torch.jit.is_scripting() or torch.onnx.is_in_onnx_export() or self.export:
            return x
        tracing = torch.jit.is_tracing() or torch._C._get_tracing_state() is not None
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
        grid = torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()
        y = x.sigmoid()
        xy = (y[..., 0:2] * 2. - 0.5 + grid) * stride
        wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
        y = torch.cat((xy, wh, y[..., 4:]), -1)
        out = y.view(bs, -1, self.no)
        return (out,) if tracing else (out, x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU())
        self.detect = Detect()

    def forward(self, img):
        out = self.detect(self.backbone(img))
        return out[0], len(out)


def make_inputs():
    return (torch.randn(1, 3, 8, 8),)
