import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Functional-style model: parameters held directly, every op through F.* with many kwargs."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(8, 3, 3, 3) * 0.2)
        self.b1 = nn.Parameter(torch.zeros(8))
        self.w2 = nn.Parameter(torch.randn(8, 2, 3, 3) * 0.2)
        self.ln_w = nn.Parameter(torch.ones(8))
        self.ln_b = nn.Parameter(torch.zeros(8))
        self.fc_w = nn.Parameter(torch.randn(4, 8) * 0.2)
        self.register_buffer("rm", torch.zeros(8))
        self.register_buffer("rv", torch.ones(8))

    def forward(self, x, target):
        x = F.pad(x, pad=(1, 1, 2, 0), mode="reflect")
        x = F.conv2d(x, self.w1, bias=self.b1, stride=(1, 2), padding=1, dilation=1, groups=1)
        x = F.batch_norm(x, self.rm, self.rv, weight=None, bias=None, training=False, momentum=0.1, eps=1e-3)
        x = F.leaky_relu(x, negative_slope=0.1, inplace=False)
        x = F.conv2d(x, self.w2, None, 1, "same", 1, 4)
        x = F.avg_pool2d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        x = F.gelu(x, approximate="tanh")
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, normalized_shape=(8,), weight=self.ln_w, bias=self.ln_b, eps=1e-6)
        x = F.dropout(x, p=0.2, training=self.training, inplace=False)
        pooled = x.mean(dim=(1, 2))
        logits = F.linear(pooled, weight=self.fc_w, bias=None)
        loss = F.cross_entropy(logits, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.1)
        probs = F.softmax(logits, dim=-1, dtype=torch.float64)
        emb = F.normalize(pooled, p=2.0, dim=1, eps=1e-12)
        sim = F.hardtanh(emb @ emb.t(), min_val=-0.5, max_val=0.5)
        elu = F.elu(logits, alpha=0.5)
        return loss, probs, sim, F.softplus(elu, beta=2.0, threshold=10.0), F.huber_loss(logits, elu, delta=0.5)


def make_inputs():
    return torch.randn(2, 3, 9, 10), torch.tensor([1, 3])
