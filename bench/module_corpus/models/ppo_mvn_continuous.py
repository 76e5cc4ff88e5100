import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, Categorical, Independent, Normal

device = torch.device('cpu')


class RolloutBuffer:
    def __init__(self):
        self.actions = []
        self.states = []
        self.logprobs = []
        self.rewards = []
        self.state_values = []
        self.is_terminals = []

    def clear(self):
        del self.actions[:]
        del self.states[:]
        del self.logprobs[:]
        del self.rewards[:]
        del self.state_values[:]
        del self.is_terminals[:]


class ActorCritic(nn.Module):
    def __init__(self, state_dim, action_dim, has_continuous_action_space, action_std_init):
        super(ActorCritic, self).__init__()
        self.has_continuous_action_space = has_continuous_action_space
        if has_continuous_action_space:
            self.action_dim = action_dim
            self.action_var = torch.full((action_dim,), action_std_init * action_std_init).to(device)
        if has_continuous_action_space:
            self.actor = nn.Sequential(nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, action_dim), nn.Tanh())
        else:
            self.actor = nn.Sequential(nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, action_dim), nn.Softmax(dim=-1))
        self.critic = nn.Sequential(nn.Linear(state_dim, 16), nn.Tanh(), nn.Linear(16, 1))

    def set_action_std(self, new_action_std):
        if self.has_continuous_action_space:
            self.action_var = torch.full((self.action_dim,), new_action_std * new_action_std).to(device)

    def forward(self):
        raise NotImplementedError

    def evaluate(self, state, action):
        if self.has_continuous_action_space:
            action_mean = self.actor(state)
            action_var = self.action_var.expand_as(action_mean)
            cov_mat = torch.diag_embed(action_var).to(device)
            dist = MultivariateNormal(action_mean, cov_mat)
            if self.action_dim == 1:
                action = action.reshape(-1, self.action_dim)
        else:
            action_probs = self.actor(state)
            dist = Categorical(action_probs)
        action_logprobs = dist.log_prob(action)
        dist_entropy = dist.entropy()
        state_values = self.critic(state)
        return action_logprobs, state_values, dist_entropy


class Model(nn.Module):
    """nikhilbarhate99/PPO-PyTorch update(): MultivariateNormal with diag_embed covariance (cholesky inside), a plain
    python rollout buffer, discounted returns computed with reversed(zip(...)), clipped surrogate loss; also an
    Independent(Normal) and a Categorical head."""

    def __init__(self, state_dim=5, action_dim=2, gamma=0.9, eps_clip=0.2):
        super().__init__()
        self.gamma = gamma
        self.eps_clip = eps_clip
        self.policy = ActorCritic(state_dim, action_dim, True, 0.6)
        self.policy_disc = ActorCritic(state_dim, 3, False, 0.6)
        self.buffer = RolloutBuffer()
        self.MseLoss = nn.MSELoss()

    def forward(self, states, actions, disc_actions, old_logprobs, rewards, terminals):
        self.buffer.clear()
        self.buffer.rewards.extend(rewards.tolist())
        self.buffer.is_terminals.extend(terminals.tolist())
        returns = []
        discounted_reward = 0
        for reward, is_terminal in zip(reversed(self.buffer.rewards), reversed(self.buffer.is_terminals)):
            if is_terminal:
                discounted_reward = 0
            discounted_reward = reward + (self.gamma * discounted_reward)
            returns.insert(0, discounted_reward)
        returns = torch.tensor(returns, dtype=torch.float32).to(device)
        returns = (returns - returns.mean()) / (returns.std() + 1e-7)
        logprobs, state_values, dist_entropy = self.policy.evaluate(states, actions)
        state_values = torch.squeeze(state_values)
        ratios = torch.exp(logprobs - old_logprobs.detach())
        advantages = returns - state_values.detach()
        surr1 = ratios * advantages
        surr2 = torch.clamp(ratios, 1 - self.eps_clip, 1 + self.eps_clip) * advantages
        loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, returns) - 0.01 * dist_entropy
        lp_d, _, ent_d = self.policy_disc.evaluate(states, disc_actions)
        ind = Independent(Normal(self.policy.actor(states), 0.5), 1)
        return loss.mean(), lp_d + ent_d, ind.log_prob(actions)


def make_inputs():
    return (torch.randn(6, 5), torch.randn(6, 2), torch.tensor([0, 1, 2, 2, 1, 0]), torch.randn(6) - 2,
            torch.tensor([1.0, 0.0, 0.5, 1.0, 2.0, 0.0]), torch.tensor([False, False, True, False, False, True]))
