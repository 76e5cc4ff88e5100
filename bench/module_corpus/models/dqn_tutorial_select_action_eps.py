import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH_SIZE = 4
GAMMA = 0.99
EPS_START = 0.9
EPS_END = 0.0
EPS_DECAY = 1e-3
steps_done = 100000


class DQN(nn.Module):
    def __init__(self, h, w, outputs):
        super(DQN, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=2)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, kernel_size=3, stride=2)
        self.bn2 = nn.BatchNorm2d(8)

        def conv2d_size_out(size, kernel_size=3, stride=2):
            return (size - (kernel_size - 1) - 1) // stride + 1
        convw = conv2d_size_out(conv2d_size_out(w))
        convh = conv2d_size_out(conv2d_size_out(h))
        linear_input_size = convw * convh * 8
        self.head = nn.Linear(linear_input_size, outputs)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.head(x.view(x.size(0), -1))


class Model(nn.Module):
    """PyTorch reinforcement_q_learning tutorial: select_action with a global steps_done counter, eps_threshold
    from math.exp decay and random.random(); optimize_model body (non_final_mask via map(lambda s: s is not None),
    torch.cat of non-None next states, gather of the taken actions, smooth_l1_loss)."""

    def __init__(self, n_actions=3):
        super(Model, self).__init__()
        self.policy_net = DQN(12, 12, n_actions)
        self.target_net = DQN(12, 12, n_actions)
        self.target_net.load_state_dict(self.policy_net.state_dict())
        self.n_actions = n_actions

    def select_action(self, state):
        global steps_done
        sample = random.random()
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                return self.policy_net(state).max(1)[1].view(1, 1)
        else:
            return torch.tensor([[random.randrange(self.n_actions)]], dtype=torch.long)

    def forward(self, state, states, actions, rewards, next_states):
        action = self.select_action(state)
        next_list = [next_states[i:i + 1] if i % 2 == 0 else None for i in range(next_states.size(0))]
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, next_list)), dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in next_list if s is not None])
        state_action_values = self.policy_net(states).gather(1, actions)
        next_state_values = torch.zeros(BATCH_SIZE)
        next_state_values[non_final_mask] = self.target_net(non_final_next_states).max(1)[0].detach()
        expected_state_action_values = (next_state_values * GAMMA) + rewards
        loss = F.smooth_l1_loss(state_action_values, expected_state_action_values.unsqueeze(1))
        return action, loss


def reset_globals():
    global steps_done
    steps_done = 100000


def make_inputs():
    return (torch.randn(1, 3, 12, 12), torch.randn(BATCH_SIZE, 3, 12, 12), torch.tensor([[0], [2], [1], [1]]),
            torch.randn(BATCH_SIZE), torch.randn(BATCH_SIZE, 3, 12, 12))
