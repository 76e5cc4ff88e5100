import torch
import torch.nn as nn


class CRF(nn.Module):
    def __init__(self, num_tags, batch_first=True):
        super().__init__()
        self.num_tags = num_tags
        self.batch_first = batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        nn.init.uniform_(self.start_transitions, -0.1, 0.1)
        nn.init.uniform_(self.end_transitions, -0.1, 0.1)
        nn.init.uniform_(self.transitions, -0.1, 0.1)

    def _compute_normalizer(self, emissions, mask):
        seq_length = emissions.size(0)
        score = self.start_transitions + emissions[0]
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emissions = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emissions
            next_score = torch.logsumexp(next_score, dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
        score += self.end_transitions
        return torch.logsumexp(score, dim=1)

    def _viterbi_decode(self, emissions, mask):
        seq_length, batch_size = mask.shape
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            next_score = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
            next_score, indices = next_score.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
            history.append(indices)
        score += self.end_transitions
        seq_ends = mask.long().sum(dim=0) - 1
        best_last = score.argmax(dim=1)
        # tensorised backtrace: walk history backwards, holding the last tag until each sequence ends
        tags = [best_last]
        cur = best_last
        for t in range(seq_length - 2, -1, -1):
            prev = history[t].gather(1, cur.unsqueeze(1)).squeeze(1)
            active = t < seq_ends  # position t+1 is inside the sequence
            cur = torch.where(active, prev, cur)
            tags.append(cur)
        tags.reverse()
        return torch.stack(tags, dim=1), score.max(dim=1).values

    def forward(self, emissions, mask):
        if self.batch_first:
            emissions = emissions.transpose(0, 1)
            mask = mask.transpose(0, 1)
        return self._viterbi_decode(emissions, mask), self._compute_normalizer(emissions, mask)


class Model(nn.Module):
    def __init__(self, vocab=30, emb=8, hidden=12, num_tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb, padding_idx=0)
        self.gru = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, num_tags)
        self.crf = CRF(num_tags)

    def forward(self, tokens):
        mask = tokens.ne(0)
        h, _ = self.gru(self.emb(tokens))
        emissions = self.fc(h)
        (best_path, best_score), log_z = self.crf(emissions, mask)
        return best_path * mask.long(), best_score, log_z


def make_inputs():
    tokens = torch.randint(1, 30, (3, 6))
    tokens[1, 4:] = 0
    tokens[2, 2:] = 0
    return (tokens,)
