from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import StudentT, TransformedDistribution, AffineTransform


class LambdaLayer(nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x, *args):
        return self.function(x, *args)


class StudentTOutput:
    args_dim = {"df": 1, "loc": 1, "scale": 1}
    distr_cls = StudentT

    @classmethod
    def domain_map(cls, df, loc, scale):
        scale = F.softplus(scale).clamp_min(torch.finfo(scale.dtype).eps)
        df = 2.0 + F.softplus(df)
        return df.squeeze(-1), loc.squeeze(-1), scale.squeeze(-1)

    def distribution(self, distr_args, loc=None, scale=None):
        distr = self.distr_cls(*distr_args)
        if loc is None and scale is None:
            return distr
        return TransformedDistribution(distr, [AffineTransform(loc=0.0 if loc is None else loc,
                                                               scale=1.0 if scale is None else scale)])

    @property
    def event_shape(self):
        return ()

    def get_args_proj(self, in_features):
        return ParameterProjection(in_features, self.args_dim, self.domain_map)


class ParameterProjection(nn.Module):
    def __init__(self, in_features, args_dim, domain_map):
        super().__init__()
        self.args_dim = args_dim
        self.proj = nn.ModuleList([nn.Linear(in_features, dim) for dim in args_dim.values()])
        self.domain_map = LambdaLayer(domain_map)

    def forward(self, x):
        params_unbounded = [proj(x) for proj in self.proj]
        return self.domain_map(*params_unbounded)


class MeanScaler(nn.Module):
    def __init__(self, dim: int = 1, keepdim: bool = True, minimum_scale: float = 1e-10):
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim
        self.minimum_scale = minimum_scale

    def forward(self, data, observed_indicator):
        ts_sum = (data * observed_indicator).abs().sum(self.dim, keepdim=True)
        num_observed = observed_indicator.sum(self.dim, keepdim=True)
        scale = ts_sum / torch.clamp(num_observed, min=1)
        batch_sum = ts_sum.sum(dim=0)
        batch_observations = torch.clamp(num_observed.sum(0), min=1)
        default_scale = torch.squeeze(batch_sum / batch_observations)
        scale = torch.where(num_observed > 0, scale, default_scale)
        scale = torch.clamp(scale, min=self.minimum_scale)
        scaled_data = data / scale
        if not self.keepdim:
            scale = scale.squeeze(dim=self.dim)
        return scaled_data, torch.zeros_like(scale), scale


def lagged_sequence_values(indices: List[int], prior_sequence, sequence):
    assert max(indices) <= prior_sequence.shape[1], f"lags cannot go further than prior sequence length"
    full_sequence = torch.cat((prior_sequence, sequence), dim=1)
    lags_values = []
    for lag_index in indices:
        begin_index = -lag_index - sequence.shape[1]
        end_index = -lag_index if lag_index > 0 else None
        lags_values.append(full_sequence[:, begin_index:end_index, ...])
    lags = torch.stack(lags_values, dim=-1)
    return lags.reshape(lags.shape[0], lags.shape[1], -1)


class Model(nn.Module):
    """GluonTS DeepAR (torch): mean scaling, lag features, LSTM, StudentT output, NLL over the prediction range."""

    def __init__(self, context_length=6, prediction_length=3, lags_seq=(1, 2, 4), hidden_size=8, num_layers=2):
        super().__init__()
        self.context_length = context_length
        self.prediction_length = prediction_length
        self.lags_seq = list(lags_seq)
        self.distr_output = StudentTOutput()
        self.scaler = MeanScaler(dim=1, keepdim=True)
        self.rnn = nn.LSTM(input_size=len(self.lags_seq) + 2, hidden_size=hidden_size, num_layers=num_layers,
                           dropout=0.1, batch_first=True)
        self.param_proj = self.distr_output.get_args_proj(hidden_size)

    @property
    def _past_length(self) -> int:
        return self.context_length + max(self.lags_seq)

    def forward(self, past_target, past_observed_values, future_target):
        context = past_target[:, -self.context_length:]
        observed_context = past_observed_values[:, -self.context_length:]
        _, loc, scale = self.scaler(context, observed_context)
        prior_input = past_target[:, : -self.context_length] / scale
        sequence = torch.cat((context, future_target[:, :-1]), dim=1) / scale
        lags = lagged_sequence_values(self.lags_seq, prior_input, sequence)
        log_scale = scale.log().unsqueeze(-1).expand(-1, lags.shape[1], -1)
        time_feat = torch.linspace(0, 1, lags.shape[1]).view(1, -1, 1).expand(lags.shape[0], -1, -1)
        rnn_input = torch.cat((lags, log_scale, time_feat), dim=-1)
        output, _ = self.rnn(rnn_input)
        params = self.param_proj(output)
        distr = self.distr_output.distribution(params, scale=scale)
        target = torch.cat((context, future_target), dim=1)[:, 1:]
        nll = -distr.log_prob(target)
        return nll.mean(), distr.base_dist.loc * scale, distr.base_dist.scale


def make_inputs():
    past = torch.rand(3, 10) * 5 + 1
    observed = torch.ones(3, 10)
    observed[1, -2:] = 0
    return past, observed, torch.rand(3, 3) * 5 + 1
