import string

import torch
import torch.nn as nn

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
all_categories = ["English", "French", "German", "Italian"]


def letterToIndex(letter):
    return all_letters.find(letter)


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


class Model(nn.Module):
    """PyTorch 'classifying names with a character-level RNN' tutorial: lineToTensor built from a Python string
    in forward (str.find, per-letter item assignment), manual RNN loop over line_tensor.size()[0],
    categoryFromOutput with topk and all_categories[top_i[0].item()]."""

    def __init__(self):
        super(Model, self).__init__()
        self.rnn = RNN(n_letters, 16, len(all_categories))

    def categoryFromOutput(self, output):
        top_n, top_i = output.topk(1)
        category_i = top_i[0].item()
        return all_categories[category_i], category_i

    def forward(self, name, category_tensor):
        line_tensor = lineToTensor(name)
        hidden = self.rnn.initHidden()
        for i in range(line_tensor.size()[0]):
            output, hidden = self.rnn(line_tensor[i], hidden)
        loss = nn.NLLLoss()(output, category_tensor)
        guess, guess_i = self.categoryFromOutput(output)
        return output, loss, guess


def make_inputs():
    return "Satoshi", torch.tensor([2])
