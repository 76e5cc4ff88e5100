import math
from dataclasses import dataclass, field
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class mLSTMLayerConfig:
    embedding_dim: int = 16
    num_heads: int = 2
    proj_factor: float = 2.0
    conv1d_kernel_size: int = 4
    _num_blocks: int = field(default=1, repr=False)

    @property
    def inner_embedding_dim(self) -> int:
        return int(self.proj_factor * self.embedding_dim)


def parallel_stabilized_simple(queries, keys, values, igate_preact, fgate_preact, lower_triangular_matrix=None,
                               stabilize_rowwise=True, eps=1e-6):
    B, NH, S, DH = queries.shape
    _dtype, _device = queries.dtype, queries.device
    log_fgates = F.logsigmoid(fgate_preact)
    if lower_triangular_matrix is None or S < lower_triangular_matrix.size(-1):
        ltr = torch.tril(torch.ones((S, S), dtype=torch.bool, device=_device))
    else:
        ltr = lower_triangular_matrix
    assert ltr.dtype == torch.bool, f"lower_triangular_matrix must be of dtype bool, got {ltr.dtype}"
    log_fgates_cumsum = torch.cat([torch.zeros((B, NH, 1, 1), dtype=_dtype, device=_device),
                                   torch.cumsum(log_fgates, dim=-2)], dim=-2)
    rep_log_fgates_cumsum = log_fgates_cumsum.repeat(1, 1, 1, S + 1)
    _log_fg_matrix = rep_log_fgates_cumsum - rep_log_fgates_cumsum.transpose(-2, -1)
    log_fg_matrix = torch.where(ltr, _log_fg_matrix[:, :, 1:, 1:], -float("inf"))
    log_D_matrix = log_fg_matrix + igate_preact.transpose(-2, -1)
    if stabilize_rowwise:
        max_log_D, _ = torch.max(log_D_matrix, dim=-1, keepdim=True)
    else:
        max_log_D = torch.max(log_D_matrix.view(B, NH, -1), dim=-1, keepdim=True)[0].unsqueeze(-1)
    log_D_matrix_stabilized = log_D_matrix - max_log_D
    D_matrix = torch.exp(log_D_matrix_stabilized)
    keys_scaled = keys / math.sqrt(DH)
    qk_matrix = queries @ keys_scaled.transpose(-2, -1)
    C_matrix = qk_matrix * D_matrix
    normalizer = torch.maximum(C_matrix.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))
    C_matrix_normalized = C_matrix / (normalizer + eps)
    return C_matrix_normalized @ values


def recurrent_step_stabilized_simple(c_state, n_state, m_state, q, k, v, igate_preact, fgate_preact, eps=1e-6):
    B, NH, S, DH = q.shape
    q, k, v = q.squeeze_(2).unsqueeze(-1), k.squeeze_(2).unsqueeze(-1), v.squeeze_(2).unsqueeze(-1)
    log_fg_act = F.logsigmoid(fgate_preact)
    m_state_new = torch.max(log_fg_act + m_state, igate_preact)
    fg_act = torch.exp(log_fg_act + m_state - m_state_new)
    ig_act = torch.exp(igate_preact - m_state_new)
    k_scaled = k / math.sqrt(DH)
    c_state_new = fg_act * c_state + ig_act * (k_scaled @ v.transpose(-1, -2))
    n_state_new = fg_act * n_state + ig_act * k_scaled
    h_num = q.transpose(-1, -2) @ c_state_new
    qn_dotproduct = q.transpose(-1, -2) @ n_state_new
    max_val = torch.exp(-m_state_new)
    h_denom = torch.maximum(qn_dotproduct.abs(), max_val) + eps
    h = h_num / h_denom
    return h, (c_state_new, n_state_new, m_state_new)


class MultiHeadLayerNorm(nn.Module):
    def __init__(self, ndim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(ndim))
        self.eps = eps

    def forward(self, input):
        B, NH, S, DH = input.shape
        gn_in_1 = input.transpose(1, 2)
        gn_in_2 = gn_in_1.reshape(B * S, NH * DH)
        out = F.group_norm(gn_in_2, num_groups=NH, weight=1.0 + self.weight, bias=None, eps=self.eps)
        return out.view(B, S, NH, DH).transpose(1, 2)


