import torch
import torch.nn as nn
import torch.nn.functional as F


class conv_block(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(ch_in, ch_out, kernel_size=3, stride=1, padding=1, bias=True), nn.BatchNorm2d(ch_out), nn.ReLU(inplace=True),
            nn.Conv2d(ch_out, ch_out, kernel_size=3, stride=1, padding=1, bias=True), nn.BatchNorm2d(ch_out), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.conv(x)


class up_conv(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(ch_in, ch_out, 3, 1, 1, bias=True),
                                nn.BatchNorm2d(ch_out), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.up(x)


class Attention_block(nn.Module):
    def __init__(self, F_g, F_l, F_int):
        super().__init__()
        self.W_g = nn.Sequential(nn.Conv2d(F_g, F_int, kernel_size=1, stride=1, padding=0, bias=True), nn.BatchNorm2d(F_int))
        self.W_x = nn.Sequential(nn.Conv2d(F_l, F_int, kernel_size=1, stride=1, padding=0, bias=True), nn.BatchNorm2d(F_int))
        self.psi = nn.Sequential(nn.Conv2d(F_int, 1, kernel_size=1, stride=1, padding=0, bias=True), nn.BatchNorm2d(1), nn.Sigmoid())
        self.relu = nn.ReLU(inplace=True)

    def forward(self, g, x):
        g1 = self.W_g(g)
        x1 = self.W_x(x)
        psi = self.relu(g1 + x1)
        psi = self.psi(psi)
        return x * psi


class GridAttentionBlock2D(nn.Module):
    """ozan-oktay Attention-Gated-Networks: theta on x with stride = sub_sample_factor, phi on gating,
    upsample to theta size, psi, sigmoid, upsample back; returns (W_y, attention map)."""

    def __init__(self, in_channels, gating_channels, inter_channels=None, mode="concatenation", sub_sample_factor=(2, 2)):
        super().__init__()
        assert mode in ["concatenation", "concatenation_debug", "concatenation_residual"]
        self.mode = mode
        self.sub_sample_factor = sub_sample_factor if isinstance(sub_sample_factor, tuple) else tuple([sub_sample_factor]) * 2
        self.sub_sample_kernel_size = self.sub_sample_factor
        self.in_channels = in_channels
        self.gating_channels = gating_channels
        self.inter_channels = inter_channels
        if self.inter_channels is None:
            self.inter_channels = in_channels // 2
            if self.inter_channels == 0:
                self.inter_channels = 1
        self.W = nn.Sequential(nn.Conv2d(in_channels, in_channels, 1), nn.BatchNorm2d(in_channels))
        self.theta = nn.Conv2d(in_channels, self.inter_channels, kernel_size=self.sub_sample_kernel_size,
                               stride=self.sub_sample_factor, padding=0, bias=False)
        self.phi = nn.Conv2d(gating_channels, self.inter_channels, 1, bias=True)
        self.psi = nn.Conv2d(self.inter_channels, 1, 1, bias=True)
        self.operation_function = {"concatenation": self._concatenation,
                                   "concatenation_debug": self._concatenation_debug}.get(mode, self._concatenation)

    def forward(self, x, g):
        return self.operation_function(x, g)

    def _concatenation(self, x, g):
        input_size = x.size()
        batch_size = input_size[0]
        assert batch_size == g.size(0)
        theta_x = self.theta(x)
        theta_x_size = theta_x.size()
        phi_g = F.interpolate(self.phi(g), size=theta_x_size[2:], mode="bilinear", align_corners=False)
        f = F.relu(theta_x + phi_g, inplace=True)
        sigm_psi_f = torch.sigmoid(self.psi(f))
        sigm_psi_f = F.interpolate(sigm_psi_f, size=input_size[2:], mode="bilinear", align_corners=False)
        y = sigm_psi_f.expand_as(x) * x
        return self.W(y), sigm_psi_f

    def _concatenation_debug(self, x, g):
        theta_x = self.theta(x)
        phi_g = F.interpolate(self.phi(g), size=theta_x.size()[2:], mode="bilinear", align_corners=False)
        f = F.softplus(theta_x + phi_g)
        sigm_psi_f = torch.sigmoid(self.psi(f))
        sigm_psi_f = F.interpolate(sigm_psi_f, size=x.size()[2:], mode="bilinear", align_corners=False)
        return self.W(sigm_psi_f.expand_as(x) * x), sigm_psi_f


class Model(nn.Module):
    def __init__(self, img_ch=3, output_ch=2, base=8):
        super().__init__()
        self.Maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.Conv1 = conv_block(img_ch, base)
        self.Conv2 = conv_block(base, base * 2)
        self.Conv3 = conv_block(base * 2, base * 4)
        self.Up3 = up_conv(base * 4, base * 2)
        self.Att3 = Attention_block(F_g=base * 2, F_l=base * 2, F_int=base)
        self.Up_conv3 = conv_block(base * 4, base * 2)
        self.Up2 = up_conv(base * 2, base)
        self.Att2 = GridAttentionBlock2D(base, base * 2, mode="concatenation_debug")
        self.Up_conv2 = conv_block(base * 2, base)
        self.Conv_1x1 = nn.Conv2d(base, output_ch, 1)

    def forward(self, x):
        x1 = self.Conv1(x)
        x2 = self.Conv2(self.Maxpool(x1))
        x3 = self.Conv3(self.Maxpool(x2))
        d3 = self.Up3(x3)
        x2 = self.Att3(g=d3, x=x2)
        d3 = self.Up_conv3(torch.cat((x2, d3), dim=1))
        d2 = self.Up2(d3)
        x1, att = self.Att2(x1, d3)
        d2 = self.Up_conv2(torch.cat((x1, d2), dim=1))
        return self.Conv_1x1(d2), att


def make_inputs():
    return (torch.randn(1, 3, 16, 16),)
