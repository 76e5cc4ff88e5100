from typing import List
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence


class Model(nn.Module):
    """Collate-in-forward: takes a python list of variable-length token tensors, pads with pad_sequence, builds the mask
    from [len(t) for t in seqs], and unpads the outputs back into a list."""

    def __init__(self, vocab=40, d=16, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.emb = nn.Embedding(vocab, d, padding_idx=pad_id)
        layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.tagger = nn.Linear(d, 5)

    def forward(self, seqs: List[torch.Tensor]):
        lengths = [len(s) for s in seqs]
        tokens = pad_sequence(seqs, batch_first=True, padding_value=self.pad_id)
        max_len = max(lengths)
        len_t = torch.tensor(lengths, device=tokens.device)
        key_padding_mask = torch.arange(max_len, device=tokens.device)[None, :] >= len_t[:, None]
        h = self.enc(self.emb(tokens), src_key_padding_mask=key_padding_mask)
        logits = self.tagger(h)
        per_seq = [logits[i, :n] for i, n in enumerate(lengths)]
        pooled = torch.stack([p.mean(0) for p in per_seq])
        return per_seq, pooled, sum(lengths)


def make_inputs():
    return ([torch.randint(1, 40, (5,)), torch.randint(1, 40, (3,)), torch.randint(1, 40, (7,))],)


def make_inputs_seq():
    return [make_inputs(), ([torch.randint(1, 40, (2,)), torch.randint(1, 40, (6,))],),
            ([torch.randint(1, 40, (5,)), torch.randint(1, 40, (3,)), torch.randint(1, 40, (7,))],)]
