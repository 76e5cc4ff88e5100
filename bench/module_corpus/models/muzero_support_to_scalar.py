import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def support_to_scalar(logits, support_size):
    """Transform a categorical representation to a scalar (werner-duvaud muzero-general)."""
    probabilities = torch.softmax(logits, dim=1)
    support = torch.tensor([x for x in range(-support_size, support_size + 1)]).expand(probabilities.shape).float().to(
        device=probabilities.device)
    x = torch.sum(support * probabilities, dim=1, keepdim=True)
    x = torch.sign(x) * (((torch.sqrt(1 + 4 * 0.001 * (torch.abs(x) + 1 + 0.001)) - 1) / (2 * 0.001)) ** 2 - 1)
    return x


def scalar_to_support(x, support_size):
    x = torch.sign(x) * (torch.sqrt(torch.abs(x) + 1) - 1) + 0.001 * x
    x = torch.clamp(x, -support_size, support_size)
    floor = x.floor()
    prob = x - floor
    logits = torch.zeros(x.shape[0], x.shape[1], 2 * support_size + 1).to(x.device)
    logits.scatter_(2, (floor + support_size).long().unsqueeze(-1), (1 - prob).unsqueeze(-1))
    indexes = floor + support_size + 1
    prob = prob.masked_fill_(2 * support_size < indexes, 0.0)
    indexes = indexes.masked_fill_(2 * support_size < indexes, 0.0)
    logits.scatter_(2, indexes.long().unsqueeze(-1), prob.unsqueeze(-1))
    return logits


def dict_to_cpu(dictionary):
    cpu_dict = {}
    for key, value in dictionary.items():
        if isinstance(value, torch.Tensor):
            cpu_dict[key] = value.cpu()
        elif isinstance(value, dict):
            cpu_dict[key] = dict_to_cpu(value)
        else:
            cpu_dict[key] = value
    return cpu_dict


def mlp(input_size, layer_sizes, output_size, output_activation=nn.Identity, activation=nn.ELU):
    sizes = [input_size] + layer_sizes + [output_size]
    layers = []
    for i in range(len(sizes) - 1):
        act = activation if i < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[i], sizes[i + 1]), act()]
    return nn.Sequential(*layers)


class AbstractNetwork(nn.Module):
    def get_weights(self):
        return dict_to_cpu(self.state_dict())


class Model(AbstractNetwork):
    """MuZeroFullyConnectedNetwork: representation/dynamics/prediction, min-max normalised hidden states,
    one-hot action via scatter_, initial_inference returns a zero reward logits built with scalar_to_support."""

    def __init__(self, observation_shape=(1, 1, 6), stacked_observations=0, action_space_size=3, encoding_size=8,
                 support_size=5):
        super().__init__()
        self.action_space_size = action_space_size
        self.full_support_size = 2 * support_size + 1
        self.support_size = support_size
        obs_dim = observation_shape[0] * observation_shape[1] * observation_shape[2] * (stacked_observations + 1) + \
            stacked_observations * observation_shape[1] * observation_shape[2]
        self.representation_network = mlp(obs_dim, [16], encoding_size)
        self.dynamics_encoded_state_network = mlp(encoding_size + self.action_space_size, [16], encoding_size)
        self.dynamics_reward_network = mlp(encoding_size, [16], self.full_support_size)
        self.prediction_policy_network = mlp(encoding_size, [], self.action_space_size)
        self.prediction_value_network = mlp(encoding_size, [], self.full_support_size)

    def prediction(self, encoded_state):
        return self.prediction_policy_network(encoded_state), self.prediction_value_network(encoded_state)

    def _scale(self, encoded_state):
        min_encoded_state = encoded_state.min(1, keepdim=True)[0]
        max_encoded_state = encoded_state.max(1, keepdim=True)[0]
        scale_encoded_state = max_encoded_state - min_encoded_state
        scale_encoded_state[scale_encoded_state < 1e-5] += 1e-5
        return (encoded_state - min_encoded_state) / scale_encoded_state

    def representation(self, observation):
        encoded_state = self.representation_network(observation.view(observation.shape[0], -1))
        return self._scale(encoded_state)

    def dynamics(self, encoded_state, action):
        action_one_hot = torch.zeros((action.shape[0], self.action_space_size)).to(action.device).float()
        action_one_hot.scatter_(1, action.long(), 1.0)
        x = torch.cat((encoded_state, action_one_hot), dim=1)
        next_encoded_state = self.dynamics_encoded_state_network(x)
        reward = self.dynamics_reward_network(next_encoded_state)
        return self._scale(next_encoded_state), reward

    def initial_inference(self, observation):
        encoded_state = self.representation(observation)
        policy_logits, value = self.prediction(encoded_state)
        reward = torch.log(scalar_to_support(torch.zeros(1, len(observation)), self.support_size).squeeze(0).clamp_min(1e-12))
        return value, reward, policy_logits, encoded_state

    def recurrent_inference(self, encoded_state, action):
        next_encoded_state, reward = self.dynamics(encoded_state, action)
        policy_logits, value = self.prediction(next_encoded_state)
        return value, reward, policy_logits, next_encoded_state

    def forward(self, observation, actions):
        value, reward, policy_logits, hidden = self.initial_inference(observation)
        values = [support_to_scalar(value, self.support_size)]
        rewards = [support_to_scalar(reward, self.support_size)]
        for i in range(actions.shape[1]):
            value, reward, policy_logits, hidden = self.recurrent_inference(hidden, actions[:, i].unsqueeze(-1))
            values.append(support_to_scalar(value, self.support_size))
            rewards.append(support_to_scalar(reward, self.support_size))
        target = scalar_to_support(torch.cat(values, 1), self.support_size)
        return torch.cat(values, 1), torch.cat(rewards, 1), target


def make_inputs():
    return torch.randn(3, 1, 1, 6), torch.randint(0, 3, (3, 4))
