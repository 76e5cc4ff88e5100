import torch
import torch.nn as nn
import torch.nn.functional as F


def masked_softmax(logits, mask, dim=-1, log_softmax=False):
    mask = mask.type(torch.float32)
    masked_logits = mask * logits + (1 - mask) * -1e30
    softmax_fn = F.log_softmax if log_softmax else F.softmax
    return softmax_fn(masked_logits, dim)


class HighwayEncoder(nn.Module):
    def __init__(self, num_layers, hidden_size):
        super().__init__()
        self.transforms = nn.ModuleList([nn.Linear(hidden_size, hidden_size) for _ in range(num_layers)])
        self.gates = nn.ModuleList([nn.Linear(hidden_size, hidden_size) for _ in range(num_layers)])

    def forward(self, x):
        for gate, transform in zip(self.gates, self.transforms):
            g = torch.sigmoid(gate(x))
            t = F.relu(transform(x))
            x = g * t + (1 - g) * x
        return x


class RNNEncoder(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob
        self.rnn = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True,
                           dropout=drop_prob if num_layers > 1 else 0.0)

    def forward(self, x, lengths):
        orig_len = x.size(1)
        lengths, sort_idx = lengths.sort(0, descending=True)
        x = x[sort_idx]
        x = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True)
        x, _ = self.rnn(x)
        x, _ = nn.utils.rnn.pad_packed_sequence(x, batch_first=True, total_length=orig_len)
        _, unsort_idx = sort_idx.sort(0)
        x = x[unsort_idx]
        return F.dropout(x, self.drop_prob, self.training)


class BiDAFAttention(nn.Module):
    """chrischute squad BiDAF attention: trilinear similarity split into three terms, c2q and q2c."""

    def __init__(self, hidden_size, drop_prob=0.1):
        super().__init__()
        self.drop_prob = drop_prob
        self.c_weight = nn.Parameter(torch.zeros(hidden_size, 1))
        self.q_weight = nn.Parameter(torch.zeros(hidden_size, 1))
        self.cq_weight = nn.Parameter(torch.zeros(1, 1, hidden_size))
        for weight in (self.c_weight, self.q_weight, self.cq_weight):
            nn.init.xavier_uniform_(weight)
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, c, q, c_mask, q_mask):
        batch_size, c_len, _ = c.size()
        q_len = q.size(1)
        s = self.get_similarity_matrix(c, q)
        c_mask = c_mask.view(batch_size, c_len, 1)
        q_mask = q_mask.view(batch_size, 1, q_len)
        s1 = masked_softmax(s, q_mask, dim=2)
        s2 = masked_softmax(s, c_mask, dim=1)
        a = torch.bmm(s1, q)
        b = torch.bmm(torch.bmm(s1, s2.transpose(1, 2)), c)
        return torch.cat([c, a, c * a, c * b], dim=2)

    def get_similarity_matrix(self, c, q):
        c_len, q_len = c.size(1), q.size(1)
        c = F.dropout(c, self.drop_prob, self.training)
        q = F.dropout(q, self.drop_prob, self.training)
        s0 = torch.matmul(c, self.c_weight).expand([-1, -1, q_len])
        s1 = torch.matmul(q, self.q_weight).transpose(1, 2).expand([-1, c_len, -1])
        s2 = torch.matmul(c * self.cq_weight, q.transpose(1, 2))
        return s0 + s1 + s2 + self.bias


class Model(nn.Module):
    def __init__(self, vocab=30, hidden_size=8, drop_prob=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden_size, padding_idx=0)
        self.hwy = HighwayEncoder(2, hidden_size)
        self.enc = RNNEncoder(hidden_size, hidden_size, 1, drop_prob)
        self.att = BiDAFAttention(2 * hidden_size, drop_prob)
        self.mod = RNNEncoder(8 * hidden_size, hidden_size, 2, drop_prob)
        self.att_linear_1 = nn.Linear(8 * hidden_size, 1)
        self.mod_linear_1 = nn.Linear(2 * hidden_size, 1)
        self.att_linear_2 = nn.Linear(8 * hidden_size, 1)
        self.mod_linear_2 = nn.Linear(2 * hidden_size, 1)

    def forward(self, cw_idxs, qw_idxs):
        c_mask = torch.zeros_like(cw_idxs) != cw_idxs
        q_mask = torch.zeros_like(qw_idxs) != qw_idxs
        c_len, q_len = c_mask.sum(-1), q_mask.sum(-1)
        c_emb = self.hwy(self.emb(cw_idxs))
        q_emb = self.hwy(self.emb(qw_idxs))
        c_enc = self.enc(c_emb, c_len)
        q_enc = self.enc(q_emb, q_len)
        att = self.att(c_enc, q_enc, c_mask, q_mask)
        mod = self.mod(att, c_len)
        logits_1 = self.att_linear_1(att) + self.mod_linear_1(mod)
        logits_2 = self.att_linear_2(att) + self.mod_linear_2(mod)
        log_p1 = masked_softmax(logits_1.squeeze(), c_mask, log_softmax=True)
        log_p2 = masked_softmax(logits_2.squeeze(), c_mask, log_softmax=True)
        return log_p1, log_p2


def make_inputs():
    return torch.tensor([[3, 4, 5, 6, 7, 0], [8, 9, 10, 11, 12, 13]]), torch.tensor([[2, 3, 0], [5, 6, 7]])
