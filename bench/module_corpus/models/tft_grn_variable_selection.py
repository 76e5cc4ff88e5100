from typing import Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class TimeDistributedInterpolation(nn.Module):
    def __init__(self, output_size: int, batch_first: bool = False, trainable: bool = False):
        super().__init__()
        self.output_size = output_size
        self.batch_first = batch_first
        self.trainable = trainable
        if self.trainable:
            self.mask = nn.Parameter(torch.zeros(self.output_size, dtype=torch.float32))
            self.gate = nn.Sigmoid()

    def interpolate(self, x):
        upsampled = F.interpolate(x.unsqueeze(1), self.output_size, mode="linear", align_corners=True).squeeze(1)
        if self.trainable:
            upsampled = upsampled * self.gate(self.mask.unsqueeze(0)) * 2.0
        return upsampled

    def forward(self, x):
        if len(x.size()) <= 2:
            return self.interpolate(x)
        x_reshape = x.contiguous().view(-1, x.size(-1))
        y = self.interpolate(x_reshape)
        if self.batch_first:
            y = y.contiguous().view(x.size(0), -1, y.size(-1))
        else:
            y = y.view(-1, x.size(1), y.size(-1))
        return y


class GatedLinearUnit(nn.Module):
    def __init__(self, input_size: int, hidden_size: int = None, dropout: float = None):
        super().__init__()
        self.dropout = nn.Dropout(dropout) if dropout is not None else dropout
        self.hidden_size = hidden_size or input_size
        self.fc = nn.Linear(input_size, self.hidden_size * 2)

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        x = self.fc(x)
        return F.glu(x, dim=-1)


class ResampleNorm(nn.Module):
    def __init__(self, input_size, output_size=None, trainable_add=True):
        super().__init__()
        self.input_size = input_size
        self.trainable_add = trainable_add
        self.output_size = output_size or input_size
        if self.input_size != self.output_size:
            self.resample = TimeDistributedInterpolation(self.output_size, batch_first=True, trainable=False)
        if self.trainable_add:
            self.mask = nn.Parameter(torch.zeros(self.output_size, dtype=torch.float))
            self.gate = nn.Sigmoid()
        self.norm = nn.LayerNorm(self.output_size)

    def forward(self, x):
        if self.input_size != self.output_size:
            x = self.resample(x)
        if self.trainable_add:
            x = x * self.gate(self.mask) * 2.0
        return self.norm(x)


class GateAddNorm(nn.Module):
    def __init__(self, input_size, hidden_size=None, skip_size=None, trainable_add=False, dropout=None):
        super().__init__()
        self.hidden_size = hidden_size or input_size
        self.skip_size = skip_size or self.hidden_size
        self.glu = GatedLinearUnit(input_size, hidden_size=self.hidden_size, dropout=dropout)
        self.add_norm = nn.LayerNorm(self.hidden_size)
        if self.skip_size != self.hidden_size:
            self.resample = TimeDistributedInterpolation(self.hidden_size, batch_first=True)
        self.trainable_add = trainable_add

    def forward(self, x, skip):
        output = self.glu(x)
        if self.skip_size != self.hidden_size:
            skip = self.resample(skip)
        return self.add_norm(output + skip)


class GatedResidualNetwork(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, dropout=0.1, context_size=None, residual=False):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.context_size = context_size
        self.hidden_size = hidden_size
        self.residual = residual
        if self.input_size != self.output_size and not self.residual:
            residual_size = self.input_size
        else:
            residual_size = self.output_size
        if self.output_size != residual_size:
            self.resample_norm = ResampleNorm(residual_size, self.output_size)
        self.fc1 = nn.Linear(self.input_size, self.hidden_size)
        self.elu = nn.ELU()
        if self.context_size is not None:
            self.context = nn.Linear(self.context_size, self.hidden_size, bias=False)
        self.fc2 = nn.Linear(self.hidden_size, self.hidden_size)
        self.gate_norm = GateAddNorm(self.hidden_size, skip_size=self.output_size, hidden_size=self.output_size, dropout=dropout)

    def forward(self, x, context=None, residual=None):
        if residual is None:
            residual = x
        if self.input_size != self.output_size and not self.residual:
            residual = self.resample_norm(residual)
        x = self.fc1(x)
        if context is not None:
            context = self.context(context)
            x = x + context
        x = self.elu(x)
        x = self.fc2(x)
        return self.gate_norm(x, residual)


