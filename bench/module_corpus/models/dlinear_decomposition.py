import torch
import torch.nn as nn


class moving_avg(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        x = self.avg(x.permute(0, 2, 1))
        x = x.permute(0, 2, 1)
        return x


class series_decomp(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = moving_avg(kernel_size, stride=1)

    def forward(self, x):
        moving_mean = self.moving_avg(x)
        res = x - moving_mean
        return res, moving_mean


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_in, n_out, k, dilation):
        super().__init__()
        pad = (k - 1) * dilation
        self.net = nn.Sequential(nn.Conv1d(n_in, n_out, k, padding=pad, dilation=dilation), Chomp1d(pad), nn.ReLU(),
                                 nn.Conv1d(n_out, n_out, k, padding=pad, dilation=dilation), Chomp1d(pad), nn.ReLU())
        self.downsample = nn.Conv1d(n_in, n_out, 1) if n_in != n_out else None

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return torch.relu(out + res)


class Model(nn.Module):
    """DLinear (cure-lab LTSF-Linear, individual=True) plus a causal TCN residual branch."""

    def __init__(self, seq_len=24, pred_len=6, enc_in=3, individual=True, kernel_size=5):
        super().__init__()
        self.seq_len, self.pred_len = seq_len, pred_len
        self.decompsition = series_decomp(kernel_size)
        self.individual = individual
        self.channels = enc_in
        if self.individual:
            self.Linear_Seasonal = nn.ModuleList()
            self.Linear_Trend = nn.ModuleList()
            for i in range(self.channels):
                self.Linear_Seasonal.append(nn.Linear(self.seq_len, self.pred_len))
                self.Linear_Trend.append(nn.Linear(self.seq_len, self.pred_len))
        else:
            self.Linear_Seasonal = nn.Linear(self.seq_len, self.pred_len)
            self.Linear_Trend = nn.Linear(self.seq_len, self.pred_len)
        layers = []
        num_channels = [8, 8, enc_in]
        for i in range(len(num_channels)):
            dilation_size = 2 ** i
            in_channels = enc_in if i == 0 else num_channels[i - 1]
            layers += [TemporalBlock(in_channels, num_channels[i], 3, dilation_size)]
        self.tcn = nn.Sequential(*layers)
        self.tcn_head = nn.Linear(seq_len, pred_len)

    def forward(self, x):  # [Batch, Input length, Channel]
        seasonal_init, trend_init = self.decompsition(x)
        seasonal_init, trend_init = seasonal_init.permute(0, 2, 1), trend_init.permute(0, 2, 1)
        if self.individual:
            seasonal_output = torch.zeros([seasonal_init.size(0), seasonal_init.size(1), self.pred_len],
                                          dtype=seasonal_init.dtype).to(seasonal_init.device)
            trend_output = torch.zeros([trend_init.size(0), trend_init.size(1), self.pred_len],
                                       dtype=trend_init.dtype).to(trend_init.device)
            for i in range(self.channels):
                seasonal_output[:, i, :] = self.Linear_Seasonal[i](seasonal_init[:, i, :])
                trend_output[:, i, :] = self.Linear_Trend[i](trend_init[:, i, :])
        else:
            seasonal_output = self.Linear_Seasonal(seasonal_init)
            trend_output = self.Linear_Trend(trend_init)
        x_out = seasonal_output + trend_output
        x_out = x_out + self.tcn_head(self.tcn(x.transpose(1, 2)))
        return x_out.permute(0, 2, 1)


def make_inputs():
    return (torch.randn(2, 24, 3),)