class mLSTMCell(nn.Module):
    def __init__(self, config: mLSTMLayerConfig, context_length=16):
        super().__init__()
        self.config = config
        d = config.inner_embedding_dim
        self.igate = nn.Linear(3 * d, config.num_heads)
        self.fgate = nn.Linear(3 * d, config.num_heads)
        self.outnorm = MultiHeadLayerNorm(ndim=d)
        self.register_buffer("causal_mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)),
                             persistent=False)
        nn.init.zeros_(self.fgate.weight)
        with torch.no_grad():
            self.fgate.bias.copy_(torch.linspace(3.0, 6.0, config.num_heads))

    def forward(self, q, k, v):
        B, S, _ = q.shape
        if_gate_input = torch.cat([q, k, v], dim=-1)
        NH = self.config.num_heads
        q = q.view(B, S, NH, -1).transpose(1, 2)
        k = k.view(B, S, NH, -1).transpose(1, 2)
        v = v.view(B, S, NH, -1).transpose(1, 2)
        igate_preact = self.igate(if_gate_input).transpose(-1, -2).unsqueeze(-1)
        fgate_preact = self.fgate(if_gate_input).transpose(-1, -2).unsqueeze(-1)
        h_state = parallel_stabilized_simple(q, k, v, igate_preact, fgate_preact,
                                             lower_triangular_matrix=self.causal_mask[:S, :S])
        return self.outnorm(h_state).transpose(1, 2).reshape(B, S, -1)

    def step(self, q, k, v, mlstm_state: Optional[Tuple[torch.Tensor, ...]] = None):
        B, S, _ = q.shape
        assert S == 1, f"mLSTMCell.step only supports sequence length S=1, but got S={S}."
        if_gate_input = torch.cat([q, k, v], dim=-1)
        NH = self.config.num_heads
        q = q.view(B, S, NH, -1).transpose(1, 2)
        k = k.view(B, S, NH, -1).transpose(1, 2)
        v = v.view(B, S, NH, -1).transpose(1, 2)
        DH = q.shape[-1]
        igate_preact = self.igate(if_gate_input).transpose(-1, -2).unsqueeze(-1)
        fgate_preact = self.fgate(if_gate_input).transpose(-1, -2).unsqueeze(-1)
        if mlstm_state is None:
            c_state = torch.zeros(size=(B, NH, DH, DH), device=q.device, dtype=q.dtype)
            n_state = torch.zeros(size=(B, NH, DH, 1), device=q.device, dtype=q.dtype)
            m_state = torch.zeros(size=(B, NH, 1, 1), device=q.device, dtype=q.dtype)
        else:
            c_state, n_state, m_state = mlstm_state
        h_state, mlstm_state = recurrent_step_stabilized_simple(c_state, n_state, m_state, q, k, v, igate_preact, fgate_preact)
        h_state = h_state.reshape(B, NH, 1, DH)
        return self.outnorm(h_state).transpose(1, 2).reshape(B, S, -1), mlstm_state


class Model(nn.Module):
    """NX-AI xLSTM mLSTM layer: up-projection, causal conv, parallel stabilized cell and recurrent step path."""

    def __init__(self, config: mLSTMLayerConfig = mLSTMLayerConfig()):
        super().__init__()
        self.config = config
        d = config.inner_embedding_dim
        self.proj_up = nn.Linear(config.embedding_dim, 2 * d)
        self.conv1d = nn.Conv1d(d, d, config.conv1d_kernel_size, groups=d, padding=config.conv1d_kernel_size - 1)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.mlstm_cell = mLSTMCell(config)
        self.learnable_skip = nn.Parameter(torch.ones(d))
        self.proj_down = nn.Linear(d, config.embedding_dim)

    def forward(self, x):
        B, S, _ = x.shape
        x_inner = self.proj_up(x)
        x_mlstm, z = torch.split(x_inner, split_size_or_sections=self.config.inner_embedding_dim, dim=-1)
        x_mlstm_conv = self.conv1d(x_mlstm.transpose(1, 2))[..., :S].transpose(1, 2)
        x_mlstm_conv_act = F.silu(x_mlstm_conv)
        q, k, v = self.q_proj(x_mlstm_conv_act), self.k_proj(x_mlstm_conv_act), self.v_proj(x_mlstm)
        h_tilde_state = self.mlstm_cell(q=q, k=k, v=v)
        h_tilde_state_skip = h_tilde_state + (self.learnable_skip * x_mlstm_conv_act)
        y = self.proj_down(h_tilde_state_skip * F.silu(z))
        state = None
        steps = []
        for t in range(S):
            h, state = self.mlstm_cell.step(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], state)
            steps.append(h)
        return y, torch.cat(steps, dim=1)


def make_inputs():
    return (torch.randn(2, 6, 16),)
