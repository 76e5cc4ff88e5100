import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter


class PtrAttention(nn.Module):
    """Vinyals et al. pointer attention (shirgur/PointerNet style)."""

    def __init__(self, input_dim, hidden_dim):
        super(PtrAttention, self).__init__()
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim
        self.input_linear = nn.Linear(input_dim, hidden_dim)
        self.context_linear = nn.Conv1d(input_dim, hidden_dim, 1, 1)
        self.V = Parameter(torch.FloatTensor(hidden_dim), requires_grad=True)
        self._inf = Parameter(torch.FloatTensor([float('-inf')]), requires_grad=False)
        self.tanh = nn.Tanh()
        self.softmax = nn.Softmax(dim=1)
        nn.init.uniform_(self.V, -1, 1)

    def forward(self, input, context, mask):
        # (batch, hidden_dim, seq_len)
        inp = self.input_linear(input).unsqueeze(2).expand(-1, -1, context.size(1))
        context = context.permute(0, 2, 1)
        ctx = self.context_linear(context)
        V = self.V.unsqueeze(0).expand(context.size(0), -1).unsqueeze(1)
        att = torch.bmm(V, self.tanh(inp + ctx)).squeeze(1)
        if len(att[mask]) > 0:
            att[mask] = self.inf[mask]
        alpha = self.softmax(att)
        hidden_state = torch.bmm(ctx, alpha.unsqueeze(2)).squeeze(2)
        return hidden_state, alpha

    def init_inf(self, mask_size):
        self.inf = self._inf.unsqueeze(1).expand(*mask_size)


class PtrDecoder(nn.Module):
    def __init__(self, embedding_dim, hidden_dim):
        super(PtrDecoder, self).__init__()
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.input_to_hidden = nn.Linear(embedding_dim, 4 * hidden_dim)
        self.hidden_to_hidden = nn.Linear(hidden_dim, 4 * hidden_dim)
        self.hidden_out = nn.Linear(hidden_dim * 2, hidden_dim)
        self.att = PtrAttention(hidden_dim, hidden_dim)
        self.mask = Parameter(torch.ones(1), requires_grad=False)
        self.runner = Parameter(torch.zeros(1), requires_grad=False)

    def forward(self, embedded_inputs, decoder_input, hidden, context):
        batch_size = embedded_inputs.size(0)
        input_length = embedded_inputs.size(1)
        mask = self.mask.repeat(input_length).unsqueeze(0).repeat(batch_size, 1)
        self.att.init_inf(mask.size())
        runner = self.runner.repeat(input_length)
        for i in range(input_length):
            runner.data[i] = i
        runner = runner.unsqueeze(0).expand(batch_size, -1).long()
        outputs = []
        pointers = []

        def step(x, hidden):
            h, c = hidden
            gates = self.input_to_hidden(x) + self.hidden_to_hidden(h)
            input, forget, cell, out = gates.chunk(4, 1)
            input = torch.sigmoid(input)
            forget = torch.sigmoid(forget)
            cell = torch.tanh(cell)
            out = torch.sigmoid(out)
            c_t = (forget * c) + (input * cell)
            h_t = out * torch.tanh(c_t)
            hidden_t, output = self.att(h_t, context, torch.eq(mask, 0))
            hidden_t = torch.tanh(self.hidden_out(torch.cat((hidden_t, h_t), 1)))
            return hidden_t, c_t, output

        for _ in range(input_length):
            h_t, c_t, outs = step(decoder_input, hidden)
            hidden = (h_t, c_t)
            masked_outs = outs * mask
            max_probs, indices = masked_outs.max(1)
            one_hot_pointers = (runner == indices.unsqueeze(1).expand(-1, outs.size()[1])).float()
            mask = mask * (1 - one_hot_pointers)
            embedding_mask = one_hot_pointers.unsqueeze(2).expand(-1, -1, self.embedding_dim).bool()
            decoder_input = embedded_inputs[embedding_mask.data].view(batch_size, self.embedding_dim)
            outputs.append(outs.unsqueeze(0))
            pointers.append(indices.unsqueeze(1))
        outputs = torch.cat(outputs).permute(1, 0, 2)
        pointers = torch.cat(pointers, 1)
        return (outputs, pointers), hidden


class Model(nn.Module):
    def __init__(self, embedding_dim=8, hidden_dim=8):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.embedding = nn.Linear(2, embedding_dim)
        self.encoder = nn.LSTM(embedding_dim, hidden_dim, 1, batch_first=True)
        self.decoder = PtrDecoder(embedding_dim, hidden_dim)
        self.decoder_input0 = Parameter(torch.FloatTensor(embedding_dim), requires_grad=False)
        nn.init.uniform_(self.decoder_input0, -1, 1)

    def forward(self, inputs):
        batch_size = inputs.size(0)
        input_length = inputs.size(1)
        decoder_input0 = self.decoder_input0.unsqueeze(0).expand(batch_size, -1)
        inputs = inputs.view(batch_size * input_length, -1)
        embedded_inputs = self.embedding(inputs).view(batch_size, input_length, -1)
        encoder_outputs, encoder_hidden = self.encoder(embedded_inputs)
        decoder_hidden0 = (encoder_hidden[0][-1], encoder_hidden[1][-1])
        (outputs, pointers), decoder_hidden = self.decoder(embedded_inputs, decoder_input0, decoder_hidden0, encoder_outputs)
        return outputs, pointers


def make_inputs():
    return (torch.rand(2, 5, 2),)
