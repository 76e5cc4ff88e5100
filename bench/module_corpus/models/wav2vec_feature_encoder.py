import torch
import torch.nn as nn
import torch.nn.functional as F


class Fp32GroupNorm(nn.GroupNorm):
    def forward(self, input):
        output = F.group_norm(
            input.float(), self.num_groups,
            self.weight.float() if self.weight is not None else None,
            self.bias.float() if self.bias is not None else None, self.eps)
        return output.type_as(input)


class TransposeLast(nn.Module):
    def __init__(self, deconstruct_idx=None):
        super().__init__()
        self.deconstruct_idx = deconstruct_idx

    def forward(self, x):
        if self.deconstruct_idx is not None:
            x = x[self.deconstruct_idx]
        return x.transpose(-2, -1)


class ConvFeatureExtractionModel(nn.Module):
    """fairseq wav2vec2 feature encoder: conv_layers given as a string-eval'd list of tuples."""

    def __init__(self, conv_layers, dropout=0.0, mode="default", conv_bias=False):
        super().__init__()
        assert mode in {"default", "layer_norm"}

        def block(n_in, n_out, k, stride, is_layer_norm=False, is_group_norm=False, conv_bias=False):
            def make_conv():
                conv = nn.Conv1d(n_in, n_out, k, stride=stride, bias=conv_bias)
                nn.init.kaiming_normal_(conv.weight)
                return conv

            assert (is_layer_norm and is_group_norm) == False, "layer norm and group norm are exclusive"
            if is_layer_norm:
                return nn.Sequential(make_conv(), nn.Dropout(p=dropout),
                                     nn.Sequential(TransposeLast(), nn.LayerNorm(n_out, elementwise_affine=True),
                                                   TransposeLast()), nn.GELU())
            elif is_group_norm:
                return nn.Sequential(make_conv(), nn.Dropout(p=dropout), Fp32GroupNorm(n_out, n_out, affine=True),
                                     nn.GELU())
            else:
                return nn.Sequential(make_conv(), nn.Dropout(p=dropout), nn.GELU())

        in_d = 1
        self.conv_layers = nn.ModuleList()
        for i, cl in enumerate(conv_layers):
            assert len(cl) == 3, "invalid conv definition: " + str(cl)
            (dim, k, stride) = cl
            self.conv_layers.append(block(in_d, dim, k, stride, is_layer_norm=mode == "layer_norm",
                                          is_group_norm=mode == "default" and i == 0, conv_bias=conv_bias))
            in_d = dim

    def forward(self, x):
        x = x.unsqueeze(1)
        for conv in self.conv_layers:
            x = conv(x)
        return x


class Model(nn.Module):
    def __init__(self, conv_feature_layers="[(16, 10, 5)] + [(16, 3, 2)] * 2 + [(16, 2, 2)]"):
        super().__init__()
        feature_enc_layers = eval(conv_feature_layers)
        self.embed = feature_enc_layers[-1][0]
        self.feature_extractor = ConvFeatureExtractionModel(feature_enc_layers, mode="default")
        self.ln_extractor = ConvFeatureExtractionModel(feature_enc_layers, mode="layer_norm")
        self.layer_norm = nn.LayerNorm(self.embed)
        self.post_extract_proj = nn.Linear(self.embed, 24)
        self.feature_grad_mult = 1.0
        self._conv_feature_layers = feature_enc_layers

    def _get_feat_extract_output_lengths(self, input_lengths):
        def _conv_out_length(input_length, kernel_size, stride):
            return torch.floor((input_length - kernel_size) / stride + 1)

        for i in range(len(self._conv_feature_layers)):
            input_lengths = _conv_out_length(input_lengths, self._conv_feature_layers[i][1],
                                             self._conv_feature_layers[i][2])
        return input_lengths.to(torch.long)

    def forward(self, source, padding_mask):
        if self.feature_grad_mult > 0:
            features = self.feature_extractor(source)
        else:
            with torch.no_grad():
                features = self.feature_extractor(source)
        features = features + self.ln_extractor(source)
        features_pen = features.float().pow(2).mean()
        features = features.transpose(1, 2)
        features = self.layer_norm(features)
        input_lengths = (1 - padding_mask.long()).sum(-1)
        output_lengths = self._get_feat_extract_output_lengths(input_lengths)
        padding_mask = torch.zeros(features.shape[:2], dtype=features.dtype, device=features.device)
        padding_mask[torch.arange(padding_mask.shape[0], device=padding_mask.device), output_lengths - 1] = 1
        padding_mask = (1 - padding_mask.flip([-1]).cumsum(-1).flip([-1])).bool()
        features = self.post_extract_proj(features)
        features = features.masked_fill(padding_mask.unsqueeze(-1), 0.0)
        return {"x": features, "padding_mask": padding_mask, "features_pen": features_pen}


def make_inputs():
    pm = torch.zeros(2, 400, dtype=torch.bool)
    pm[1, 300:] = True
    return torch.randn(2, 400), pm
