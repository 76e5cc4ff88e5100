import torch
from torch import nn
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self, in_dim=64, hid=32, z=8):
        super(VAE, self).__init__()
        self.in_dim = in_dim
        self.fc1 = nn.Linear(in_dim, hid)
        self.fc21 = nn.Linear(hid, z)
        self.fc22 = nn.Linear(hid, z)
        self.fc3 = nn.Linear(z, hid)
        self.fc4 = nn.Linear(hid, in_dim)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        if self.training:
            std = torch.exp(0.5 * logvar)
            eps = torch.randn_like(std)
            return mu + eps * std
        else:
            return mu

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, self.in_dim))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, recon_x.size(1)), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


class Model(nn.Module):
    """pytorch/examples vae: encode / reparameterize (mu in eval) / decode, loss_function with BCE + KLD."""

    def __init__(self):
        super().__init__()
        self.vae = VAE()

    def forward(self, data):
        recon_batch, mu, logvar = self.vae(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        return recon_batch, loss / len(data)


def make_inputs():
    return (torch.rand(4, 1, 8, 8),)
