import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.pre_norm = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, activation="gelu", norm_first=True, batch_first=True)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))

    def forward(self, x, src_key_padding_mask):
        cls = self.cls.expand(x.size(0), -1, -1)
        x = torch.cat([cls, x], dim=1)
        mask = torch.cat([src_key_padding_mask.new_zeros(x.size(0), 1), src_key_padding_mask], dim=1)
        x = self.encoder(x, src_key_padding_mask=mask)
        x = self.pre_norm(x)
        return x[:, 0]


def make_inputs():
    x = torch.randn(2, 4, 16)
    kpm = torch.tensor([[False] * 4, [False, False, True, True]])
    return x, kpm
