import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_mask_from_lengths(lengths, max_len=None):
    batch_size = lengths.shape[0]
    if max_len is None:
        max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len).unsqueeze(0).expand(batch_size, -1).to(lengths.device)
    mask = ids >= lengths.unsqueeze(1).expand(-1, max_len)
    return mask


class Conv1dT(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k, padding=(k - 1) // 2)

    def forward(self, x):
        return self.conv(x.contiguous().transpose(1, 2)).contiguous().transpose(1, 2)


class VariancePredictor(nn.Module):
    def __init__(self, d, filt=8, k=3):
        super().__init__()
        self.conv_layer = nn.Sequential(Conv1dT(d, filt, k), nn.ReLU(), nn.LayerNorm(filt), nn.Dropout(0.5),
                                        Conv1dT(filt, filt, k), nn.ReLU(), nn.LayerNorm(filt), nn.Dropout(0.5))
        self.linear_layer = nn.Linear(filt, 1)

    def forward(self, encoder_output, mask):
        out = self.linear_layer(self.conv_layer(encoder_output)).squeeze(-1)
        if mask is not None:
            out = out.masked_fill(mask, 0.0)
        return out


class Model(nn.Module):
    """FastSpeech2 variance adaptor (ming024): pitch/energy predicted, quantised with torch.bucketize into embeddings."""

    def __init__(self, d=16, n_bins=16, pitch_min=-2.0, pitch_max=3.0, energy_min=-1.5, energy_max=4.0,
                 pitch_quantization="log"):
        super().__init__()
        self.pitch_predictor = VariancePredictor(d)
        self.energy_predictor = VariancePredictor(d)
        self.duration_predictor = VariancePredictor(d)
        if pitch_quantization == "log":
            self.pitch_bins = nn.Parameter(torch.exp(torch.linspace(np.log(pitch_min + 3), np.log(pitch_max + 3), n_bins - 1)) - 3,
                                           requires_grad=False)
        else:
            self.pitch_bins = nn.Parameter(torch.linspace(pitch_min, pitch_max, n_bins - 1), requires_grad=False)
        self.energy_bins = nn.Parameter(torch.linspace(energy_min, energy_max, n_bins - 1), requires_grad=False)
        self.pitch_embedding = nn.Embedding(n_bins, d)
        self.energy_embedding = nn.Embedding(n_bins, d)

    def get_pitch_embedding(self, x, target, mask, control):
        prediction = self.pitch_predictor(x, mask)
        if target is not None:
            embedding = self.pitch_embedding(torch.bucketize(target, self.pitch_bins))
        else:
            prediction = prediction * control
            embedding = self.pitch_embedding(torch.bucketize(prediction, self.pitch_bins))
        return prediction, embedding

    def get_energy_embedding(self, x, target, mask, control):
        prediction = self.energy_predictor(x, mask)
        if target is not None:
            embedding = self.energy_embedding(torch.bucketize(target, self.energy_bins))
        else:
            prediction = prediction * control
            embedding = self.energy_embedding(torch.bucketize(prediction, self.energy_bins))
        return prediction, embedding

    def forward(self, x, src_lens, pitch_target=None, energy_target=None, p_control=1.0, e_control=1.0, d_control=1.0):
        src_mask = get_mask_from_lengths(src_lens, x.size(1))
        log_duration_prediction = self.duration_predictor(x, src_mask)
        pitch_prediction, pitch_embedding = self.get_pitch_embedding(x, pitch_target, src_mask, p_control)
        x = x + pitch_embedding
        energy_prediction, energy_embedding = self.get_energy_embedding(x, energy_target, src_mask, e_control)
        x = x + energy_embedding
        duration_rounded = torch.clamp((torch.round(torch.exp(log_duration_prediction) - 1) * d_control), min=0)
        return x, pitch_prediction, energy_prediction, log_duration_prediction, duration_rounded, src_mask


def make_inputs():
    return (torch.randn(2, 7, 16), torch.tensor([7, 4])), {"energy_target": torch.randn(2, 7), "p_control": 1.2}


def make_inputs_seq():
    x = torch.randn(2, 7, 16)
    return [make_inputs(), ((x, torch.tensor([5, 7])), {"pitch_target": torch.randn(2, 7), "e_control": 0.8}),
            ((x, torch.tensor([7, 7])), {})]
