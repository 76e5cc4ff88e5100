import torch
import torch.nn as nn
import torch.nn.functional as F


class SwitchFeedForward(nn.Module):
    """labml.ai Switch Transformer routing: capacity factor, token dropping, index_select dispatch."""

    def __init__(self, *, capacity_factor: float, drop_tokens: bool, is_scale_prob: bool, n_experts: int,
                 expert: nn.Module, d_model: int):
        super().__init__()
        self.capacity_factor = capacity_factor
        self.is_scale_prob = is_scale_prob
        self.n_experts = n_experts
        self.drop_tokens = drop_tokens
        self.experts = nn.ModuleList([self._clone(expert) for _ in range(n_experts)])
        self.switch = nn.Linear(d_model, n_experts)
        self.softmax = nn.Softmax(dim=-1)

    @staticmethod
    def _clone(module):
        import copy
        m = copy.deepcopy(module)
        for p in m.parameters():
            nn.init.normal_(p, std=0.3)
        return m

    def forward(self, x: torch.Tensor):
        seq_len, batch_size, d_model = x.shape
        x = x.view(-1, d_model)
        route_prob = self.softmax(self.switch(x))
        route_prob_max, routes = torch.max(route_prob, dim=-1)
        indexes_list = [torch.eq(routes, i).nonzero(as_tuple=True)[0] for i in range(self.n_experts)]
        final_output = x.new_zeros(x.shape)
        capacity = int(self.capacity_factor * len(x) / self.n_experts)
        counts = x.new_tensor([len(indexes_list[i]) for i in range(self.n_experts)])
        dropped = []
        if self.drop_tokens:
            for i in range(self.n_experts):
                if len(indexes_list[i]) <= capacity:
                    continue
                indexes_list[i] = indexes_list[i][torch.arange(len(indexes_list[i]))]  # no shuffle: deterministic
                dropped.append(indexes_list[i][capacity:])
                indexes_list[i] = indexes_list[i][:capacity]
        expert_output = [self.experts[i](x[indexes_list[i], :]) for i in range(self.n_experts)]
        for i in range(self.n_experts):
            final_output[indexes_list[i], :] = expert_output[i]
        if dropped:
            dropped = torch.cat(dropped)
            final_output[dropped, :] = x[dropped, :]
        if self.is_scale_prob:
            final_output = final_output * route_prob_max.view(-1, 1)
        else:
            final_output = final_output * (route_prob_max / route_prob_max.detach()).view(-1, 1)
        final_output = final_output.view(seq_len, batch_size, d_model)
        return final_output, counts, route_prob.sum(0), len(dropped), route_prob_max


class Model(nn.Module):
    def __init__(self, d_model=8, n_experts=3):
        super().__init__()
        ffn = nn.Sequential(nn.Linear(d_model, 16), nn.ReLU(), nn.Linear(16, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.ff = SwitchFeedForward(capacity_factor=1.0, drop_tokens=True, is_scale_prob=True, n_experts=n_experts,
                                    expert=ffn, d_model=d_model)

    def forward(self, x):
        z, counts, route_prob, n_dropped, route_prob_max = self.ff(self.norm(x))
        load_balancing_loss = self.ff.n_experts * (counts / counts.sum() * route_prob / route_prob.sum()).sum()
        return x + z, load_balancing_loss, n_dropped


def make_inputs():
    return (torch.randn(6, 2, 8),)
