import torch
import torch.nn as nn
import torch.nn.functional as F


def euclidean_dist(x, y):
    # x: N x D ; y: M x D
    n = x.size(0)
    m = y.size(0)
    d = x.size(1)
    assert d == y.size(1)
    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)
    return torch.pow(x - y, 2).sum(2)


class Flatten(nn.Module):
    def __init__(self):
        super(Flatten, self).__init__()

    def forward(self, x):
        return x.view(x.size(0), -1)


def conv_block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
        nn.MaxPool2d(2)
    )


class Model(nn.Module):
    """jakesnell/prototypical-networks Protonet.loss: returns (loss, {'loss': float, 'acc': float})."""

    def __init__(self, x_dim=(1, 8, 8), hid_dim=8, z_dim=8):
        super().__init__()
        self.encoder = nn.Sequential(conv_block(x_dim[0], hid_dim), conv_block(hid_dim, z_dim), Flatten())

    def loss(self, sample):
        xs = sample['xs']  # support
        xq = sample['xq']  # query
        n_class = xs.size(0)
        assert xq.size(0) == n_class
        n_support = xs.size(1)
        n_query = xq.size(1)
        target_inds = torch.arange(0, n_class).view(n_class, 1, 1).expand(n_class, n_query, 1).long()
        target_inds.requires_grad_(False)
        if xq.is_cuda:
            target_inds = target_inds.cuda()
        x = torch.cat([xs.view(n_class * n_support, *xs.size()[2:]),
                       xq.view(n_class * n_query, *xq.size()[2:])], 0)
        z = self.encoder.forward(x)
        z_dim = z.size(-1)
        z_proto = z[:n_class * n_support].view(n_class, n_support, z_dim).mean(1)
        zq = z[n_class * n_support:]
        dists = euclidean_dist(zq, z_proto)
        log_p_y = F.log_softmax(-dists, dim=1).view(n_class, n_query, -1)
        loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
        _, y_hat = log_p_y.max(2)
        acc_val = torch.eq(y_hat, target_inds.squeeze()).float().mean()
        return loss_val, {
            'loss': loss_val.item(),
            'acc': acc_val.item()
        }

    def forward(self, sample):
        return self.loss(sample)


def make_inputs():
    return ({'xs': torch.randn(3, 2, 1, 8, 8), 'xq': torch.randn(3, 4, 1, 8, 8)},)
