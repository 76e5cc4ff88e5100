import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError:
                raise ValueError("An invalid option for `--model` was supplied")
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


class Model(nn.Module):
    """pytorch/examples word_language_model evaluate(): init_hidden, bptt chunks via get_batch, repackage_hidden,
    nll_loss accumulated with len(data) * loss, exp of the average loss."""

    def __init__(self, rnn_type='LSTM'):
        super().__init__()
        self.model = RNNModel(rnn_type, 20, 12, 12, 2, dropout=0.2, tie_weights=True)
        self.bptt = 5
        self.eval_batch_size = 3

    def forward(self, data_source):
        total_loss = 0.
        hidden = self.model.init_hidden(self.eval_batch_size)
        for i in range(0, data_source.size(0) - 1, self.bptt):
            data, targets = get_batch(data_source, i, self.bptt)
            output, hidden = self.model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * F.nll_loss(output, targets)
        val_loss = total_loss / (len(data_source) - 1)
        return val_loss, torch.exp(val_loss) if isinstance(val_loss, torch.Tensor) else math.exp(val_loss)


def make_inputs():
    return (torch.randint(0, 20, (12, 3)),)
