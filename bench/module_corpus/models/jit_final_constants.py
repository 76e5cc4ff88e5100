from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class ConvBNAct(nn.Module):
    __constants__ = ["use_act", "stride", "groups"]
    use_act: torch.jit.Final[bool]

    def __init__(self, c_in: int, c_out: int, k: int = 3, stride: int = 1, groups: int = 1, use_act: bool = True):
        super().__init__()
        self.stride = stride
        self.groups = groups
        self.use_act = use_act
        self.conv = nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x: Tensor) -> Tensor:
        x = self.bn(self.conv(x))
        if self.use_act:
            x = F.hardswish(x)
        return x


class InvertedResidual(nn.Module):
    __constants__ = ["use_res_connect"]
    use_res_connect: torch.jit.Final[bool]
    expand: torch.jit.Final[int]

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        if stride not in [1, 2]:
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        self.expand = expand_ratio
        layers: List[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNAct(inp, hidden_dim, k=1))
        layers.extend([ConvBNAct(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                       ConvBNAct(hidden_dim, oup, k=1, use_act=False)])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class Model(nn.Module):
    """torchvision/timm-style scripting annotations: __constants__, torch.jit.Final class annotations,
    @torch.jit.unused / @torch.jit.ignore helpers, Optional/Dict typing, torch.jit.annotate."""

    __constants__ = ["num_features"]
    num_features: torch.jit.Final[int]

    def __init__(self, settings=((1, 8, 1, 1), (4, 12, 2, 2), (4, 12, 1, 1)), num_classes: int = 5):
        super().__init__()
        layers: List[nn.Module] = [ConvBNAct(3, 8, stride=2)]
        c_in = 8
        for t, c, n, s in settings:
            for i in range(n):
                layers.append(InvertedResidual(c_in, c, s if i == 0 else 1, t))
                c_in = c
        self.features = nn.Sequential(*layers)
        self.num_features = c_in
        self.classifier = nn.Linear(c_in, num_classes)
        self.grad_checkpointing = False

    @torch.jit.ignore
    def group_matcher(self, coarse: bool = False) -> Dict[str, str]:
        return dict(stem=r"^features\.0", blocks=r"^features\.(\d+)")

    @torch.jit.unused
    def forward_with_aux(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        f = self.features(x)
        return f, f.mean((2, 3))

    def forward_features(self, x: Tensor) -> Tensor:
        return self.features(x)

    def forward(self, x: Tensor, pre_logits: bool = False, extra: Optional[Tensor] = None) -> Dict[str, Tensor]:
        feats = torch.jit.annotate(List[Tensor], [])
        for blk in self.features:
            x = blk(x)
            if isinstance(blk, InvertedResidual) and blk.use_res_connect:
                feats.append(x)
        pooled = x.mean((2, 3))
        assert pooled.shape[-1] == self.num_features
        out: Dict[str, Tensor] = {"pooled": pooled}
        if extra is not None:
            pooled = pooled + extra
        if not pre_logits:
            out["logits"] = self.classifier(pooled)
        out["n_res"] = torch.tensor(len(feats))
        return out


def make_inputs():
    return (torch.randn(2, 3, 16, 16),), {"extra": torch.randn(2, 12)}
