import torch
import torch.nn as nn


class SpectralConv2d(nn.Module):
    """Fourier Neural Operator layer: rfft2, complex weights, einsum, irfft2."""

    def __init__(self, in_ch, out_ch, modes1, modes2):
        super().__init__()
        self.modes1, self.modes2, self.out_ch = modes1, modes2, out_ch
        scale = 1 / (in_ch * out_ch)
        self.weights1 = nn.Parameter(scale * torch.rand(in_ch, out_ch, modes1, modes2, dtype=torch.cfloat))
        self.weights2 = nn.Parameter(scale * torch.rand(in_ch, out_ch, modes1, modes2, dtype=torch.cfloat))

    def compl_mul2d(self, input, weights):
        return torch.einsum("bixy,ioxy->boxy", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(batchsize, self.out_ch, x.size(-2), x.size(-1) // 2 + 1, dtype=torch.cfloat, device=x.device)
        out_ft[:, :, :self.modes1, :self.modes2] = self.compl_mul2d(x_ft[:, :, :self.modes1, :self.modes2], self.weights1)
        out_ft[:, :, -self.modes1:, :self.modes2] = self.compl_mul2d(x_ft[:, :, -self.modes1:, :self.modes2], self.weights2)
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.spec = SpectralConv2d(2, 3, 2, 2)
        self.w = nn.Conv2d(2, 3, 1)

    def forward(self, x):
        return torch.nn.functional.gelu(self.spec(x) + self.w(x))


def make_inputs():
    return (torch.randn(2, 2, 8, 8),)
