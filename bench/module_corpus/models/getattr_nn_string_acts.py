import torch
import torch.nn as nn
import torch.nn.functional as F


def get_activation(name, **kwargs):
    if name is None or name.lower() in ("none", "identity", "linear"):
        return nn.Identity()
    name_map = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU", "swish": "SiLU", "leaky_relu": "LeakyReLU",
                "elu": "ELU", "mish": "Mish", "tanh": "Tanh"}
    cls_name = name_map.get(name.lower(), name)
    if not hasattr(nn, cls_name):
        raise ValueError(f"unknown activation {name}")
    return getattr(nn, cls_name)(**kwargs)


def get_norm(name, ch):
    if name == "bn":
        return nn.BatchNorm2d(ch)
    if name.startswith("gn"):
        return nn.GroupNorm(int(name[2:]), ch)
    return getattr(nn, name)(ch)


ACT2FN = {"relu": F.relu, "gelu": F.gelu, "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0)))),
          "swish": F.silu, "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x), "sigmoid": torch.sigmoid}


class ConvNormAct(nn.Module):
    def __init__(self, cin, cout, norm="bn", act="relu", act_kwargs=None):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=norm is None)
        self.norm = get_norm(norm, cout) if norm else nn.Identity()
        self.act = get_activation(act, **(act_kwargs or {}))

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class Model(nn.Module):
    """Layers built from string names with getattr(nn, ...), and the gating activation chosen by a string in forward."""

    def __init__(self, spec=(("bn", "relu", None), ("gn4", "leaky_relu", {"negative_slope": 0.2}),
                             ("InstanceNorm2d", "mish", None), (None, "swish", None)),
                 pool="AdaptiveAvgPool2d", hidden_act="gelu_new"):
        super().__init__()
        layers = []
        c = 3
        for norm, act, kw in spec:
            layers.append(ConvNormAct(c, 8, norm, act, kw))
            c = 8
        self.body = nn.Sequential(*layers)
        self.pool = getattr(nn, pool)(1)
        self.hidden_act = hidden_act
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.loss_name = "CrossEntropyLoss"
        self.criterion = getattr(nn, self.loss_name)(reduction="none")

    def forward(self, x, target, gate_act: str = "sigmoid"):
        h = self.pool(self.body(x)).flatten(1)
        act_fn = ACT2FN[self.hidden_act]
        h = act_fn(self.fc1(h))
        gate = getattr(torch, gate_act)(h) if hasattr(torch, gate_act) else ACT2FN[gate_act](h)
        logits = self.fc2(h * gate)
        fn = getattr(F, "log_softmax")
        return fn(logits, dim=-1), self.criterion(logits, target)


def make_inputs():
    return (torch.randn(2, 3, 8, 8), torch.tensor([1, 3])), {"gate_act": "tanh"}


def make_inputs_seq():
    x, t = torch.randn(2, 3, 8, 8), torch.tensor([1, 3])
    return [((x, t), {"gate_act": "tanh"}), ((x, t), {}), ((x, t), {"gate_act": "quick_gelu"})]
