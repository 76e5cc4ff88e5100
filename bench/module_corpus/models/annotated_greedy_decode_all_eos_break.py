import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def subsequent_mask(size):
    attn_shape = (1, size, size)
    return torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8) == 0


class TinySeq2Seq(nn.Module):
    def __init__(self, vocab=12, d=16):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, d)
        self.tgt_emb = nn.Embedding(vocab, d)
        self.enc = nn.Linear(d, d)
        self.q = nn.Linear(d, d)
        self.generator = nn.Linear(d, vocab)
        self.d = d

    def encode(self, src, src_mask):
        return torch.tanh(self.enc(self.src_emb(src)))

    def decode(self, memory, src_mask, ys, tgt_mask):
        h = self.tgt_emb(ys)
        T = ys.size(1)
        s = h @ h.transpose(1, 2) / math.sqrt(self.d)
        s = s.masked_fill(tgt_mask[:, :T, :T] == 0, -1e9)
        h = h + F.softmax(s, -1) @ h
        c = F.softmax(self.q(h) @ memory.transpose(1, 2) / math.sqrt(self.d), -1) @ memory
        return h + c


class Model(nn.Module):
    """Batched greedy decoding: ys grown with torch.cat each step, finished flags updated with |=, early exit
    `if finished.all(): break` (tensor truthiness), tokens after EOS replaced by pad with masked_fill."""

    def __init__(self, max_len=6, start_symbol=1, eos=2, pad=0):
        super().__init__()
        self.model = TinySeq2Seq()
        self.max_len = max_len
        self.start_symbol = start_symbol
        self.eos = eos
        self.pad = pad

    def forward(self, src):
        src_mask = (src != self.pad).unsqueeze(-2)
        memory = self.model.encode(src, src_mask)
        ys = torch.zeros(src.size(0), 1).fill_(self.start_symbol).type_as(src.data)
        finished = torch.zeros(src.size(0), dtype=torch.bool)
        for i in range(self.max_len - 1):
            out = self.model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data))
            prob = F.log_softmax(self.model.generator(out[:, -1]), dim=-1)
            _, next_word = torch.max(prob, dim=1)
            next_word = next_word.masked_fill(finished, self.pad)
            ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
            finished |= next_word == self.eos
            if finished.all():
                break
        return ys


def make_inputs():
    return (torch.tensor([[3, 4, 5, 2, 0], [6, 7, 2, 0, 0]]),)
