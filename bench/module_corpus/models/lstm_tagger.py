import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Model(nn.Module):
    """BiLSTM sequence tagger (NER-style) with packed sequences."""

    def __init__(self, vocab_size=50, emb_dim=16, hidden_dim=24, num_tags=7):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.lstm = nn.LSTM(emb_dim, hidden_dim // 2, num_layers=2, batch_first=True, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, num_tags)

    def forward(self, tokens, lengths):
        embeds = self.embedding(tokens)
        packed = pack_padded_sequence(embeds, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, (h_n, c_n) = self.lstm(packed)
        out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=tokens.size(1))
        logits = self.hidden2tag(out)
        return logits, h_n


def make_inputs():
    lengths = torch.tensor([7, 3, 5, 2])
    tokens = torch.randint(1, 50, (4, 7))
    for i, l in enumerate(lengths.tolist()):
        tokens[i, l:] = 0
    return tokens, lengths
