from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Final, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union, cast, overload
import torch
import torch.nn as nn
from torch import Tensor

if TYPE_CHECKING:
    from collections.abc import Iterator

T = TypeVar("T")
MAX_LEN: Final = 16


class EncoderOutput(NamedTuple):
    last_hidden: Tensor
    pooled: Optional[Tensor] = None
    all_hidden: Optional[Tuple[Tensor, ...]] = None


def _pair(v: Union[int, Tuple[int, int]]) -> Tuple[int, int]:
    if isinstance(v, tuple):
        assert len(v) == 2, f"expected a pair, got {v!r}"
        return v
    return (v, v)


def first(seq: Sequence[T]) -> T:
    return seq[0]


class Encoder(nn.Module):
    layers: nn.ModuleList
    pool_fn: Optional[Callable[[Tensor], Tensor]]

    def __init__(self, dim: int, depth: int, pool: Optional[str] = "mean") -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.pool_fn = {"mean": lambda t: t.mean(1), "first": lambda t: t[:, 0], None: None}[pool]

    @overload
    def forward(self, x: Tensor, return_all: bool = ...) -> EncoderOutput: ...

    @overload
    def forward(self, x: List[Tensor], return_all: bool = ...) -> EncoderOutput: ...

    def forward(self, x: Union[Tensor, List[Tensor]], return_all: bool = False) -> EncoderOutput:
        if isinstance(x, list):
            x = torch.stack(x, dim=1)
        assert isinstance(x, Tensor), type(x)
        assert x.dim() == 3, f"expected (B, N, C), got {tuple(x.shape)}"
        assert x.shape[1] <= MAX_LEN
        hidden: List[Tensor] = []
        h: Tensor = x
        for layer in self.layers:
            h = torch.tanh(cast(nn.Linear, layer)(h))
            if return_all:
                hidden.append(h)
        pooled: Optional[Tensor] = self.pool_fn(h) if self.pool_fn is not None else None
        return EncoderOutput(h, pooled, tuple(hidden) if return_all else None)


class Model(nn.Module):
    """Typing-heavy code: from __future__ annotations, TYPE_CHECKING imports, Final, TypeVar generics, typing.cast,
    @overload stubs before the real forward, NamedTuple outputs with defaults and _replace, assert isinstance chains."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.enc = Encoder(dim, 2, "mean")
        self.enc2 = Encoder(dim, 1, None)
        self.kernel: Tuple[int, int] = _pair(3)
        self.conv = nn.Conv2d(1, 1, self.kernel, padding=_pair((1, 1)))

    def forward(self, x: Tensor, extra: Optional[List[Tensor]] = None) -> Tuple[EncoderOutput, Tensor]:
        out = self.enc(x, return_all=True)
        assert out.pooled is not None
        assert out.all_hidden is not None and len(out.all_hidden) == 2
        if extra is not None:
            out2 = self.enc2(extra)
            assert out2.pooled is None
            out = out._replace(last_hidden=out.last_hidden + out2.last_hidden)
        img = cast(Tensor, self.conv(first([out.last_hidden]).unsqueeze(1)))
        return out, img.squeeze(1)


def make_inputs():
    return torch.randn(2, 4, 8), [torch.randn(2, 8) for _ in range(4)]
