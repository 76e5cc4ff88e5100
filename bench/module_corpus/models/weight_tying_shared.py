import torch
import torch.nn as nn


class Model(nn.Module):
    """Language model with tied input/output embeddings and a shared block applied repeatedly (ALBERT)."""

    def __init__(self, vocab=20, d=8, n_repeat=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.shared = nn.Sequential(nn.Linear(d, d), nn.Tanh())
        self.decoder = nn.Linear(d, vocab, bias=False)
        self.decoder.weight = self.emb.weight
        self.n_repeat = n_repeat

    def forward(self, tokens):
        h = self.emb(tokens)
        for _ in range(self.n_repeat):
            h = h + self.shared(h)
        return self.decoder(h)


def make_inputs():
    return (torch.randint(0, 20, (2, 5)),)
