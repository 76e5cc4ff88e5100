import torch
import torch.nn as nn
import torch.nn.functional as F


def matrix_mul(input, weight, bias=False):
    feature_list = []
    for feature in input:
        feature = torch.mm(feature, weight)
        if isinstance(bias, torch.nn.parameter.Parameter):
            feature = feature + bias.expand(feature.size()[0], bias.size()[1])
        feature = torch.tanh(feature).unsqueeze(0)
        feature_list.append(feature)
    return torch.cat(feature_list, 0).squeeze()


def element_wise_mul(input1, input2):
    feature_list = []
    for feature_1, feature_2 in zip(input1, input2):
        feature_2 = feature_2.unsqueeze(1).expand_as(feature_1)
        feature = feature_1 * feature_2
        feature_list.append(feature.unsqueeze(0))
    output = torch.cat(feature_list, 0)
    return torch.sum(output, 0).unsqueeze(0)


class WordAttNet(nn.Module):
    def __init__(self, vocab, embed_size=8, hidden_size=6):
        super(WordAttNet, self).__init__()
        self.word_weight = nn.Parameter(torch.Tensor(2 * hidden_size, 2 * hidden_size))
        self.word_bias = nn.Parameter(torch.Tensor(1, 2 * hidden_size))
        self.context_weight = nn.Parameter(torch.Tensor(2 * hidden_size, 1))
        self.lookup = nn.Embedding(vocab, embed_size)
        self.gru = nn.GRU(embed_size, hidden_size, bidirectional=True)
        self._create_weights(mean=0.0, std=0.05)

    def _create_weights(self, mean=0.0, std=0.05):
        self.word_weight.data.normal_(mean, std)
        self.word_bias.data.normal_(mean, std)
        self.context_weight.data.normal_(mean, std)

    def forward(self, input, hidden_state):
        output = self.lookup(input)
        f_output, h_output = self.gru(output.float(), hidden_state)
        output = matrix_mul(f_output, self.word_weight, self.word_bias)
        output = matrix_mul(output, self.context_weight).permute(1, 0)
        output = F.softmax(output)
        output = element_wise_mul(f_output, output.permute(1, 0))
        return output, h_output


class Model(nn.Module):
    """uvipen Hierarchical-attention-networks-pytorch style: batch is permuted to (sent, word, batch) and the
    word-level net runs in a `for i in input:` loop over sentences, matrix_mul/element_wise_mul helpers loop over
    tensors, isinstance(bias, Parameter) check, F.softmax without dim, hidden state kept on self."""

    def __init__(self, vocab=30, hidden=6, batch_size=2, n_classes=3):
        super(Model, self).__init__()
        self.batch_size = batch_size
        self.word_hidden_size = hidden
        self.word_att_net = WordAttNet(vocab, hidden_size=hidden)
        self.fc = nn.Linear(2 * hidden, n_classes)
        self.use_cuda = False
        self._init_hidden_state()

    def _init_hidden_state(self, last_batch_size=None):
        if last_batch_size:
            batch_size = last_batch_size
        else:
            batch_size = self.batch_size
        self.word_hidden_state = torch.zeros(2, batch_size, self.word_hidden_size)
        if self.use_cuda and torch.cuda.is_available():
            self.word_hidden_state = self.word_hidden_state.cuda()

    def forward(self, input):
        self._init_hidden_state(input.size(0))
        output_list = []
        input = input.permute(1, 0, 2)
        for i in input:
            output, self.word_hidden_state = self.word_att_net(i.permute(1, 0), self.word_hidden_state)
            output_list.append(output)
        output = torch.cat(output_list, 0)
        return self.fc(output.mean(0))


def make_inputs():
    return (torch.randint(0, 30, (2, 3, 5)),)
