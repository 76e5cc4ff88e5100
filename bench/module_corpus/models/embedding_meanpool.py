import torch
import torch.nn as nn


class Model(nn.Module):
    """fastText/DAN-style bag of embeddings with padding_idx, masked mean, EmbeddingBag."""

    PAD = 0

    def __init__(self, vocab=30, dim=8, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=self.PAD)
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc = nn.Linear(dim * 2, classes)

    def forward(self, tokens):
        mask = (tokens != self.PAD).float()
        e = self.emb(tokens)
        lengths = mask.sum(1, keepdim=True).clamp(min=1)
        avg = (e * mask.unsqueeze(-1)).sum(1) / lengths
        flat = tokens[tokens != self.PAD]
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), (tokens != self.PAD).sum(1).cumsum(0)[:-1]])
        bag = self.bag(flat, offsets)
        return self.fc(torch.cat([avg, bag], dim=1))


def make_inputs():
    t = torch.randint(1, 30, (3, 6))
    t[0, 4:] = 0
    t[2, 2:] = 0
    return (t,)
