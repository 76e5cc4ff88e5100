import torch
import torch.nn as nn
import torch.nn.functional as F


def length_to_mask(length, max_len=None, dtype=None, device=None):
    assert len(length.shape) == 1
    if max_len is None:
        max_len = length.max().long().item()
    mask = torch.arange(max_len, device=length.device, dtype=length.dtype).expand(len(length), max_len) < length.unsqueeze(1)
    if dtype is None:
        dtype = length.dtype
    if device is None:
        device = length.device
    mask = torch.as_tensor(mask, dtype=dtype, device=device)
    return mask


class Conv1d(nn.Module):
    """speechbrain.nnet.CNN.Conv1d: channels-last input (batch, time, channel), padding='same' by manual F.pad."""

    def __init__(self, out_channels, kernel_size, in_channels, stride=1, dilation=1, padding="same", padding_mode="reflect",
                 skip_transpose=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.dilation = dilation
        self.padding = padding
        self.padding_mode = padding_mode
        self.skip_transpose = skip_transpose
        self.conv = nn.Conv1d(in_channels, out_channels, self.kernel_size, stride=self.stride, dilation=self.dilation, padding=0)

    def forward(self, x):
        if not self.skip_transpose:
            x = x.transpose(1, -1)
        if self.padding == "same":
            x = self._manage_padding(x, self.kernel_size, self.dilation, self.stride)
        elif self.padding == "causal":
            num_pad = (self.kernel_size - 1) * self.dilation
            x = F.pad(x, (num_pad, 0))
        elif self.padding == "valid":
            pass
        else:
            raise ValueError("Padding must be 'same', 'valid' or 'causal'. Got " + self.padding)
        wx = self.conv(x)
        if not self.skip_transpose:
            wx = wx.transpose(1, -1)
        return wx

    def _manage_padding(self, x, kernel_size: int, dilation: int, stride: int):
        L_in = x.shape[-1]
        padding = get_padding_elem(L_in, stride, kernel_size, dilation)
        x = F.pad(x, padding, mode=self.padding_mode)
        return x


def get_padding_elem(L_in: int, stride: int, kernel_size: int, dilation: int):
    if stride > 1:
        padding = [kernel_size // 2, kernel_size // 2]
    else:
        L_out = (L_in - dilation * (kernel_size - 1) - 1) // stride + 1
        padding = [(L_in - L_out) // 2, (L_in - L_out) // 2]
    return padding


class TDNNBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dilation, activation=nn.ReLU):
        super().__init__()
        self.conv = Conv1d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, dilation=dilation,
                           skip_transpose=True)
        self.activation = activation()
        self.norm = nn.BatchNorm1d(out_channels)

    def forward(self, x):
        return self.norm(self.activation(self.conv(x)))


class StatisticsPooling(nn.Module):
    def __init__(self, return_mean=True, return_std=True):
        super().__init__()
        self.eps = 1e-5
        self.return_mean = return_mean
        self.return_std = return_std
        if not (self.return_mean or self.return_std):
            raise ValueError("both of statistics are equal to False")

    def forward(self, x, lengths=None):
        if lengths is None:
            if self.return_mean:
                mean = x.mean(dim=1)
            if self.return_std:
                std = x.std(dim=1)
        else:
            mean = []
            std = []
            for snt_id in range(x.shape[0]):
                actual_size = int(torch.round(lengths[snt_id] * x.shape[1]))
                if self.return_mean:
                    mean.append(torch.mean(x[snt_id, 0:actual_size, ...], dim=0))
                if self.return_std:
                    std.append(torch.std(x[snt_id, 0:actual_size, ...], dim=0))
            if self.return_mean:
                mean = torch.stack(mean)
            if self.return_std:
                std = torch.stack(std)
        if self.return_mean:
            gnoise = self._get_gauss_noise(mean.size(), device=mean.device)
            mean += gnoise
        if self.return_std:
            std = std + self.eps
        if self.return_mean and self.return_std:
            pooled_stats = torch.cat((mean, std), dim=1)
            pooled_stats = pooled_stats.unsqueeze(1)
        elif self.return_mean:
            pooled_stats = mean.unsqueeze(1)
        else:
            pooled_stats = std.unsqueeze(1)
        return pooled_stats

    def _get_gauss_noise(self, shape_of_tensor, device="cpu"):
        gnoise = torch.randn(shape_of_tensor, device=device)
        gnoise -= torch.min(gnoise)
        gnoise /= torch.max(gnoise)
        gnoise = self.eps * ((1 - 9) * gnoise + 9)
        return gnoise


class AttentiveStatisticsPooling(nn.Module):
    def __init__(self, channels, attention_channels=8, global_context=True):
        super().__init__()
        self.eps = 1e-12
        self.global_context = global_context
        if global_context:
            self.tdnn = TDNNBlock(channels * 3, attention_channels, 1, 1)
        else:
            self.tdnn = TDNNBlock(channels, attention_channels, 1, 1)
        self.tanh = nn.Tanh()
        self.conv = Conv1d(in_channels=attention_channels, out_channels=channels, kernel_size=1, skip_transpose=True)

    def forward(self, x, lengths=None):
        L = x.shape[-1]

        def _compute_statistics(x, m, dim=2, eps=self.eps):
            mean = (m * x).sum(dim)
            std = torch.sqrt((m * (x - mean.unsqueeze(dim)).pow(2)).sum(dim).clamp(eps))
            return mean, std

        if lengths is None:
            lengths = torch.ones(x.shape[0], device=x.device)
        mask = length_to_mask(lengths * L, max_len=L, device=x.device)
        mask = mask.unsqueeze(1)
        if self.global_context:
            total = mask.sum(dim=2, keepdim=True).float()
            mean, std = _compute_statistics(x, mask / total)
            mean = mean.unsqueeze(2).repeat(1, 1, L)
            std = std.unsqueeze(2).repeat(1, 1, L)
            attn = torch.cat([x, mean, std], dim=1)
        else:
            attn = x
        attn = self.conv(self.tanh(self.tdnn(attn)))
        attn = attn.masked_fill(mask == 0, float("-inf"))
        attn = F.softmax(attn, dim=2)
        mean, std = _compute_statistics(x, attn)
        pooled_stats = torch.cat((mean, std), dim=1)
        pooled_stats = pooled_stats.unsqueeze(2)
        return pooled_stats


class Model(nn.Module):
    """SpeechBrain x-vector / ECAPA heads: relative lengths (wav_lens in [0, 1]), channels-last Conv1d with runtime
    'same' reflect padding, StatisticsPooling looping over the batch with int(round(len * T)) slices plus Gaussian
    noise on the mean, and ECAPA AttentiveStatisticsPooling with length_to_mask(..., max_len=L)."""

    def __init__(self, n_mels=10, channels=12, lin_neurons=8):
        super().__init__()
        self.blocks = nn.ModuleList([
            Conv1d(in_channels=n_mels, out_channels=channels, kernel_size=5),
            Conv1d(in_channels=channels, out_channels=channels, kernel_size=3, dilation=2),
        ])
        self.stats = StatisticsPooling()
        self.tdnn = TDNNBlock(channels, channels, 3, 1)
        self.asp = AttentiveStatisticsPooling(channels)
        self.fc = nn.Linear(channels * 4, lin_neurons)

    def forward(self, x, lens=None):
        for layer in self.blocks:
            x = F.leaky_relu(layer(x))
        xv = self.stats(x, lengths=lens)  # (B, 1, 2C)
        h = self.tdnn(x.transpose(1, 2))
        ecapa = self.asp(h, lengths=lens)  # (B, 2C, 1)
        return self.fc(torch.cat([xv.squeeze(1), ecapa.squeeze(2)], -1))


def make_inputs():
    return torch.randn(3, 20, 10), torch.tensor([1.0, 0.75, 0.5])
