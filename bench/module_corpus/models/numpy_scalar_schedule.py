import numpy as np
import torch
import torch.nn as nn


def make_beta_schedule(schedule, n_timestep, linear_start=1e-4, linear_end=2e-2):
    if schedule == "linear":
        betas = np.linspace(linear_start ** 0.5, linear_end ** 0.5, n_timestep, dtype=np.float64) ** 2
    elif schedule == "sqrt":
        betas = np.linspace(linear_start, linear_end, n_timestep, dtype=np.float64) ** 0.5
    else:
        raise ValueError(schedule)
    return betas


class Model(nn.Module):
    """DDPM/DDIM-style sampler whose per-step coefficients are numpy float64 scalars (np.sqrt on schedule entries)."""

    def __init__(self, timesteps=50, ddim_steps=4, eta=0.0):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.SiLU(), nn.Conv2d(8, 3, 3, padding=1))
        betas = make_beta_schedule("linear", timesteps)
        alphas = 1.0 - betas
        self.alphas_cumprod = np.cumprod(alphas, axis=0)
        self.alphas_cumprod_prev = np.append(1.0, self.alphas_cumprod[:-1])
        c = timesteps // ddim_steps
        self.ddim_timesteps = [int(t) for t in np.asarray(list(range(0, timesteps, c))) + 1]
        self.eta = eta
        self.num_timesteps = int(timesteps)

    def p_step(self, x, t: int, t_prev: int):
        a_t = self.alphas_cumprod[t]
        a_prev = self.alphas_cumprod[t_prev] if t_prev >= 0 else self.alphas_cumprod_prev[0]
        sigma_t = self.eta * np.sqrt((1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev))
        e_t = self.net(x) * float(t) / self.num_timesteps
        pred_x0 = (x - np.sqrt(1. - a_t) * e_t) / np.sqrt(a_t)
        dir_xt = np.sqrt(1. - a_prev - sigma_t ** 2) * e_t
        return np.sqrt(a_prev) * pred_x0 + dir_xt, pred_x0

    def forward(self, x):
        ts = np.flip(np.array(self.ddim_timesteps))
        preds = []
        for i, step in enumerate(ts):
            t_prev = int(ts[i + 1]) if i + 1 < len(ts) else -1
            x, x0 = self.p_step(x, int(step), t_prev)
            preds.append(x0)
        log_snr = float(np.log(self.alphas_cumprod[-1] / (1 - self.alphas_cumprod[-1])))
        return x, torch.stack(preds), log_snr


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
