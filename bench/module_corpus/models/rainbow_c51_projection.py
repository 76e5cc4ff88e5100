import math
import torch
from torch import nn
from torch.nn import functional as F


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, std_init=0.5):
        super(NoisyLinear, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.std_init = std_init
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.register_buffer('weight_epsilon', torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer('bias_epsilon', torch.empty(out_features))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self):
        mu_range = 1 / math.sqrt(self.in_features)
        self.weight_mu.data.uniform_(-mu_range, mu_range)
        self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
        self.bias_mu.data.uniform_(-mu_range, mu_range)
        self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

    def _scale_noise(self, size):
        x = torch.randn(size, device=self.weight_mu.device)
        return x.sign().mul_(x.abs().sqrt_())

    def reset_noise(self):
        epsilon_in = self._scale_noise(self.in_features)
        epsilon_out = self._scale_noise(self.out_features)
        self.weight_epsilon.copy_(epsilon_out.ger(epsilon_in))
        self.bias_epsilon.copy_(epsilon_out)

    def forward(self, input):
        if self.training:
            return F.linear(input, self.weight_mu + self.weight_sigma * self.weight_epsilon, self.bias_mu + self.bias_sigma * self.bias_epsilon)
        else:
            return F.linear(input, self.weight_mu, self.bias_mu)


class DQN(nn.Module):
    def __init__(self, atoms, action_space, hidden_size=16, obs=6):
        super(DQN, self).__init__()
        self.atoms = atoms
        self.action_space = action_space
        self.fc = nn.Linear(obs, hidden_size)
        self.fc_h_v = NoisyLinear(hidden_size, hidden_size)
        self.fc_h_a = NoisyLinear(hidden_size, hidden_size)
        self.fc_z_v = NoisyLinear(hidden_size, self.atoms)
        self.fc_z_a = NoisyLinear(hidden_size, action_space * self.atoms)

    def forward(self, x, log=False):
        x = F.relu(self.fc(x))
        v = self.fc_z_v(F.relu(self.fc_h_v(x)))
        a = self.fc_z_a(F.relu(self.fc_h_a(x)))
        v, a = v.view(-1, 1, self.atoms), a.view(-1, self.action_space, self.atoms)
        q = v + a - a.mean(1, keepdim=True)
        if log:
            q = F.log_softmax(q, dim=2)
        else:
            q = F.softmax(q, dim=2)
        return q


class Model(nn.Module):
    """Kaixhin/Rainbow learn(): C51 distributional Bellman projection with floor/ceil atoms, the 'disappearing mass' fix,
    offsets from linspace(...).unsqueeze(1).expand, index_add_ into a flat view, double-Q argmax over the target net."""

    def __init__(self, atoms=11, actions=3, V_min=-5.0, V_max=5.0, discount=0.9, n=3):
        super().__init__()
        self.atoms, self.action_space = atoms, actions
        self.Vmin, self.Vmax = V_min, V_max
        self.register_buffer('support', torch.linspace(V_min, V_max, atoms))
        self.delta_z = (V_max - V_min) / (atoms - 1)
        self.discount, self.n = discount, n
        self.online_net = DQN(atoms, actions)
        self.target_net = DQN(atoms, actions)
        self.target_net.load_state_dict(self.online_net.state_dict())
        for param in self.target_net.parameters():
            param.requires_grad = False

    def forward(self, states, actions, returns, next_states, nonterminals):
        batch_size = states.shape[0]
        log_ps = self.online_net(states, log=True)
        log_ps_a = log_ps[range(batch_size), actions]
        with torch.no_grad():
            pns = self.online_net(next_states)
            dns = self.support.expand_as(pns) * pns
            argmax_indices_ns = dns.sum(2).argmax(1)
            pns = self.target_net(next_states)
            pns_a = pns[range(batch_size), argmax_indices_ns]
            Tz = returns.unsqueeze(1) + nonterminals * (self.discount ** self.n) * self.support.unsqueeze(0)
            Tz = Tz.clamp(min=self.Vmin, max=self.Vmax)
            b = (Tz - self.Vmin) / self.delta_z
            l, u = b.floor().to(torch.int64), b.ceil().to(torch.int64)
            l[(u > 0) * (l == u)] -= 1
            u[(l < (self.atoms - 1)) * (l == u)] += 1
            m = states.new_zeros(batch_size, self.atoms)
            offset = torch.linspace(0, ((batch_size - 1) * self.atoms), batch_size).unsqueeze(1).expand(batch_size, self.atoms).to(actions)
            m.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u.float() - b)).view(-1))
            m.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l.float())).view(-1))
        loss = -torch.sum(m * log_ps_a, 1)
        return loss, m


def make_inputs():
    return (torch.randn(4, 6), torch.tensor([0, 2, 1, 1]), torch.tensor([1.0, -2.0, 5.0, 0.0]), torch.randn(4, 6),
            torch.tensor([[1.0], [1.0], [0.0], [1.0]]))
