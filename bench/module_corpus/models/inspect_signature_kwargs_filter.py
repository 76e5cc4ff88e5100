import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x, mask=None, scale=1.0):
        h = self.fc(x) * scale
        if mask is not None:
            h = h * mask.unsqueeze(-1)
        return h


class Decoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, h, temperature=1.0, **unused):
        return F.log_softmax(self.fc(h) / temperature, dim=-1)


class Model(nn.Module):
    """**kwargs routed to submodules by inspecting their forward signatures (inspect.signature(...).parameters),
    prefix-stripped kwargs (enc_/dec_), and kwargs.pop with defaults."""

    def __init__(self, d=6):
        super().__init__()
        self.encoder = Encoder(d)
        self.decoder = Decoder(d)

    @staticmethod
    def _filter(fn, kwargs):
        params = inspect.signature(fn).parameters
        return {k: v for k, v in kwargs.items() if k in params}

    def forward(self, x, **kwargs):
        return_hidden = kwargs.pop("return_hidden", False)
        enc_kwargs = {k[len("enc_"):]: v for k, v in kwargs.items() if k.startswith("enc_")}
        dec_kwargs = {k[len("dec_"):]: v for k, v in kwargs.items() if k.startswith("dec_")}
        shared = {k: v for k, v in kwargs.items() if not (k.startswith("enc_") or k.startswith("dec_"))}
        h = self.encoder(x, **self._filter(self.encoder.forward, {**shared, **enc_kwargs}))
        out = self.decoder(h, **self._filter(self.decoder.forward, {**shared, **dec_kwargs}))
        if return_hidden:
            return out, h
        return out


def make_inputs():
    x = torch.randn(2, 3, 6)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    return (x,), {"mask": mask, "enc_scale": 0.5, "dec_temperature": 2.0, "return_hidden": True}
