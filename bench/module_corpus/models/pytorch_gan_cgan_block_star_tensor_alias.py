import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

img_shape = (1, 8, 8)
n_classes = 4
latent_dim = 6
cuda = False  # True if torch.cuda.is_available() else False
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.label_emb = nn.Embedding(n_classes, n_classes)

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(latent_dim + n_classes, 16, normalize=False),
            *block(16, 32),
            nn.Linear(32, int(np.prod(img_shape))),
            nn.Tanh()
        )

    def forward(self, noise, labels):
        gen_input = torch.cat((self.label_emb(labels), noise), -1)
        img = self.model(gen_input)
        img = img.view(img.size(0), *img_shape)
        return img


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.label_embedding = nn.Embedding(n_classes, n_classes)
        self.model = nn.Sequential(
            nn.Linear(n_classes + int(np.prod(img_shape)), 32),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(32, 32),
            nn.Dropout(0.4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(32, 1),
        )

    def forward(self, img, labels):
        d_in = torch.cat((img.view(img.size(0), -1), self.label_embedding(labels)), -1)
        validity = self.model(d_in)
        return validity


class Model(nn.Module):
    """eriklindernoren/PyTorch-GAN cgan: block() helper returning a list spliced with * into nn.Sequential,
    np.prod(img_shape), img.view(img.size(0), *img_shape), module-level Tensor = torch.FloatTensor alias used
    in forward as Variable(Tensor(n, 1).fill_(1.0), requires_grad=False), LongTensor(np.random...) replaced by
    LongTensor(list) of labels, MSE adversarial loss."""

    def __init__(self):
        super(Model, self).__init__()
        self.generator = Generator()
        self.discriminator = Discriminator()
        self.adversarial_loss = torch.nn.MSELoss()

    def forward(self, imgs, labels, z):
        batch_size = imgs.shape[0]
        valid = Variable(Tensor(batch_size, 1).fill_(1.0), requires_grad=False)
        fake = Variable(Tensor(batch_size, 1).fill_(0.0), requires_grad=False)
        real_imgs = Variable(imgs.type(Tensor))
        labels = Variable(labels.type(LongTensor))
        gen_labels = Variable(LongTensor([i % n_classes for i in range(batch_size)]))
        gen_imgs = self.generator(z, gen_labels)
        validity = self.discriminator(gen_imgs, gen_labels)
        g_loss = self.adversarial_loss(validity, valid)
        validity_real = self.discriminator(real_imgs, labels)
        d_real_loss = self.adversarial_loss(validity_real, valid)
        validity_fake = self.discriminator(gen_imgs.detach(), gen_labels)
        d_fake_loss = self.adversarial_loss(validity_fake, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        return gen_imgs, g_loss, d_loss


def make_inputs():
    return torch.randn(3, 1, 8, 8), torch.tensor([0, 2, 3]), torch.randn(3, latent_dim)
