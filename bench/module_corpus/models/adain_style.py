import torch
import torch.nn as nn
import torch.nn.functional as F


def calc_mean_std(feat, eps=1e-5):
    size = feat.size()
    assert len(size) == 4
    N, C = size[:2]
    feat_var = feat.view(N, C, -1).var(dim=2) + eps
    feat_std = feat_var.sqrt().view(N, C, 1, 1)
    feat_mean = feat.view(N, C, -1).mean(dim=2).view(N, C, 1, 1)
    return feat_mean, feat_std


def adaptive_instance_normalization(content_feat, style_feat):
    assert content_feat.size()[:2] == style_feat.size()[:2]
    size = content_feat.size()
    style_mean, style_std = calc_mean_std(style_feat)
    content_mean, content_std = calc_mean_std(content_feat)
    normalized_feat = (content_feat - content_mean.expand(size)) / content_std.expand(size)
    return normalized_feat * style_std.expand(size) + style_mean.expand(size)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        enc = [nn.Conv2d(3, 3, 1), nn.ReflectionPad2d(1), nn.Conv2d(3, 8, 3), nn.ReLU(),
               nn.ReflectionPad2d(1), nn.Conv2d(8, 8, 3), nn.ReLU(), nn.MaxPool2d(2, 2, ceil_mode=True),
               nn.ReflectionPad2d(1), nn.Conv2d(8, 16, 3), nn.ReLU()]
        self.enc_1 = nn.Sequential(*enc[:4])
        self.enc_2 = nn.Sequential(*enc[4:8])
        self.enc_3 = nn.Sequential(*enc[8:])
        self.decoder = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(16, 8, 3), nn.ReLU(),
                                     nn.Upsample(scale_factor=2, mode="nearest"),
                                     nn.ReflectionPad2d(1), nn.Conv2d(8, 3, 3))
        for name in ["enc_1", "enc_2", "enc_3"]:
            for param in getattr(self, name).parameters():
                param.requires_grad = False

    def encode_with_intermediate(self, x):
        results = [x]
        for i in range(3):
            func = getattr(self, "enc_{:d}".format(i + 1))
            results.append(func(results[-1]))
        return results[1:]

    def forward(self, content, style, alpha=0.8):
        assert 0 <= alpha <= 1
        style_feats = self.encode_with_intermediate(style)
        content_feat = self.encode_with_intermediate(content)[-1]
        t = adaptive_instance_normalization(content_feat, style_feats[-1])
        t = alpha * t + (1 - alpha) * content_feat
        g_t = self.decoder(t)
        g_t_feats = self.encode_with_intermediate(g_t)
        loss_c = F.mse_loss(g_t_feats[-1], t)
        loss_s = sum(F.mse_loss(calc_mean_std(a)[0], calc_mean_std(b)[0]) + F.mse_loss(calc_mean_std(a)[1], calc_mean_std(b)[1])
                     for a, b in zip(g_t_feats, style_feats))
        return g_t, loss_c, loss_s


def make_inputs():
    return (torch.rand(2, 3, 8, 8), torch.rand(2, 3, 8, 8)), {"alpha": 0.6}
