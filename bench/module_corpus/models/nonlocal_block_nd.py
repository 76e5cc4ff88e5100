import torch
from torch import nn
from torch.nn import functional as F


class _NonLocalBlockND(nn.Module):
    """AlexHex7/Non-local_pytorch (embedded gaussian): dimension picks Conv1d/2d/3d, MaxPool and BatchNorm classes;
    sub_sample wraps g and phi in Sequentials with the pool; W's BN is zero-initialised."""

    def __init__(self, in_channels, inter_channels=None, dimension=3, sub_sample=True, bn_layer=True, mode="embedded"):
        super(_NonLocalBlockND, self).__init__()
        assert dimension in [1, 2, 3]
        if mode not in ["gaussian", "embedded", "dot", "concatenate"]:
            raise ValueError("`mode` must be one of `gaussian`, `embedded`, `dot` or `concatenate`")
        self.mode = mode
        self.dimension = dimension
        self.sub_sample = sub_sample
        self.in_channels = in_channels
        self.inter_channels = inter_channels
        if self.inter_channels is None:
            self.inter_channels = in_channels // 2
            if self.inter_channels == 0:
                self.inter_channels = 1
        if dimension == 3:
            conv_nd = nn.Conv3d
            max_pool_layer = nn.MaxPool3d(kernel_size=(1, 2, 2))
            bn = nn.BatchNorm3d
        elif dimension == 2:
            conv_nd = nn.Conv2d
            max_pool_layer = nn.MaxPool2d(kernel_size=(2, 2))
            bn = nn.BatchNorm2d
        else:
            conv_nd = nn.Conv1d
            max_pool_layer = nn.MaxPool1d(kernel_size=(2))
            bn = nn.BatchNorm1d
        self.g = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels, kernel_size=1, stride=1, padding=0)
        if bn_layer:
            self.W = nn.Sequential(conv_nd(in_channels=self.inter_channels, out_channels=self.in_channels, kernel_size=1,
                                           stride=1, padding=0), bn(self.in_channels))
            nn.init.constant_(self.W[1].weight, 0.5)
            nn.init.constant_(self.W[1].bias, 0)
        else:
            self.W = conv_nd(in_channels=self.inter_channels, out_channels=self.in_channels, kernel_size=1, stride=1, padding=0)
            nn.init.constant_(self.W.weight, 0)
            nn.init.constant_(self.W.bias, 0)
        if self.mode == "embedded" or self.mode == "dot" or self.mode == "concatenate":
            self.theta = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels, kernel_size=1, stride=1, padding=0)
            self.phi = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels, kernel_size=1, stride=1, padding=0)
        if self.mode == "concatenate":
            self.W_f = nn.Sequential(nn.Conv2d(in_channels=self.inter_channels * 2, out_channels=1, kernel_size=1), nn.ReLU())
        if sub_sample:
            self.g = nn.Sequential(self.g, max_pool_layer)
            if self.mode != "gaussian":
                self.phi = nn.Sequential(self.phi, max_pool_layer)
            else:
                self.phi = max_pool_layer

    def forward(self, x, return_nl_map=False):
        batch_size = x.size(0)
        g_x = self.g(x).view(batch_size, self.inter_channels, -1)
        g_x = g_x.permute(0, 2, 1)
        if self.mode == "gaussian":
            theta_x = x.view(batch_size, self.in_channels, -1)
            theta_x = theta_x.permute(0, 2, 1)
            if self.sub_sample:
                phi_x = self.phi(x).view(batch_size, self.in_channels, -1)
            else:
                phi_x = x.view(batch_size, self.in_channels, -1)
            f = torch.matmul(theta_x, phi_x)
        elif self.mode == "embedded" or self.mode == "dot":
            theta_x = self.theta(x).view(batch_size, self.inter_channels, -1)
            phi_x = self.phi(x).view(batch_size, self.inter_channels, -1)
            theta_x = theta_x.permute(0, 2, 1)
            f = torch.matmul(theta_x, phi_x)
        elif self.mode == "concatenate":
            theta_x = self.theta(x).view(batch_size, self.inter_channels, -1, 1)
            phi_x = self.phi(x).view(batch_size, self.inter_channels, 1, -1)
            h = theta_x.size(2)
            w = phi_x.size(3)
            theta_x = theta_x.repeat(1, 1, 1, w)
            phi_x = phi_x.repeat(1, 1, h, 1)
            concat = torch.cat([theta_x, phi_x], dim=1)
            f = self.W_f(concat)
            f = f.view(f.size(0), f.size(2), f.size(3))
        if self.mode == "gaussian" or self.mode == "embedded":
            f_div_C = F.softmax(f, dim=-1)
        elif self.mode == "dot" or self.mode == "concatenate":
            N = f.size(-1)
            f_div_C = f / N
        y = torch.matmul(f_div_C, g_x)
        y = y.permute(0, 2, 1).contiguous()
        y = y.view(batch_size, self.inter_channels, *x.size()[2:])
        W_y = self.W(y)
        z = W_y + x
        if return_nl_map:
            return z, f_div_C
        return z


class NONLocalBlock1D(_NonLocalBlockND):
    def __init__(self, in_channels, inter_channels=None, sub_sample=True, bn_layer=True, mode="embedded"):
        super(NONLocalBlock1D, self).__init__(in_channels, inter_channels=inter_channels, dimension=1, sub_sample=sub_sample,
                                              bn_layer=bn_layer, mode=mode)


class NONLocalBlock2D(_NonLocalBlockND):
    def __init__(self, in_channels, inter_channels=None, sub_sample=True, bn_layer=True, mode="embedded"):
        super(NONLocalBlock2D, self).__init__(in_channels, inter_channels=inter_channels, dimension=2, sub_sample=sub_sample,
                                              bn_layer=bn_layer, mode=mode)


class NONLocalBlock3D(_NonLocalBlockND):
    def __init__(self, in_channels, inter_channels=None, sub_sample=True, bn_layer=True, mode="embedded"):
        super(NONLocalBlock3D, self).__init__(in_channels, inter_channels=inter_channels, dimension=3, sub_sample=sub_sample,
                                              bn_layer=bn_layer, mode=mode)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.nl2d = NONLocalBlock2D(8, mode="embedded")
        self.nl2d_cat = NONLocalBlock2D(8, sub_sample=False, bn_layer=False, mode="concatenate")
        self.nl2d_gauss = NONLocalBlock2D(8, sub_sample=True, mode="gaussian")
        self.nl1d = NONLocalBlock1D(8, mode="dot")
        self.nl3d = NONLocalBlock3D(4, mode="embedded")

    def forward(self, x, clip):
        x = F.relu(self.conv(x))
        x, nl_map = self.nl2d(x, return_nl_map=True)
        x = self.nl2d_cat(x)
        x = self.nl2d_gauss(x)
        seq = self.nl1d(x.flatten(2))
        vid = self.nl3d(clip)
        return x, nl_map, seq, vid


def make_inputs():
    return torch.randn(2, 3, 8, 8), torch.randn(2, 4, 3, 4, 4)
