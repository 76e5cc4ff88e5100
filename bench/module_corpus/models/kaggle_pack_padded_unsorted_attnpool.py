import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class AttentionPooling(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.attn = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x, mask):
        w = self.attn(x).squeeze(-1)
        w = w.masked_fill(mask == 0, -1e4)
        w = torch.softmax(w, dim=1)
        return torch.sum(w.unsqueeze(-1) * x, dim=1), w


class Model(nn.Module):
    """Kaggle NLP (Jigsaw / Quora) BiGRU + attention pooling: lengths from (x != pad).sum(1).cpu(),
    pack_padded_sequence(enforce_sorted=False), pad_packed_sequence(total_length=...), max + mean pooling
    with masked_fill, spatial dropout via Dropout2d on permuted embeddings."""

    def __init__(self, vocab=50, emb=8, hidden=8, pad_idx=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=pad_idx)
        self.embedding_dropout = nn.Dropout2d(0.2)
        self.gru = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.attn_pool = AttentionPooling(2 * hidden)
        self.out = nn.Linear(2 * hidden * 3, 1)
        self.pad_idx = pad_idx

    def forward(self, x):
        mask = (x != self.pad_idx)
        lengths = mask.sum(1).cpu()
        h = self.embedding(x)
        h = self.embedding_dropout(h.permute(0, 2, 1).unsqueeze(3)).squeeze(3).permute(0, 2, 1)
        packed = pack_padded_sequence(h, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        att, w = self.attn_pool(out, mask)
        max_pool, _ = torch.max(out.masked_fill(~mask.unsqueeze(-1), -1e4), 1)
        avg_pool = out.sum(1) / lengths.to(out.device).unsqueeze(1).float()
        feat = torch.cat((att, max_pool, avg_pool), 1)
        return self.out(feat).squeeze(-1), w


def make_inputs():
    x = torch.randint(1, 50, (3, 7))
    x[0, 4:] = 0
    x[2, 2:] = 0
    return (x,)
