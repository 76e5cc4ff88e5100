import logging
import warnings
import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.debug = True

    def forward(self, x):
        if self.debug:
            print(f"input shape: {x.shape}, dtype={x.dtype}")
        logger.info("forward with %d samples", x.size(0))
        y = self.fc(x)
        if y.shape[1] != 4:
            warnings.warn("output dim is not 4", UserWarning)
        print("output", y.shape)
        return y.softmax(-1)


def make_inputs():
    return (torch.randn(2, 4),)