class VariableSelectionNetwork(nn.Module):
    def __init__(self, input_sizes: Dict[str, int], hidden_size: int, input_embedding_flags: Dict[str, bool] = None,
                 dropout: float = 0.1, context_size: int = None, prescalers: Dict[str, nn.Linear] = None):
        super().__init__()
        self.hidden_size = hidden_size
        self.input_sizes = input_sizes
        self.input_embedding_flags = {} if input_embedding_flags is None else input_embedding_flags
        self.dropout = dropout
        self.context_size = context_size
        if self.num_inputs > 1:
            self.flattened_grn = GatedResidualNetwork(self.input_size_total, min(self.hidden_size, self.num_inputs),
                                                      self.num_inputs, self.dropout, self.context_size, residual=False)
        self.single_variable_grns = nn.ModuleDict()
        self.prescalers = nn.ModuleDict()
        for name, input_size in self.input_sizes.items():
            self.single_variable_grns[name] = GatedResidualNetwork(input_size, min(input_size, self.hidden_size),
                                                                   output_size=self.hidden_size, dropout=self.dropout)
            if name in (prescalers or {}):
                self.prescalers[name] = prescalers[name]
            elif not self.input_embedding_flags.get(name, False):
                self.prescalers[name] = nn.Linear(1, input_size)
        self.softmax = nn.Softmax(dim=-1)

    @property
    def input_size_total(self):
        return sum(size if name in self.input_embedding_flags else size for name, size in self.input_sizes.items())

    @property
    def num_inputs(self):
        return len(self.input_sizes)

    def forward(self, x: Dict[str, torch.Tensor], context: torch.Tensor = None):
        if self.num_inputs > 1:
            var_outputs = []
            weight_inputs = []
            for name in self.input_sizes.keys():
                variable_embedding = x[name]
                if name in self.prescalers:
                    variable_embedding = self.prescalers[name](variable_embedding)
                weight_inputs.append(variable_embedding)
                var_outputs.append(self.single_variable_grns[name](variable_embedding))
            var_outputs = torch.stack(var_outputs, dim=-1)
            flat_embedding = torch.cat(weight_inputs, dim=-1)
            sparse_weights = self.flattened_grn(flat_embedding, context)
            sparse_weights = self.softmax(sparse_weights).unsqueeze(-2)
            outputs = var_outputs * sparse_weights
            outputs = outputs.sum(dim=-1)
        else:
            name = next(iter(self.single_variable_grns.keys()))
            variable_embedding = x[name]
            if name in self.prescalers:
                variable_embedding = self.prescalers[name](variable_embedding)
            outputs = self.single_variable_grns[name](variable_embedding)
            if outputs.ndim == 3:
                sparse_weights = torch.ones(outputs.size(0), outputs.size(1), 1, 1, device=outputs.device)
            else:
                sparse_weights = torch.ones(outputs.size(0), 1, 1, device=outputs.device)
        return outputs, sparse_weights


class Model(nn.Module):
    """pytorch-forecasting TemporalFusionTransformer pieces: static VSN -> context GRNs -> encoder VSN with context."""

    def __init__(self, hidden_size=8):
        super().__init__()
        self.static_variables = ["cat_store", "real_size"]
        self.time_varying = ["price", "volume", "dow_emb"]
        self.static_vsn = VariableSelectionNetwork({"cat_store": 4, "real_size": 3}, hidden_size,
                                                   input_embedding_flags={"cat_store": True})
        self.encoder_vsn = VariableSelectionNetwork({"price": 3, "volume": 3, "dow_emb": 5}, hidden_size,
                                                    input_embedding_flags={"dow_emb": True}, context_size=hidden_size)
        self.single_vsn = VariableSelectionNetwork({"target": 2}, hidden_size)
        self.static_context_variable_selection = GatedResidualNetwork(hidden_size, hidden_size, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, batch_first=True)

    def expand_static_context(self, context, timesteps):
        return context[:, None].expand(-1, timesteps, -1)

    def forward(self, x: Dict[str, torch.Tensor]):
        timesteps = x["price"].size(1)
        static_embedding, static_variable_selection = self.static_vsn({k: x[k] for k in self.static_variables})
        ctx = self.expand_static_context(self.static_context_variable_selection(static_embedding), timesteps)
        embeddings_varying = {name: x[name] for name in self.time_varying}
        emb, enc_weights = self.encoder_vsn(embeddings_varying, ctx)
        single, single_w = self.single_vsn({"target": x["target"]})
        out, (h, c) = self.lstm(emb + single)
        return {"output": out, "static_weights": static_variable_selection.squeeze(-2),
                "encoder_weights": enc_weights.squeeze(-2), "single_weights": single_w}


def make_inputs():
    return ({"cat_store": torch.randn(2, 4), "real_size": torch.randn(2, 1), "price": torch.randn(2, 5, 1),
             "volume": torch.randn(2, 5, 1), "dow_emb": torch.randn(2, 5, 5), "target": torch.randn(2, 5, 1)},)
