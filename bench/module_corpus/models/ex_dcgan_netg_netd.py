import torch
import torch.nn as nn


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngpu, nz, ngf, nc):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu, ndf, nc):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class Model(nn.Module):
    """pytorch/examples dcgan: netG / netD with weights_init applied by class name, D(G(z)) and BCE on labels."""

    def __init__(self, nz=8, ngf=8, ndf=8, nc=3):
        super().__init__()
        self.netG = Generator(1, nz, ngf, nc)
        self.netG.apply(weights_init)
        self.netD = Discriminator(1, ndf, nc)
        self.netD.apply(weights_init)
        self.criterion = nn.BCELoss()
        self.real_label = 1
        self.fake_label = 0

    def forward(self, noise, real):
        batch_size = real.size(0)
        label = torch.full((batch_size,), self.real_label, dtype=real.dtype, device=real.device)
        output = self.netD(real)
        errD_real = self.criterion(output, label)
        D_x = output.mean()
        fake = self.netG(noise)
        label.fill_(self.fake_label)
        output = self.netD(fake.detach())
        errD_fake = self.criterion(output, label)
        errD = errD_real + errD_fake
        label.fill_(self.real_label)
        output = self.netD(fake)
        errG = self.criterion(output, label)
        return fake, errD, errG, D_x


def make_inputs():
    return torch.randn(2, 8, 1, 1), torch.randn(2, 3, 16, 16).tanh()
