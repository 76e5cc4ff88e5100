import torch
import torch.nn as nn
import torch.nn.functional as F


class FiLM(nn.Module):
    def forward(self, x, gammas, betas):
        gammas = gammas.unsqueeze(2).unsqueeze(3).expand_as(x)
        betas = betas.unsqueeze(2).unsqueeze(3).expand_as(x)
        return (gammas * x) + betas


class FiLMedResBlock(nn.Module):
    def __init__(self, in_dim, out_dim=None, with_residual=True, with_batchnorm=True, with_cond=[True], dropout=0,
                 num_extra_channels=0, extra_channel_freq=1, with_input_proj=0, num_cond_maps=0, kernel_size=3,
                 batchnorm_affine=False, num_layers=1, condition_method='bn-film', debug_every=float('inf')):
        if out_dim is None:
            out_dim = in_dim
        super(FiLMedResBlock, self).__init__()
        self.with_residual = with_residual
        self.with_batchnorm = with_batchnorm
        self.with_cond = with_cond
        self.condition_method = condition_method
        self.input_proj = nn.Conv2d(in_dim, in_dim, kernel_size=1)
        self.conv1 = nn.Conv2d(in_dim, out_dim, kernel_size=kernel_size, padding=kernel_size // 2)
        if self.with_batchnorm:
            self.bn1 = nn.BatchNorm2d(out_dim, affine=((not with_cond[0]) or batchnorm_affine))
        self.film = FiLM()
        self.debug_every = debug_every

    def forward(self, x, gammas=None, betas=None, extra_channels=None, cond_maps=None):
        x = F.relu(self.input_proj(x))
        out = x
        out = self.conv1(out)
        if self.condition_method == 'conv-film' and self.with_cond[0]:
            out = self.film(out, gammas, betas)
        if self.with_batchnorm:
            out = self.bn1(out)
        if self.condition_method == 'bn-film' and self.with_cond[0]:
            out = self.film(out, gammas, betas)
        out = F.relu(out)
        if self.condition_method == 'relu-film' and self.with_cond[0]:
            out = self.film(out, gammas, betas)
        if self.with_residual:
            out = x + out
        return out


class ConditionalBatchNorm2d(nn.Module):
    def __init__(self, num_features, num_classes):
        super().__init__()
        self.num_features = num_features
        self.bn = nn.BatchNorm2d(num_features, affine=False)
        self.embed = nn.Embedding(num_classes, num_features * 2)
        self.embed.weight.data[:, :num_features].normal_(1, 0.02)
        self.embed.weight.data[:, num_features:].zero_()

    def forward(self, x, y):
        out = self.bn(x)
        gamma, beta = self.embed(y).chunk(2, 1)
        out = gamma.view(-1, self.num_features, 1, 1) * out + beta.view(-1, self.num_features, 1, 1)
        return out


class Model(nn.Module):
    """ethanjperez/film FiLMed res blocks (string-dispatched condition method, float('inf') default) + cGAN conditional BN."""

    def __init__(self, dim=8, num_modules=3, cond_dim=6):
        super().__init__()
        self.num_modules = num_modules
        self.module_dim = dim
        self.film_generator = nn.Linear(cond_dim, 2 * dim * num_modules)
        methods = ['bn-film', 'relu-film', 'conv-film']
        self.res_blocks = nn.ModuleList([FiLMedResBlock(dim, condition_method=m) for m in methods])
        self.cbn = ConditionalBatchNorm2d(dim, 4)
        self.stem = nn.Conv2d(3, dim, 3, padding=1)

    def forward(self, x, question, labels):
        film = self.film_generator(question).view(x.size(0), self.num_modules, 2 * self.module_dim)
        gammas, betas = torch.split(film[:, :, :2 * self.module_dim], self.module_dim, dim=-1)
        h = self.stem(x)
        for fn_num, block in enumerate(self.res_blocks):
            h = block(h, gammas[:, fn_num, :], betas[:, fn_num, :])
        return self.cbn(h, labels)


def make_inputs():
    return torch.randn(2, 3, 6, 6), torch.randn(2, 6), torch.tensor([1, 3])
