import torch
import torch.nn as nn


class RevIN(nn.Module):
    """Reversible instance normalisation (ts-kim/RevIN): stats are stored on self in 'norm' mode, used in 'denorm'."""

    def __init__(self, num_features: int, eps=1e-5, affine=True, subtract_last=False):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.affine = affine
        self.subtract_last = subtract_last
        if self.affine:
            self._init_params()

    def forward(self, x, mode: str):
        if mode == "norm":
            self._get_statistics(x)
            x = self._normalize(x)
        elif mode == "denorm":
            x = self._denormalize(x)
        else:
            raise NotImplementedError
        return x

    def _init_params(self):
        self.affine_weight = nn.Parameter(torch.ones(self.num_features))
        self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

    def _get_statistics(self, x):
        dim2reduce = tuple(range(1, x.ndim - 1))
        if self.subtract_last:
            self.last = x[:, -1, :].unsqueeze(1)
        else:
            self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
        self.stdev = torch.sqrt(torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps).detach()

    def _normalize(self, x):
        if self.subtract_last:
            x = x - self.last
        else:
            x = x - self.mean
        x = x / self.stdev
        if self.affine:
            x = x * self.affine_weight
            x = x + self.affine_bias
        return x

    def _denormalize(self, x):
        if self.affine:
            x = x - self.affine_bias
            x = x / (self.affine_weight + self.eps * self.eps)
        x = x * self.stdev
        if self.subtract_last:
            x = x + self.last
        else:
            x = x + self.mean
        return x


class Model(nn.Module):
    """PatchTST backbone: RevIN -> replication pad -> unfold into patches -> transformer -> flatten head -> RevIN."""

    def __init__(self, c_in=3, context_window=32, target_window=8, patch_len=8, stride=4, d_model=16, n_heads=2,
                 padding_patch="end"):
        super().__init__()
        self.revin_layer = RevIN(c_in, affine=True, subtract_last=False)
        self.patch_len = patch_len
        self.stride = stride
        self.padding_patch = padding_patch
        patch_num = int((context_window - patch_len) / stride + 1)
        if padding_patch == "end":
            self.padding_patch_layer = nn.ReplicationPad1d((0, stride))
            patch_num += 1
        self.W_P = nn.Linear(patch_len, d_model)
        self.W_pos = nn.Parameter(torch.empty(patch_num, d_model).uniform_(-0.02, 0.02))
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=32, dropout=0.0, batch_first=True,
                                           norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head_nf = d_model * patch_num
        self.flatten = nn.Flatten(start_dim=-2)
        self.linear = nn.Linear(self.head_nf, target_window)
        self.n_vars = c_in

    def forward(self, x):  # x: [bs x seq_len x nvars]
        z = self.revin_layer(x, "norm")
        z = z.permute(0, 2, 1)
        if self.padding_patch == "end":
            z = self.padding_patch_layer(z)
        z = z.unfold(dimension=-1, size=self.patch_len, step=self.stride)  # [bs x nvars x patch_num x patch_len]
        bs, n_vars, patch_num, _ = z.shape
        u = self.W_P(z)
        u = torch.reshape(u, (u.shape[0] * u.shape[1], u.shape[2], u.shape[3]))
        u = u + self.W_pos
        h = self.encoder(u)
        h = torch.reshape(h, (-1, n_vars, h.shape[-2], h.shape[-1]))
        h = h.permute(0, 1, 3, 2)
        y = self.linear(self.flatten(h))
        y = y.permute(0, 2, 1)
        y = self.revin_layer(y, "denorm")
        return y


def make_inputs():
    return (torch.randn(2, 32, 3) * 3 + 1,)
