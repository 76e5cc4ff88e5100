from typing import List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = ["ReLU", "Softplus", "Tanh", "SELU", "LeakyReLU", "PReLU", "Sigmoid"]
POOLING = ["MaxPool1d", "AvgPool1d"]


class _IdentityBasis(nn.Module):
    def __init__(self, backcast_size: int, forecast_size: int, interpolation_mode: str, out_features: int = 1):
        super().__init__()
        assert (interpolation_mode in ["linear", "nearest"]) or ("cubic" in interpolation_mode)
        self.forecast_size = forecast_size
        self.backcast_size = backcast_size
        self.interpolation_mode = interpolation_mode
        self.out_features = out_features

    def forward(self, theta: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        backcast = theta[:, : self.backcast_size]
        knots = theta[:, self.backcast_size:]
        knots = knots.reshape(len(knots), self.out_features, -1)
        if self.interpolation_mode in ["nearest", "linear"]:
            forecast = F.interpolate(knots, size=self.forecast_size, mode=self.interpolation_mode)
        elif "cubic" in self.interpolation_mode:
            if self.out_features > 1:
                raise Exception("Cubic interpolation not available with multiple outputs.")
            batch_size = len(backcast)
            knots = knots[:, None, :, :]
            forecast = torch.zeros((len(knots), self.forecast_size), device=knots.device)
            n_batches = int(torch.ceil(torch.tensor(len(knots) / batch_size)))
            for i in range(n_batches):
                forecast_i = F.interpolate(knots[i * batch_size: (i + 1) * batch_size], size=self.forecast_size, mode="bicubic")
                forecast[i * batch_size: (i + 1) * batch_size] += forecast_i[:, 0, 0, :]
            forecast = forecast[:, None, :]
        forecast = forecast.permute(0, 2, 1)
        return backcast, forecast


class NHITSBlock(nn.Module):
    def __init__(self, input_size, h, n_theta, mlp_units: List[List[int]], basis, futr_input_size, hist_input_size,
                 stat_input_size, n_pool_kernel_size, pooling_mode, dropout_prob, activation):
        super().__init__()
        pooled_hist_size = int(torch.ceil(torch.tensor(input_size / n_pool_kernel_size)).item())
        pooled_futr_size = int(torch.ceil(torch.tensor((input_size + h) / n_pool_kernel_size)).item())
        input_size = pooled_hist_size + hist_input_size * pooled_hist_size + futr_input_size * pooled_futr_size + stat_input_size
        self.dropout_prob = dropout_prob
        self.futr_input_size = futr_input_size
        self.hist_input_size = hist_input_size
        self.stat_input_size = stat_input_size
        assert activation in ACTIVATIONS, f"{activation} is not in {ACTIVATIONS}"
        assert pooling_mode in POOLING, f"{pooling_mode} is not in {POOLING}"
        activ = getattr(nn, activation)()
        self.pooling_layer = getattr(nn, pooling_mode)(kernel_size=n_pool_kernel_size, stride=n_pool_kernel_size, ceil_mode=True)
        hidden_layers = [nn.Linear(in_features=input_size, out_features=mlp_units[0][0])]
        for layer in mlp_units:
            hidden_layers.append(nn.Linear(in_features=layer[0], out_features=layer[1]))
            hidden_layers.append(activ)
            if self.dropout_prob > 0:
                hidden_layers.append(nn.Dropout(p=self.dropout_prob))
        output_layer = [nn.Linear(in_features=mlp_units[-1][1], out_features=n_theta)]
        layers = hidden_layers + output_layer
        self.layers = nn.Sequential(*layers)
        self.basis = basis

    def forward(self, insample_y, futr_exog, hist_exog, stat_exog):
        insample_y = insample_y.unsqueeze(1)
        insample_y = self.pooling_layer(insample_y)
        insample_y = insample_y.squeeze(1)
        batch_size = len(insample_y)
        if self.hist_input_size > 0:
            hist_exog = hist_exog.permute(0, 2, 1)
            hist_exog = self.pooling_layer(hist_exog)
            hist_exog = hist_exog.permute(0, 2, 1)
            insample_y = torch.cat((insample_y, hist_exog.reshape(batch_size, -1)), dim=1)
        if self.futr_input_size > 0:
            futr_exog = futr_exog.permute(0, 2, 1)
            futr_exog = self.pooling_layer(futr_exog)
            futr_exog = futr_exog.permute(0, 2, 1)
            insample_y = torch.cat((insample_y, futr_exog.reshape(batch_size, -1)), dim=1)
        if self.stat_input_size > 0:
            insample_y = torch.cat((insample_y, stat_exog.reshape(batch_size, -1)), dim=1)
        theta = self.layers(insample_y)
        return self.basis(theta)


class Model(nn.Module):
    """Nixtla neuralforecast NHITS: stacks of blocks with pooling kernels and downsampled frequencies
    (n_theta = input_size + max(h // freq_downsample, 1)), residual backcast with mask, optional decompose."""

    def __init__(self, h=6, input_size=12, stack_types=("identity", "identity", "identity"), n_blocks=(1, 1, 1),
                 mlp_units=((16, 16), (16, 16)), n_pool_kernel_size=(2, 2, 1), n_freq_downsample=(4, 2, 1),
                 pooling_mode="MaxPool1d", interpolation_modes=("linear", "nearest", "cubic"), hist_exog_size=1,
                 futr_exog_size=1, stat_exog_size=2, activation="ReLU", decompose_forecast=True):
        super().__init__()
        self.h = h
        self.decompose_forecast = decompose_forecast
        mlp_units = [list(u) for u in mlp_units]
        block_list = []
        for i in range(len(stack_types)):
            for block_id in range(n_blocks[i]):
                assert stack_types[i] == "identity", f"Block type {stack_types[i]} not found!"
                n_theta = input_size + max(h // n_freq_downsample[i], 1)
                basis = _IdentityBasis(backcast_size=input_size, forecast_size=h, interpolation_mode=interpolation_modes[i])
                nbeats_block = NHITSBlock(input_size=input_size, h=h, n_theta=n_theta, mlp_units=mlp_units, basis=basis,
                                          futr_input_size=futr_exog_size, hist_input_size=hist_exog_size,
                                          stat_input_size=stat_exog_size, n_pool_kernel_size=n_pool_kernel_size[i],
                                          pooling_mode=pooling_mode, dropout_prob=0.1, activation=activation)
                block_list.append(nbeats_block)
        self.blocks = nn.ModuleList(block_list)

    def forward(self, windows_batch):
        insample_y = windows_batch["insample_y"].squeeze(-1).contiguous()
        insample_mask = windows_batch["insample_mask"].squeeze(-1).contiguous()
        futr_exog = windows_batch["futr_exog"]
        hist_exog = windows_batch["hist_exog"]
        stat_exog = windows_batch["stat_exog"]
        residuals = insample_y.flip(dims=(-1,))
        insample_mask = insample_mask.flip(dims=(-1,))
        forecast = insample_y[:, -1:, None]
        block_forecasts = [forecast.repeat(1, self.h, 1)]
        for i, block in enumerate(self.blocks):
            backcast, block_forecast = block(insample_y=residuals, futr_exog=futr_exog, hist_exog=hist_exog, stat_exog=stat_exog)
            residuals = (residuals - backcast) * insample_mask
            forecast = forecast + block_forecast
            if self.decompose_forecast:
                block_forecasts.append(block_forecast)
        if self.decompose_forecast:
            block_forecasts = torch.stack(block_forecasts)
            block_forecasts = block_forecasts.permute(1, 0, 2, 3)
            return forecast.squeeze(-1), block_forecasts.squeeze(-1)
        return forecast.squeeze(-1)


def make_inputs():
    b, L, h = 3, 12, 6
    mask = torch.ones(b, L, 1)
    mask[0, :3] = 0
    return ({"insample_y": torch.randn(b, L, 1), "insample_mask": mask, "futr_exog": torch.randn(b, L + h, 1),
             "hist_exog": torch.randn(b, L, 1), "stat_exog": torch.randn(b, 2)},)
