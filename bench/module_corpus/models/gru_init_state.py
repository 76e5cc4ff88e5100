import torch
import torch.nn as nn


class Model(nn.Module):
    """Seq2seq GRU encoder that takes an initial hidden state (learned)."""

    def __init__(self, input_size=10, hidden_size=20, num_layers=2):
        super().__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.gru = nn.GRU(input_size, hidden_size, num_layers, dropout=0.0)
        self.h0 = nn.Parameter(torch.zeros(num_layers, 1, hidden_size))

    def init_hidden(self, batch_size):
        return self.h0.expand(self.num_layers, batch_size, self.hidden_size).contiguous()

    def forward(self, x):
        # x: (seq, batch, feat)
        h = self.init_hidden(x.size(1))
        output, hidden = self.gru(x, h)
        return output[-1] + hidden[-1], hidden


def make_inputs():
    return (torch.randn(6, 3, 10),)
