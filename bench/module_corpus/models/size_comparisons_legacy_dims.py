import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Shape checks the old way: x.size() == torch.Size([...]), list(x.size()) == [...], x.size().numel(),
    len(x.size()), x.ndimension(), x.nelement(), x.dim() == 4 and x.shape[1] in (1, 3), torch.Size slicing
    concatenation for a reshape target, and x.size(-1) != self.in_features raising."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.gray = nn.Conv2d(1, 3, 1)
        self.in_features = 4

    def forward(self, x):
        if x.ndimension() == 3:
            x = x.unsqueeze(0)
        assert x.dim() == 4 and x.shape[1] in (1, 3), "bad input %s" % (list(x.size()),)
        if x.size(1) == 1:
            x = self.gray(x)
        y = self.conv(x)
        if y.size()[1:] == torch.Size([4, x.size(2), x.size(3)]):
            y = y + 1
        if list(y.size()) != [x.size(0), 4, x.size(2), x.size(3)]:
            raise RuntimeError("unexpected shape")
        if y.size(1) != self.in_features:
            raise ValueError(y.size(1))
        n = y.size().numel() + len(y.size()) + y.nelement()
        target_shape = y.size()[:2] + (-1,)
        return y.reshape(target_shape).mean(-1), n


def make_inputs():
    return (torch.randn(1, 6, 6),)
