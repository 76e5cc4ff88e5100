import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.attn = nn.Linear(hidden * 2, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.shape[1]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        return F.softmax(attention, dim=1)


class Model(nn.Module):
    """Bahdanau-style attention decoder unrolled with an LSTMCell loop."""

    def __init__(self, hidden=16, vocab=11, max_len=5):
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(vocab, hidden)
        self.attention = Attention(hidden)
        self.cell = nn.LSTMCell(hidden * 2, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, encoder_outputs, start_tokens):
        batch = encoder_outputs.size(0)
        h = encoder_outputs.new_zeros(batch, encoder_outputs.size(2))
        c = torch.zeros_like(h)
        inp = start_tokens
        outputs = []
        for t in range(self.max_len):
            emb = self.embedding(inp)
            a = self.attention(h, encoder_outputs)
            context = torch.bmm(a.unsqueeze(1), encoder_outputs).squeeze(1)
            h, c = self.cell(torch.cat([emb, context], dim=1), (h, c))
            logits = self.out(h)
            outputs.append(logits)
            inp = logits.argmax(1)  # greedy decoding
        return torch.stack(outputs, dim=1)


def make_inputs():
    return torch.randn(2, 7, 16), torch.tensor([1, 2])
