import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class LSTMClassifier(nn.Module):
    """2017-era sentiment LSTM: init_hidden with autograd.Variable(torch.zeros(...)), .cuda() if input.is_cuda,
    x.size()[0], lstm_out[-1], F.softmax / F.log_softmax without dim (implicit-dim warning)."""

    def __init__(self, embedding_dim, hidden_dim, vocab_size, label_size, batch_size, use_gpu=False):
        super(LSTMClassifier, self).__init__()
        self.hidden_dim = hidden_dim
        self.batch_size = batch_size
        self.use_gpu = use_gpu
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)
        self.hidden2label = nn.Linear(hidden_dim, label_size)
        self.hidden = self.init_hidden()

    def init_hidden(self, batch_size=None):
        if batch_size is None:
            batch_size = self.batch_size
        if self.use_gpu:
            h0 = Variable(torch.zeros(1, batch_size, self.hidden_dim).cuda())
            c0 = Variable(torch.zeros(1, batch_size, self.hidden_dim).cuda())
        else:
            h0 = Variable(torch.zeros(1, batch_size, self.hidden_dim))
            c0 = Variable(torch.zeros(1, batch_size, self.hidden_dim))
        return (h0, c0)

    def forward(self, sentence):
        batch_size = sentence.size()[1]
        self.hidden = self.init_hidden(batch_size)
        if sentence.is_cuda:
            self.hidden = tuple(h.cuda() for h in self.hidden)
        embeds = self.word_embeddings(sentence)
        x = embeds.view(len(sentence), batch_size, -1)
        lstm_out, self.hidden = self.lstm(x, self.hidden)
        y = self.hidden2label(lstm_out[-1])
        log_probs = F.log_softmax(y)
        return log_probs


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.clf = LSTMClassifier(8, 12, 30, 3, batch_size=4)

    def forward(self, sentence, label):
        log_probs = self.clf(sentence)
        loss = F.nll_loss(log_probs, Variable(label))
        probs = F.softmax(log_probs)
        _, pred = torch.max(probs.data, 1)
        correct = (pred == label.data).sum()
        return loss, probs, correct, F.sigmoid(log_probs).sum(1)


def make_inputs():
    return torch.randint(0, 30, (7, 4)), torch.tensor([0, 2, 1, 1])
