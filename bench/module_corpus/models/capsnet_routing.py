import torch
import torch.nn as nn
import torch.nn.functional as F


def squash(s, dim=-1, eps=1e-8):
    sq = (s ** 2).sum(dim=dim, keepdim=True)
    return sq / (1.0 + sq) * s / torch.sqrt(sq + eps)


class PrimaryCaps(nn.Module):
    def __init__(self, in_ch, num_caps=4, caps_dim=4):
        super().__init__()
        self.caps_dim = caps_dim
        self.conv = nn.Conv2d(in_ch, num_caps * caps_dim, kernel_size=3, stride=2)

    def forward(self, x):
        out = self.conv(x)
        b = out.size(0)
        out = out.view(b, -1, self.caps_dim)
        return squash(out)


class DigitCaps(nn.Module):
    def __init__(self, in_caps, in_dim, num_caps=3, out_dim=6, routing_iters=3):
        super().__init__()
        self.routing_iters = routing_iters
        self.W = nn.Parameter(0.01 * torch.randn(1, in_caps, num_caps, out_dim, in_dim))

    def forward(self, u):
        b = u.size(0)
        u = u[:, :, None, :, None]
        u_hat = torch.matmul(self.W, u).squeeze(-1)  # b, in_caps, num_caps, out_dim
        logits = torch.zeros(*u_hat.shape[:3], 1, device=u.device)
        u_hat_detached = u_hat.detach()
        for i in range(self.routing_iters):
            c = F.softmax(logits, dim=2)
            if i == self.routing_iters - 1:
                s = (c * u_hat).sum(dim=1, keepdim=True)
                v = squash(s)
            else:
                s = (c * u_hat_detached).sum(dim=1, keepdim=True)
                v = squash(s)
                logits = logits + (u_hat_detached * v).sum(dim=-1, keepdim=True)
        return v.squeeze(1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.primary = PrimaryCaps(8)
        self.digits = DigitCaps(in_caps=4 * 3 * 3, in_dim=4)
        self.decoder = nn.Sequential(nn.Linear(3 * 6, 32), nn.ReLU(inplace=True), nn.Linear(32, 81), nn.Sigmoid())

    def forward(self, x, y=None):
        h = F.relu(self.conv1(x))
        caps = self.digits(self.primary(h))
        lengths = caps.norm(dim=-1)
        if y is None:
            y = lengths.argmax(dim=1)
        mask = F.one_hot(y, num_classes=caps.size(1)).unsqueeze(-1).to(caps.dtype)
        recon = self.decoder((caps * mask).flatten(1)).view(-1, 1, 9, 9)
        return lengths, recon


def make_inputs():
    return (torch.randn(2, 1, 9, 9),)
