from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])
eps = np.finfo(np.float32).eps.item()


class Policy(nn.Module):
    """pytorch/examples reinforcement_learning actor_critic: shared affine layer, action_head / value_head,
    saved_actions and rewards Python lists kept on the module, SavedAction namedtuple."""

    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 16)
        self.action_head = nn.Linear(16, 2)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


class Model(nn.Module):
    """select_action (greedy in eval: m.probs.argmax instead of m.sample()) for each state of an episode,
    then finish_episode: returns built with `for r in rewards[::-1]: R = r + gamma * R; returns.insert(0, R)`,
    torch.tensor(returns) standardised with numpy eps, policy / value losses from the saved namedtuples,
    torch.stack(...).sum(), del the lists in place."""

    def __init__(self, gamma=0.99):
        super(Model, self).__init__()
        self.policy = Policy()
        self.gamma = gamma

    def select_action(self, state):
        probs, state_value = self.policy(state.unsqueeze(0))
        m = Categorical(probs)
        action = m.sample() if self.training else m.probs.argmax(-1)
        self.policy.saved_actions.append(SavedAction(m.log_prob(action), state_value))
        return action.item()

    def finish_episode(self):
        R = 0
        saved_actions = self.policy.saved_actions
        policy_losses = []
        value_losses = []
        returns = []
        for r in self.policy.rewards[::-1]:
            R = r + self.gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for (log_prob, value), R in zip(saved_actions, returns):
            advantage = R - value.item()
            policy_losses.append(-log_prob * advantage)
            value_losses.append(F.smooth_l1_loss(value, torch.tensor([[R]])))
        loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
        del self.policy.rewards[:]
        del self.policy.saved_actions[:]
        return loss

    def forward(self, states, rewards):
        actions = []
        for t in range(states.size(0)):
            action = self.select_action(states[t])
            actions.append(action)
            self.policy.rewards.append(rewards[t])
        loss = self.finish_episode()
        return loss, actions


def make_inputs():
    return torch.randn(5, 4), [1.0, 1.0, 0.0, 1.0, -1.0]
