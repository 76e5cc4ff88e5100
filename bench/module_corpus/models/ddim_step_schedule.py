import math
import numpy as np
import torch
import torch.nn as nn


def betas_for_alpha_bar(num_diffusion_timesteps, alpha_bar, max_beta=0.999):
    betas = []
    for i in range(num_diffusion_timesteps):
        t1 = i / num_diffusion_timesteps
        t2 = (i + 1) / num_diffusion_timesteps
        betas.append(min(1 - alpha_bar(t2) / alpha_bar(t1), max_beta))
    return np.array(betas, dtype=np.float64)


class TinyEps(nn.Module):
    def __init__(self, ch=3, hidden=8):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(ch + 1, hidden, 3, padding=1), nn.SiLU(), nn.Conv2d(hidden, ch, 3, padding=1))

    def forward(self, x, t):
        tt = torch.full_like(x[:, :1], float(t) / 1000.0)
        return self.net(torch.cat([x, tt], 1))


class Model(nn.Module):
    """DDIM sampler unrolled in forward: timesteps and alphas are python ints/floats (schedule .tolist()'d from numpy)."""

    def __init__(self, num_train_timesteps=1000, num_inference_steps=4, eta=0.0):
        super().__init__()
        self.eps_model = TinyEps()
        betas = betas_for_alpha_bar(num_train_timesteps, lambda t: math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2)
        self.alphas_cumprod = np.cumprod(1.0 - betas, axis=0).tolist()  # python floats
        self.final_alpha_cumprod = 1.0
        step_ratio = num_train_timesteps // num_inference_steps
        self.timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].astype(np.int64).tolist()
        self.step_ratio = step_ratio
        self.eta = eta
        self.clip_sample = True

    def _get_variance(self, timestep, prev_timestep):
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev
        return (beta_prod_t_prev / beta_prod_t) * (1 - alpha_prod_t / alpha_prod_t_prev)

    def step(self, model_output, timestep: int, sample):
        prev_timestep = timestep - self.step_ratio
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        pred_original_sample = (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
        if self.clip_sample:
            pred_original_sample = pred_original_sample.clamp(-1.0, 1.0)
        variance = self._get_variance(timestep, prev_timestep)
        std_dev_t = self.eta * variance ** 0.5
        pred_sample_direction = (1 - alpha_prod_t_prev - std_dev_t ** 2) ** 0.5 * model_output
        prev_sample = alpha_prod_t_prev ** 0.5 * pred_original_sample + pred_sample_direction
        return prev_sample, pred_original_sample

    def forward(self, latents):
        x0s = []
        for t in self.timesteps:
            eps = self.eps_model(latents, t)
            latents, x0 = self.step(eps, t, latents)
            x0s.append(x0)
        return latents, torch.stack(x0s, 1)


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
