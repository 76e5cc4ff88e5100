import torch
import torch.nn as nn
import torch.nn.functional as F


def sort_by_seq_lens(batch, sequences_lengths, descending=True):
    sorted_seq_lens, sorting_index = sequences_lengths.sort(0, descending=descending)
    sorted_batch = batch.index_select(0, sorting_index)
    idx_range = torch.arange(0, len(sequences_lengths))
    _, reverse_mapping = sorting_index.sort(0, descending=False)
    restoration_index = idx_range.index_select(0, reverse_mapping)
    return sorted_batch, sorted_seq_lens, sorting_index, restoration_index


def get_mask(sequences_batch, sequences_lengths):
    batch_size = sequences_batch.size()[0]
    max_length = torch.max(sequences_lengths)
    mask = torch.ones(batch_size, max_length, dtype=torch.float)
    mask[sequences_batch[:, :max_length] == 0] = 0.0
    return mask


def masked_softmax(tensor, mask):
    tensor_shape = tensor.size()
    reshaped_tensor = tensor.view(-1, tensor_shape[-1])
    while mask.dim() < tensor.dim():
        mask = mask.unsqueeze(1)
    mask = mask.expand_as(tensor).contiguous().float()
    reshaped_mask = mask.view(-1, mask.size()[-1])
    result = F.softmax(reshaped_tensor * reshaped_mask, dim=-1)
    result = result * reshaped_mask
    result = result / (result.sum(dim=-1, keepdim=True) + 1e-13)
    return result.view(*tensor_shape)


def weighted_sum(tensor, weights, mask):
    weighted_sum = weights.bmm(tensor)
    while mask.dim() < weighted_sum.dim():
        mask = mask.unsqueeze(1)
    mask = mask.transpose(-1, -2)
    mask = mask.expand_as(weighted_sum).contiguous().float()
    return weighted_sum * mask


def replace_masked(tensor, mask, value):
    mask = mask.unsqueeze(1).transpose(2, 1)
    reverse_mask = 1.0 - mask
    values_to_add = value * reverse_mask
    return tensor * mask + values_to_add


class Seq2SeqEncoder(nn.Module):
    def __init__(self, rnn_type, input_size, hidden_size, num_layers=1, bias=True, dropout=0.0, bidirectional=False):
        assert issubclass(rnn_type, nn.RNNBase), "rnn_type must be a class inheriting from torch.nn.RNNBase"
        super().__init__()
        self._encoder = rnn_type(input_size, hidden_size, num_layers=num_layers, bias=bias, batch_first=True,
                                 dropout=dropout, bidirectional=bidirectional)

    def forward(self, sequences_batch, sequences_lengths):
        sorted_batch, sorted_lengths, _, restoration_idx = sort_by_seq_lens(sequences_batch, sequences_lengths)
        packed_batch = nn.utils.rnn.pack_padded_sequence(sorted_batch, sorted_lengths, batch_first=True)
        outputs, _ = self._encoder(packed_batch, None)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
        return outputs.index_select(0, restoration_idx)


class SoftmaxAttention(nn.Module):
    def forward(self, premise_batch, premise_mask, hypothesis_batch, hypothesis_mask):
        similarity_matrix = premise_batch.bmm(hypothesis_batch.transpose(2, 1).contiguous())
        prem_hyp_attn = masked_softmax(similarity_matrix, hypothesis_mask)
        hyp_prem_attn = masked_softmax(similarity_matrix.transpose(1, 2).contiguous(), premise_mask)
        attended_premises = weighted_sum(hypothesis_batch, prem_hyp_attn, premise_mask)
        attended_hypotheses = weighted_sum(premise_batch, hyp_prem_attn, hypothesis_mask)
        return attended_premises, attended_hypotheses


class Model(nn.Module):
    """coetaur0 ESIM: sorted packed BiLSTM encoder, masked soft alignment, enhancement [a; b; a-b; a*b],
    composition, masked avg/max pooling with replace_masked(-1e7)."""

    def __init__(self, vocab_size=30, embedding_dim=8, hidden_size=8, num_classes=3):
        super().__init__()
        self.hidden_size = hidden_size
        self._word_embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self._encoding = Seq2SeqEncoder(nn.LSTM, embedding_dim, hidden_size, bidirectional=True)
        self._attention = SoftmaxAttention()
        self._projection = nn.Sequential(nn.Linear(4 * 2 * hidden_size, hidden_size), nn.ReLU())
        self._composition = Seq2SeqEncoder(nn.LSTM, hidden_size, hidden_size, bidirectional=True)
        self._classification = nn.Sequential(nn.Dropout(p=0.5), nn.Linear(2 * 4 * hidden_size, hidden_size), nn.Tanh(),
                                             nn.Dropout(p=0.5), nn.Linear(hidden_size, num_classes))

    def forward(self, premises, premises_lengths, hypotheses, hypotheses_lengths):
        premises_mask = get_mask(premises, premises_lengths)
        hypotheses_mask = get_mask(hypotheses, hypotheses_lengths)
        embedded_premises = self._word_embedding(premises)
        embedded_hypotheses = self._word_embedding(hypotheses)
        encoded_premises = self._encoding(embedded_premises, premises_lengths)
        encoded_hypotheses = self._encoding(embedded_hypotheses, hypotheses_lengths)
        attended_premises, attended_hypotheses = self._attention(encoded_premises, premises_mask, encoded_hypotheses, hypotheses_mask)
        enhanced_premises = torch.cat([encoded_premises, attended_premises, encoded_premises - attended_premises,
                                       encoded_premises * attended_premises], dim=-1)
        enhanced_hypotheses = torch.cat([encoded_hypotheses, attended_hypotheses, encoded_hypotheses - attended_hypotheses,
                                         encoded_hypotheses * attended_hypotheses], dim=-1)
        projected_premises = self._projection(enhanced_premises)
        projected_hypotheses = self._projection(enhanced_hypotheses)
        v_ai = self._composition(projected_premises, premises_lengths)
        v_bj = self._composition(projected_hypotheses, hypotheses_lengths)
        v_a_avg = torch.sum(v_ai * premises_mask.unsqueeze(1).transpose(2, 1), dim=1) / torch.sum(premises_mask, dim=1, keepdim=True)
        v_b_avg = torch.sum(v_bj * hypotheses_mask.unsqueeze(1).transpose(2, 1), dim=1) / torch.sum(hypotheses_mask, dim=1, keepdim=True)
        v_a_max, _ = replace_masked(v_ai, premises_mask, -1e7).max(dim=1)
        v_b_max, _ = replace_masked(v_bj, hypotheses_mask, -1e7).max(dim=1)
        v = torch.cat([v_a_avg, v_a_max, v_b_avg, v_b_max], dim=1)
        logits = self._classification(v)
        return logits, F.softmax(logits, dim=-1)


def make_inputs():
    premises = torch.tensor([[4, 5, 6, 7, 0], [8, 9, 10, 11, 12]])
    hypotheses = torch.tensor([[3, 2, 0], [13, 14, 15]])
    return premises, torch.tensor([4, 5]), hypotheses, torch.tensor([2, 3])
