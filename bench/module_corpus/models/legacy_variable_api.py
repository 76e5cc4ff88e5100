import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Model(nn.Module):
    """Old (PyTorch 0.3/0.4 era) style code: Variable, legacy constructors, .data.new, .type()."""

    def __init__(self, nhid=6):
        super().__init__()
        self.nhid = nhid
        self.rnn = nn.GRU(4, nhid)
        self.fc = nn.Linear(nhid, 3)

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        return Variable(weight.new(1, bsz, self.nhid).zero_())

    def forward(self, x):
        hidden = self.init_hidden(x.size()[1])
        out, hidden = self.rnn(x, hidden)
        hidden = Variable(hidden.data)  # repackage_hidden
        mask = torch.FloatTensor(out.size()[1], self.nhid).fill_(1.0)
        mask[0, :2] = 0
        y = F.sigmoid(self.fc(out[-1] * Variable(mask)))
        z = F.tanh(y).type(torch.FloatTensor)
        return z, hidden, y.type()


def make_inputs():
    return (torch.randn(5, 2, 4),)
