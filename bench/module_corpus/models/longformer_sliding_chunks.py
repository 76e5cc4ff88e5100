import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LongformerSelfAttention(nn.Module):
    """HF Longformer _sliding_chunks_query_key_matmul with _pad_and_diagonalize / _chunk helpers."""

    def __init__(self, hidden_size=16, num_heads=2, attention_window=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.embed_dim = hidden_size
        self.query = nn.Linear(hidden_size, self.embed_dim)
        self.key = nn.Linear(hidden_size, self.embed_dim)
        self.value = nn.Linear(hidden_size, self.embed_dim)
        assert attention_window % 2 == 0, f"`attention_window` has to be an even value. Given {attention_window}"
        self.one_sided_attn_window_size = attention_window // 2

    @staticmethod
    def _pad_and_transpose_last_two_dims(hidden_states_padded, padding):
        hidden_states_padded = F.pad(hidden_states_padded, padding)
        return hidden_states_padded.view(*hidden_states_padded.size()[:-2], hidden_states_padded.size(-1),
                                         hidden_states_padded.size(-2))

    @staticmethod
    def _pad_and_diagonalize(chunked_hidden_states):
        total_num_heads, num_chunks, window_overlap, hidden_dim = chunked_hidden_states.size()
        chunked_hidden_states = F.pad(chunked_hidden_states, (0, window_overlap + 1))
        chunked_hidden_states = chunked_hidden_states.view(total_num_heads, num_chunks, -1)
        chunked_hidden_states = chunked_hidden_states[:, :, :-window_overlap]
        chunked_hidden_states = chunked_hidden_states.view(total_num_heads, num_chunks, window_overlap,
                                                           window_overlap + hidden_dim)
        return chunked_hidden_states[:, :, :, :-1]

    @staticmethod
    def _chunk(hidden_states, window_overlap):
        hidden_states = hidden_states.view(hidden_states.size(0), torch.div(hidden_states.size(1), (window_overlap * 2),
                                           rounding_mode="trunc"), window_overlap * 2, hidden_states.size(2))
        chunk_size = list(hidden_states.size())
        chunk_size[1] = chunk_size[1] * 2 - 1
        chunk_stride = list(hidden_states.stride())
        chunk_stride[1] = chunk_stride[1] // 2
        return hidden_states.as_strided(size=chunk_size, stride=chunk_stride)

    @staticmethod
    def _mask_invalid_locations(input_tensor, affected_seq_len):
        beginning_mask_2d = input_tensor.new_ones(affected_seq_len, affected_seq_len + 1).tril().flip(dims=[0])
        beginning_mask = beginning_mask_2d[None, :, None, :]
        ending_mask = beginning_mask.flip(dims=(1, 3))
        beginning_input = input_tensor[:, :affected_seq_len, :, : affected_seq_len + 1]
        beginning_mask = beginning_mask.expand(beginning_input.size())
        input_tensor[:, :affected_seq_len, :, : affected_seq_len + 1] = torch.full_like(
            beginning_input, -float("inf")).where(beginning_mask.bool(), beginning_input)
        ending_input = input_tensor[:, -affected_seq_len:, :, -(affected_seq_len + 1):]
        ending_mask = ending_mask.expand(ending_input.size())
        input_tensor[:, -affected_seq_len:, :, -(affected_seq_len + 1):] = torch.full_like(
            ending_input, -float("inf")).where(ending_mask.bool(), ending_input)

    def _sliding_chunks_query_key_matmul(self, query, key, window_overlap: int):
        batch_size, seq_len, num_heads, head_dim = query.size()
        assert seq_len % (window_overlap * 2) == 0, f"Sequence length should be multiple of {window_overlap * 2}. Given {seq_len}"
        assert query.size() == key.size()
        chunks_count = torch.div(seq_len, window_overlap, rounding_mode="trunc") - 1
        query = query.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
        key = key.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
        query = self._chunk(query, window_overlap)
        key = self._chunk(key, window_overlap)
        diagonal_chunked_attention_scores = torch.einsum("bcxd,bcyd->bcxy", (query, key))
        diagonal_chunked_attention_scores = self._pad_and_transpose_last_two_dims(diagonal_chunked_attention_scores,
                                                                                  padding=(0, 0, 0, 1))
        diagonal_attention_scores = diagonal_chunked_attention_scores.new_zeros(
            (batch_size * num_heads, chunks_count + 1, window_overlap, window_overlap * 2 + 1))
        diagonal_attention_scores[:, :-1, :, window_overlap:] = diagonal_chunked_attention_scores[:, :, :window_overlap, : window_overlap + 1]
        diagonal_attention_scores[:, -1, :, window_overlap:] = diagonal_chunked_attention_scores[:, -1, window_overlap:, : window_overlap + 1]
        diagonal_attention_scores[:, 1:, :, :window_overlap] = diagonal_chunked_attention_scores[:, :, -(window_overlap + 1): -1, window_overlap + 1:]
        diagonal_attention_scores[:, 0, 1:window_overlap, 1:window_overlap] = diagonal_chunked_attention_scores[:, 0, : window_overlap - 1, 1 - window_overlap:]
        diagonal_attention_scores = diagonal_attention_scores.view(batch_size, num_heads, seq_len, 2 * window_overlap + 1).transpose(2, 1)
        self._mask_invalid_locations(diagonal_attention_scores, window_overlap)
        return diagonal_attention_scores

    def _sliding_chunks_matmul_attn_probs_value(self, attn_probs, value, window_overlap: int):
        batch_size, seq_len, num_heads, head_dim = value.size()
        chunks_count = torch.div(seq_len, window_overlap, rounding_mode="trunc") - 1
        chunked_attn_probs = attn_probs.transpose(1, 2).reshape(
            batch_size * num_heads, torch.div(seq_len, window_overlap, rounding_mode="trunc"), window_overlap, 2 * window_overlap + 1)
        value = value.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
        padded_value = F.pad(value, (0, 0, window_overlap, window_overlap), value=-1)
        chunked_value_size = (batch_size * num_heads, chunks_count + 1, 3 * window_overlap, head_dim)
        chunked_value_stride = padded_value.stride()
        chunked_value_stride = (chunked_value_stride[0], window_overlap * chunked_value_stride[1],
                                chunked_value_stride[1], chunked_value_stride[2])
        chunked_value = padded_value.as_strided(size=chunked_value_size, stride=chunked_value_stride)
        chunked_attn_probs = self._pad_and_diagonalize(chunked_attn_probs)
        context = torch.einsum("bcwd,bcdh->bcwh", (chunked_attn_probs, chunked_value))
        return context.view(batch_size, num_heads, seq_len, head_dim).transpose(1, 2)

    def forward(self, hidden_states, attention_mask):
        hidden_states = hidden_states.transpose(0, 1)
        query_vectors = self.query(hidden_states) / math.sqrt(self.head_dim)
        key_vectors = self.key(hidden_states)
        value_vectors = self.value(hidden_states)
        seq_len, batch_size, embed_dim = hidden_states.size()
        query_vectors = query_vectors.view(seq_len, batch_size, self.num_heads, self.head_dim).transpose(0, 1)
        key_vectors = key_vectors.view(seq_len, batch_size, self.num_heads, self.head_dim).transpose(0, 1)
        attn_scores = self._sliding_chunks_query_key_matmul(query_vectors, key_vectors, self.one_sided_attn_window_size)
        remove_from_windowed_attention_mask = (attention_mask != 0)[:, :, None, None]
        float_mask = remove_from_windowed_attention_mask.type_as(query_vectors).masked_fill(
            remove_from_windowed_attention_mask, torch.finfo(query_vectors.dtype).min)
        diagonal_mask = self._sliding_chunks_query_key_matmul(
            float_mask.new_ones(size=float_mask.size()), float_mask, self.one_sided_attn_window_size)
        attn_scores += diagonal_mask
        attn_probs = F.softmax(attn_scores, dim=-1, dtype=torch.float32)
        attn_probs = torch.masked_fill(attn_probs, (attention_mask < 0)[:, :, None, None], 0.0)
        value_vectors = value_vectors.view(seq_len, batch_size, self.num_heads, self.head_dim).transpose(0, 1)
        attn_output = self._sliding_chunks_matmul_attn_probs_value(attn_probs, value_vectors, self.one_sided_attn_window_size)
        return attn_output.reshape(batch_size, seq_len, embed_dim).contiguous()


class Model(nn.Module):
    def __init__(self, attention_window=4):
        super().__init__()
        self.attention_window = attention_window
        self.emb = nn.Embedding(20, 16, padding_idx=1)
        self.attn = LongformerSelfAttention(attention_window=attention_window)

    def _pad_to_window_size(self, input_ids, attention_mask, pad_token_id=1):
        attention_window = self.attention_window
        input_shape = input_ids.shape
        batch_size, seq_len = input_shape[:2]
        padding_len = (attention_window - seq_len % attention_window) % attention_window
        if padding_len > 0:
            input_ids = F.pad(input_ids, (0, padding_len), value=pad_token_id)
            attention_mask = F.pad(attention_mask, (0, padding_len), value=0)
        return padding_len, input_ids, attention_mask

    def forward(self, input_ids, attention_mask):
        padding_len, input_ids, attention_mask = self._pad_to_window_size(input_ids, attention_mask)
        extended = (1 - attention_mask) * -10000.0
        out = self.attn(self.emb(input_ids), extended)
        if padding_len > 0:
            out = out[:, :-padding_len]
        return out


def make_inputs():
    return torch.randint(2, 20, (2, 10)), torch.tensor([[1] * 10, [1] * 7 + [0] * 3])
