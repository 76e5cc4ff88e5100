import enum
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, List, Optional
import torch
from torch import nn
from torch import Tensor
from torch.nn import functional as F


class LossType(enum.Enum):
    H = "H"  # Higgins et al.
    B = "B"  # Burgess et al.


class BaseVAE(nn.Module):
    def __init__(self) -> None:
        super(BaseVAE, self).__init__()

    def encode(self, input: Tensor) -> List[Tensor]:
        raise NotImplementedError

    def decode(self, input: Tensor) -> Any:
        raise NotImplementedError

    def sample(self, batch_size: int, current_device: int, **kwargs) -> Tensor:
        raise NotImplementedError

    def generate(self, x: Tensor, **kwargs) -> Tensor:
        raise NotImplementedError

    @abstractmethod
    def forward(self, *inputs: Tensor) -> Tensor:
        pass

    @abstractmethod
    def loss_function(self, *inputs: Any, **kwargs) -> Tensor:
        pass


@dataclass
class VAEStepOutput:
    recons: Tensor
    loss: Tensor
    reconstruction_loss: Tensor
    kld: Tensor
    extras: dict = field(default_factory=dict)
    loss_type: str = "B"


class BetaVAE(BaseVAE):
    """AntixK/PyTorch-VAE BetaVAE: forward returns [recons, input, mu, log_var]; loss_function(*args, **kwargs)
    unpacks positional results and reads M_N from kwargs; C_max / num_iter annealing in the 'B' loss; a class-level
    num_iter counter incremented in forward."""
    num_iter = 0

    def __init__(self, in_channels: int, latent_dim: int, hidden_dims: List = None, beta: int = 4, gamma: float = 1000.,
                 max_capacity: int = 25, Capacity_max_iter: int = 1e5, loss_type: str = "B", **kwargs) -> None:
        super(BetaVAE, self).__init__()
        self.latent_dim = latent_dim
        self.beta = beta
        self.gamma = gamma
        self.loss_type = LossType(loss_type)
        self.C_max = torch.Tensor([max_capacity])
        self.C_stop_iter = Capacity_max_iter
        modules = []
        if hidden_dims is None:
            hidden_dims = [8, 16]
        for h_dim in hidden_dims:
            modules.append(nn.Sequential(nn.Conv2d(in_channels, out_channels=h_dim, kernel_size=3, stride=2, padding=1),
                                         nn.BatchNorm2d(h_dim), nn.LeakyReLU()))
            in_channels = h_dim
        self.encoder = nn.Sequential(*modules)
        self.fc_mu = nn.Linear(hidden_dims[-1] * 4, latent_dim)
        self.fc_var = nn.Linear(hidden_dims[-1] * 4, latent_dim)
        modules = []
        self.decoder_input = nn.Linear(latent_dim, hidden_dims[-1] * 4)
        hidden_dims.reverse()
        for i in range(len(hidden_dims) - 1):
            modules.append(nn.Sequential(nn.ConvTranspose2d(hidden_dims[i], hidden_dims[i + 1], kernel_size=3, stride=2,
                                                            padding=1, output_padding=1),
                                         nn.BatchNorm2d(hidden_dims[i + 1]), nn.LeakyReLU()))
        self.decoder = nn.Sequential(*modules)
        self.final_layer = nn.Sequential(nn.ConvTranspose2d(hidden_dims[-1], hidden_dims[-1], kernel_size=3, stride=2, padding=1,
                                                            output_padding=1),
                                         nn.BatchNorm2d(hidden_dims[-1]), nn.LeakyReLU(),
                                         nn.Conv2d(hidden_dims[-1], out_channels=3, kernel_size=3, padding=1), nn.Tanh())
        self.hidden_dims = hidden_dims

    def encode(self, input: Tensor) -> List[Tensor]:
        result = self.encoder(input)
        result = torch.flatten(result, start_dim=1)
        mu = self.fc_mu(result)
        log_var = self.fc_var(result)
        return [mu, log_var]

    def decode(self, z: Tensor) -> Tensor:
        result = self.decoder_input(z)
        result = result.view(-1, self.hidden_dims[0], 2, 2)
        result = self.decoder(result)
        result = self.final_layer(result)
        return result

    def reparameterize(self, mu: Tensor, logvar: Tensor) -> Tensor:
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return eps * std + mu

    def forward(self, input: Tensor, **kwargs) -> List[Tensor]:
        mu, log_var = self.encode(input)
        z = self.reparameterize(mu, log_var)
        return [self.decode(z), input, mu, log_var]

    def loss_function(self, *args, **kwargs) -> dict:
        self.num_iter += 1
        recons = args[0]
        input = args[1]
        mu = args[2]
        log_var = args[3]
        kld_weight = kwargs["M_N"]
        recons_loss = F.mse_loss(recons, input)
        kld_loss = torch.mean(-0.5 * torch.sum(1 + log_var - mu ** 2 - log_var.exp(), dim=1), dim=0)
        if self.loss_type == LossType.H:
            loss = recons_loss + self.beta * kld_weight * kld_loss
        elif self.loss_type == LossType.B:
            self.C_max = self.C_max.to(input.device)
            C = torch.clamp(self.C_max / self.C_stop_iter * self.num_iter, 0, self.C_max.data[0])
            loss = recons_loss + self.gamma * kld_weight * (kld_loss - C).abs()
        else:
            raise ValueError("Undefined loss type.")
        return {"loss": loss, "Reconstruction_Loss": recons_loss, "KLD": kld_loss}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.vae_b = BetaVAE(3, 4, loss_type="B", Capacity_max_iter=10)
        self.vae_h = BetaVAE(3, 4, loss_type="H")

    def forward(self, real_img, m_n: float = 0.25):
        results = self.vae_b(real_img)
        train_loss = self.vae_b.loss_function(*results, M_N=m_n, optimizer_idx=0, batch_idx=0)
        results_h = self.vae_h.forward(real_img)
        loss_h = self.vae_h.loss_function(*results_h, **{"M_N": m_n})
        return VAEStepOutput(recons=results[0], loss=train_loss["loss"] + loss_h["loss"],
                             reconstruction_loss=train_loss["Reconstruction_Loss"], kld=loss_h["KLD"],
                             extras={k: v.detach() for k, v in train_loss.items()}, loss_type=self.vae_b.loss_type.value)


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
