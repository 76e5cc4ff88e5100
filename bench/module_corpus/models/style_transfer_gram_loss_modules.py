import copy
import torch
import torch.nn as nn
import torch.nn.functional as F


class ContentLoss(nn.Module):
    """PyTorch 'Neural Transfer Using PyTorch' tutorial: a transparent layer that stores self.loss as a side effect."""

    def __init__(self, target):
        super(ContentLoss, self).__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super(StyleLoss, self).__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


content_layers_default = ["conv_4"]
style_layers_default = ["conv_1", "conv_2", "conv_3", "conv_4", "conv_5"]


def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img,
                               content_layers=content_layers_default, style_layers=style_layers_default):
    normalization = Normalization(normalization_mean, normalization_std)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = "conv_{}".format(i)
        elif isinstance(layer, nn.ReLU):
            name = "relu_{}".format(i)
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = "pool_{}".format(i)
        elif isinstance(layer, nn.BatchNorm2d):
            name = "bn_{}".format(i)
        else:
            raise RuntimeError("Unrecognized layer: {}".format(layer.__class__.__name__))
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module("content_loss_{}".format(i), content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module("style_loss_{}".format(i), style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[:(i + 1)]
    return model, style_losses, content_losses


class Model(nn.Module):
    """The model is a truncated copy of a VGG-like cnn with loss modules spliced in by name; forward runs it on
    the input image, then sums the .loss attributes the loss layers stored (closure of run_style_transfer)."""

    def __init__(self, style_weight=1000000, content_weight=1):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(8, 8, 3, padding=1),
                            nn.ReLU(inplace=True), nn.MaxPool2d(2, 2), nn.Conv2d(8, 12, 3, padding=1), nn.ReLU(inplace=True),
                            nn.Conv2d(12, 12, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
                            nn.Conv2d(12, 16, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(16, 16, 3, padding=1))
        cnn = copy.deepcopy(cnn).eval()
        style_img = torch.rand(1, 3, 16, 16, generator=g)
        content_img = torch.rand(1, 3, 16, 16, generator=g)
        self.model, self.style_losses, self.content_losses = get_style_model_and_losses(
            cnn, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], style_img, content_img)
        self.model.requires_grad_(False)
        self.style_weight = style_weight
        self.content_weight = content_weight

    def forward(self, input_img):
        with torch.no_grad():
            input_img.clamp_(0, 1)
        self.model(input_img)
        style_score = 0
        content_score = 0
        for sl in self.style_losses:
            style_score += sl.loss
        for cl in self.content_losses:
            content_score += cl.loss
        style_score *= self.style_weight
        content_score *= self.content_weight
        loss = style_score + content_score
        return loss, style_score, content_score, input_img


def make_inputs():
    return (torch.rand(1, 3, 16, 16) * 1.2 - 0.1,)
