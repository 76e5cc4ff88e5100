from typing import Dict, List, Optional, Tuple
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class FeaturePyramid(nn.Module):
    """torchvision-ops style module written to be scriptable: torch.jit.Final constants, torch.jit.annotate containers,
    @torch.jit.unused / @torch.jit.ignore / @torch.jit.export methods, torch.jit.is_scripting/is_tracing branches."""

    __constants__ = ["extra_blocks"]
    num_levels: torch.jit.Final[int]

    def __init__(self, in_channels_list: List[int], out_channels: int):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.num_levels = len(in_channels_list)

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.inner_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.inner_blocks):
            if i == idx:
                out = module(x)
        return out

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.layer_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.layer_blocks):
            if i == idx:
                out = module(x)
        return out

    @torch.jit.unused
    def eager_outputs(self, names: List[str], results: List[Tensor]) -> Dict[str, Tensor]:
        return dict(zip(names, results))

    @torch.jit.ignore
    def _debug_shapes(self, results: List[Tensor]) -> List[Tuple[int, ...]]:
        return [tuple(r.shape) for r in results]

    @torch.jit.export
    def level_names(self) -> List[str]:
        return ["p%d" % (i + 2) for i in range(self.num_levels)]

    def forward(self, x: Dict[str, Tensor]) -> Dict[str, Tensor]:
        names = list(x.keys())
        feats = list(x.values())
        last_inner = self.get_result_from_inner_blocks(feats[-1], -1)
        results = torch.jit.annotate(List[Tensor], [])
        results.append(self.get_result_from_layer_blocks(last_inner, -1))
        for idx in range(len(feats) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(feats[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        sizes: Optional[List[int]] = None
        if not torch.jit.is_scripting() and not torch.jit.is_tracing():
            sizes = [r.shape[-1] for r in results]
        assert sizes is None or len(sizes) == self.num_levels
        if torch.jit.is_scripting():
            out = torch.jit.annotate(Dict[str, Tensor], {})
            for n, r in zip(names, results):
                out[n] = r
            return out
        return self.eager_outputs(self.level_names(), results)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.ModuleList([nn.Conv2d(3, 4, 3, 2, 1), nn.Conv2d(4, 8, 3, 2, 1), nn.Conv2d(8, 8, 3, 2, 1)])
        self.fpn = FeaturePyramid([4, 8, 8], 6)

    def forward(self, x):
        feats = torch.jit.annotate(Dict[str, Tensor], {})
        for i, m in enumerate(self.body):
            x = F.relu(m(x))
            feats[str(i)] = x
        return self.fpn(feats)


def make_inputs():
    return (torch.randn(1, 3, 16, 16),)
