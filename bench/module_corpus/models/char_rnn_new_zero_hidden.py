import torch
import torch.nn as nn


class RNNModel(nn.Module):
    """pytorch/examples word_language_model RNNModel: rnn_type string, init_hidden via weight.new_zeros."""

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
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
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
        return nn.functional.log_softmax(decoded, dim=1), hidden

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


def get_batch(source, i, bptt=3):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm_lm = RNNModel('LSTM', 15, 8, 8, 2, dropout=0.2, tie_weights=True)
        self.relu_lm = RNNModel('RNN_RELU', 15, 6, 8, 1, dropout=0.2)
        self.criterion = nn.NLLLoss()

    def forward(self, data_source):
        bsz = data_source.size(1)
        hidden = self.lstm_lm.init_hidden(bsz)
        hidden2 = self.relu_lm.init_hidden(bsz)
        total_loss = 0.
        for batch, i in enumerate(range(0, data_source.size(0) - 1, 3)):
            data, targets = get_batch(data_source, i)
            hidden = repackage_hidden(hidden)
            hidden2 = repackage_hidden(hidden2)
            output, hidden = self.lstm_lm(data, hidden)
            output2, hidden2 = self.relu_lm(data, hidden2)
            total_loss += len(data) * (self.criterion(output, targets) + self.criterion(output2, targets))
        return total_loss / (len(data_source) - 1), hidden


def make_inputs():
    return (torch.randint(0, 15, (8, 2)),)
