import torch
import torch.nn as nn
import torch.nn.functional as F


class CharRNN(nn.Module):
    """Stateful char-level LSTM (udacity / spro char-rnn): one-hot encoding done in forward with scatter_,
    self.hidden created lazily (None or batch-size mismatch), detached and stored back on self after each call,
    out.contiguous().view(-1, n_hidden)."""

    def __init__(self, n_chars=12, n_hidden=16, n_layers=2, drop_prob=0.3):
        super().__init__()
        self.n_chars = n_chars
        self.n_hidden = n_hidden
        self.n_layers = n_layers
        self.lstm = nn.LSTM(n_chars, n_hidden, n_layers, dropout=drop_prob, batch_first=True)
        self.dropout = nn.Dropout(drop_prob)
        self.fc = nn.Linear(n_hidden, n_chars)
        self.hidden = None

    def one_hot_encode(self, arr):
        one_hot = torch.zeros(arr.size(0), arr.size(1), self.n_chars, device=arr.device)
        one_hot.scatter_(2, arr.unsqueeze(-1), 1.0)
        return one_hot

    def init_hidden(self, batch_size):
        weight = next(self.parameters()).data
        return (weight.new(self.n_layers, batch_size, self.n_hidden).zero_(),
                weight.new(self.n_layers, batch_size, self.n_hidden).zero_())

    def forward(self, x):
        if self.hidden is None or self.hidden[0].size(1) != x.size(0):
            self.hidden = self.init_hidden(x.size(0))
        x = self.one_hot_encode(x)
        r_output, hidden = self.lstm(x, self.hidden)
        self.hidden = tuple([each.data for each in hidden])
        out = self.dropout(r_output)
        out = out.contiguous().view(-1, self.n_hidden)
        out = self.fc(out)
        return out


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = CharRNN()

    def forward(self, x, y):
        output = self.net(x)
        loss = F.cross_entropy(output, y.view(x.size(0) * x.size(1)).long())
        p = F.softmax(output[-1:], dim=1).data
        top_p, top_ch = p.topk(3)
        return loss, top_ch.numpy().squeeze().tolist(), self.net.hidden[0]


def make_inputs():
    return torch.randint(0, 12, (2, 5)), torch.randint(0, 12, (2, 5))
