import logging
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
DEBUG = os.environ.get("DEBUG", "0") == "1"


class Block(nn.Module):
    def __init__(self, c, name, verbose=False):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.name = name
        self.verbose = verbose

    def forward(self, x):
        if self.verbose:
            print(f"[{self.name}] in: {tuple(x.shape)} mean={x.mean().item():.4f}")
        out = F.relu(self.bn(self.conv(x))) + x
        logger.debug("%s -> %s", self.name, out.shape)
        return out


class Model(nn.Module):
    """Research-code forward full of instrumentation: time.time()/time.perf_counter() around blocks stored on
    self, logger.debug calls, a DEBUG env flag read at import and os.environ.get in forward, a verbose print."""

    def __init__(self, c=6, n_blocks=3):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.blocks = nn.ModuleList([Block(c, f"block{i}", verbose=DEBUG) for i in range(n_blocks)])
        self.head = nn.Linear(c, 4)
        self.timings = {}
        self.profile = os.environ.get("PROFILE_MODEL") is not None

    def forward(self, x):
        t0 = time.time()
        x = self.stem(x)
        for blk in self.blocks:
            start = time.perf_counter()
            x = blk(x)
            if self.profile:
                self.timings[blk.name] = time.perf_counter() - start
        if os.environ.get("DEBUG_SHAPES"):
            print("features", x.shape)
        out = self.head(x.mean((2, 3)))
        self.last_forward_time = time.time() - t0
        logger.debug("forward took %.3f ms", 1000 * self.last_forward_time)
        return out


def make_inputs():
    return (torch.randn(2, 3, 8, 8),)
