import torch
import torch.nn as nn


def overlay_y_on_x(x, y):
    """Replace the first 10 pixels of data [x] with one-hot-encoded label [y]"""
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.threshold = 2.0

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers += [Layer(dims[d], dims[d + 1])]
        for i, layer in enumerate(self.layers):
            self.add_module(f"layer{i}", layer)

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)


class Model(nn.Module):
    """pytorch/examples mnist_forward_forward (Hinton's Forward-Forward): layers kept in a plain list (then
    add_module'd), x_[range(n), y] = x.max() fancy indexing with a range object, predict() loop over all 10
    labels with `goodness += [...]` and sum() of a list of tensors, positive / negative goodness loss."""

    def __init__(self):
        super().__init__()
        self.net = Net([20, 16, 16])

    def forward(self, x, y):
        x_pos = overlay_y_on_x(x, y)
        rnd = torch.roll(y, 1)
        x_neg = overlay_y_on_x(x, rnd)
        h_pos, h_neg = x_pos, x_neg
        losses = []
        for layer in self.net.layers:
            h_pos, h_neg = layer(h_pos), layer(h_neg)
            g_pos = h_pos.pow(2).mean(1)
            g_neg = h_neg.pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + layer.threshold, g_neg - layer.threshold]))).mean()
            losses.append(loss)
            h_pos, h_neg = h_pos.detach(), h_neg.detach()
        pred = self.net.predict(x)
        return losses, pred, 1.0 - pred.eq(y).float().mean()


def make_inputs():
    return torch.rand(4, 20), torch.tensor([3, 1, 9, 0])
