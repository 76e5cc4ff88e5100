import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(8, 12, num_layers=1, batch_first=True, bidirectional=True, nonlinearity="tanh")
        self.lstm = nn.LSTM(24, 6, batch_first=True, proj_size=0)
        self.fc = nn.Linear(6, 2)

    def forward(self, x, h0, state):
        out, hn = self.rnn(x, h0)
        out2, (h2, c2) = self.lstm(out, state)
        return self.fc(out2[:, -1, :]), hn, c2


def make_inputs():
    x = torch.randn(3, 5, 8)
    h0 = torch.randn(2, 3, 12)
    state = (torch.randn(1, 3, 6), torch.randn(1, 3, 6))
    return x, h0, state
