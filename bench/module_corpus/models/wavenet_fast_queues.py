import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels, out_channels, kernel_size, dilation=1, **kwargs):
        self.__padding = (kernel_size - 1) * dilation
        super(CausalConv1d, self).__init__(in_channels, out_channels, kernel_size=kernel_size, padding=self.__padding,
                                           dilation=dilation, **kwargs)

    def forward(self, input):
        result = super(CausalConv1d, self).forward(input)
        if self.__padding != 0:
            return result[:, :, :-self.__padding]
        return result


class ResidualLayer(nn.Module):
    def __init__(self, residual_channels, dilation_channels, skip_channels, dilation):
        super().__init__()
        self.dilation = dilation
        self.filter_conv = CausalConv1d(residual_channels, dilation_channels, 2, dilation=dilation)
        self.gate_conv = CausalConv1d(residual_channels, dilation_channels, 2, dilation=dilation)
        self.res_conv = nn.Conv1d(dilation_channels, residual_channels, 1)
        self.skip_conv = nn.Conv1d(dilation_channels, skip_channels, 1)

    def forward(self, x):
        z = torch.tanh(self.filter_conv(x)) * torch.sigmoid(self.gate_conv(x))
        return x + self.res_conv(z), self.skip_conv(z)

    def incremental(self, x_t, queue):
        # queue holds the input `dilation` steps ago; fast-wavenet style generation
        prev = queue.pop(0)
        queue.append(x_t)
        pair = torch.stack([prev, x_t], dim=-1)  # B, C, 2
        f = F.conv1d(pair, self.filter_conv.weight, self.filter_conv.bias)
        g = F.conv1d(pair, self.gate_conv.weight, self.gate_conv.bias)
        z = torch.tanh(f) * torch.sigmoid(g)
        return x_t + self.res_conv(z).squeeze(-1), self.skip_conv(z).squeeze(-1)


class Model(nn.Module):
    """WaveNet: dilated causal convs (padding trimmed), gated units, skip sum; plus fast generation with python queues."""

    def __init__(self, classes=8, res=6, dil=6, skip=6, layers=4, blocks=1):
        super().__init__()
        self.dilations = [2 ** i for i in range(layers)] * blocks
        self.start_conv = nn.Conv1d(classes, res, 1)
        self.layers = nn.ModuleList([ResidualLayer(res, dil, skip, d) for d in self.dilations])
        self.end = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(), nn.Conv1d(skip, classes, 1))
        self.receptive_field = sum(self.dilations) + 1

    def forward(self, x, n_generate: int = 3):
        h = self.start_conv(x)
        skip = 0
        for layer in self.layers:
            h, s = layer(h)
            skip = s + skip
        logits = self.end(skip)
        # incremental generation from the last sample
        B = x.size(0)
        queues = [[torch.zeros(B, h.size(1)) for _ in range(d)] for d in self.dilations]
        cur = x[:, :, -1]
        outs = []
        for _ in range(n_generate):
            h_t = self.start_conv(cur.unsqueeze(-1)).squeeze(-1)
            skip_t = 0
            for layer, q in zip(self.layers, queues):
                h_t, s_t = layer.incremental(h_t, q)
                skip_t = skip_t + s_t
            out_t = self.end(skip_t.unsqueeze(-1)).squeeze(-1)
            idx = out_t.argmax(-1)
            cur = F.one_hot(idx, out_t.size(-1)).float()
            outs.append(idx)
        return logits, torch.stack(outs, 1)


def make_inputs():
    x = F.one_hot(torch.randint(0, 8, (2, 10)), 8).float().transpose(1, 2)
    return (x,)
