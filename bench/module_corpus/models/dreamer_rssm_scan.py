import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import distributions as torchd


def static_scan(fn, inputs, start):
    """DreamerV2/V3 tools.static_scan: scan over time with nested dict carry; uses lambdas and flatten tricks."""
    last = start
    indices = range(inputs[0].shape[0])
    flag = True
    for index in indices:
        inp = lambda x: (_input[x] for _input in inputs)
        last = fn(last, *inp(index))
        if flag:
            if type(last) == type({}):
                outputs = {key: value.clone().unsqueeze(0) for key, value in last.items()}
            else:
                outputs = []
                for _last in last:
                    if type(_last) == type({}):
                        outputs.append({key: value.clone().unsqueeze(0) for key, value in _last.items()})
                    else:
                        outputs.append(_last.clone().unsqueeze(0))
            flag = False
        else:
            if type(last) == type({}):
                for key in last.keys():
                    outputs[key] = torch.cat([outputs[key], last[key].unsqueeze(0)], dim=0)
            else:
                for j in range(len(outputs)):
                    if type(last[j]) == type({}):
                        for key in last[j].keys():
                            outputs[j][key] = torch.cat([outputs[j][key], last[j][key].unsqueeze(0)], dim=0)
                    else:
                        outputs[j] = torch.cat([outputs[j], last[j].unsqueeze(0)], dim=0)
    if type(last) == type({}):
        outputs = [outputs]
    return outputs


class RSSM(nn.Module):
    def __init__(self, stoch=4, deter=16, hidden=16, embed=8, num_actions=3, discrete=4, unimix_ratio=0.01):
        super().__init__()
        self._stoch, self._deter, self._discrete = stoch, deter, discrete
        self._unimix_ratio = unimix_ratio
        self._img_in_layers = nn.Sequential(nn.Linear(stoch * discrete + num_actions, hidden), nn.SiLU())
        self._cell = nn.GRUCell(hidden, deter)
        self._img_out_layers = nn.Sequential(nn.Linear(deter, hidden), nn.SiLU())
        self._obs_out_layers = nn.Sequential(nn.Linear(deter + embed, hidden), nn.SiLU())
        self._imgs_stat_layer = nn.Linear(hidden, stoch * discrete)
        self._obs_stat_layer = nn.Linear(hidden, stoch * discrete)

    def initial(self, batch_size):
        deter = torch.zeros(batch_size, self._deter)
        state = dict(logit=torch.zeros([batch_size, self._stoch, self._discrete]),
                     stoch=torch.zeros([batch_size, self._stoch, self._discrete]), deter=deter)
        return state

    def get_feat(self, state):
        stoch = state["stoch"]
        shape = list(stoch.shape[:-2]) + [self._stoch * self._discrete]
        stoch = stoch.reshape(shape)
        return torch.cat([stoch, state["deter"]], -1)

    def get_dist(self, state):
        logit = state["logit"]
        return torchd.independent.Independent(torchd.one_hot_categorical.OneHotCategoricalStraightThrough(logits=logit), 1)

    def _suff_stats_layer(self, name, x):
        if name == "ims":
            x = self._imgs_stat_layer(x)
        elif name == "obs":
            x = self._obs_stat_layer(x)
        logit = x.reshape(list(x.shape[:-1]) + [self._stoch, self._discrete])
        if self._unimix_ratio > 0.0:
            probs = F.softmax(logit, -1)
            probs = probs * (1.0 - self._unimix_ratio) + self._unimix_ratio / self._discrete
            logit = torch.log(probs)
        return {"logit": logit}

    def img_step(self, prev_state, prev_action):
        prev_stoch = prev_state["stoch"]
        shape = list(prev_stoch.shape[:-2]) + [self._stoch * self._discrete]
        prev_stoch = prev_stoch.reshape(shape)
        x = torch.cat([prev_stoch, prev_action], -1)
        x = self._img_in_layers(x)
        deter = self._cell(x, prev_state["deter"])
        x = self._img_out_layers(deter)
        stats = self._suff_stats_layer("ims", x)
        stoch = self.get_dist(stats).mode
        return {"stoch": stoch, "deter": deter, **stats}

    def obs_step(self, prev_state, prev_action, embed, is_first):
        prior = self.img_step(prev_state, prev_action)
        x = torch.cat([prior["deter"], embed], -1)
        x = self._obs_out_layers(x)
        stats = self._suff_stats_layer("obs", x)
        stoch = self.get_dist(stats).mode
        post = {"stoch": stoch, "deter": prior["deter"], **stats}
        return post, prior

    def observe(self, embed, action, is_first, state=None):
        swap = lambda x: x.permute([1, 0] + list(range(2, len(x.shape))))
        embed, action, is_first = swap(embed), swap(action), swap(is_first)
        if state is None:
            state = self.initial(action.shape[1])
        post, prior = static_scan(lambda prev_state, prev_act, embed, is_first: self.obs_step(prev_state[0], prev_act, embed, is_first),
                                  (action, embed, is_first), (state, state))
        post = {k: swap(v) for k, v in post.items()}
        prior = {k: swap(v) for k, v in prior.items()}
        return post, prior


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(6, 8)
        self.dynamics = RSSM()
        self.reward = nn.Linear(4 * 4 + 16, 1)

    def forward(self, obs, action, is_first):
        embed = self.encoder(obs)
        post, prior = self.dynamics.observe(embed, action, is_first)
        feat = self.dynamics.get_feat(post)
        kl = torchd.kl_divergence(self.dynamics.get_dist(post), self.dynamics.get_dist({k: v.detach() for k, v in prior.items()}))
        return self.reward(feat).squeeze(-1), kl, post["stoch"]


def make_inputs():
    return torch.randn(2, 4, 6), F.one_hot(torch.randint(0, 3, (2, 4)), 3).float(), torch.zeros(2, 4)
