from math import ceil, sqrt

import torch
import torch.nn as nn
import torch.nn.functional as F


def rearrange_bdsd(x, ts_d):
    """'(b ts_d) seg_num d_model -> b ts_d seg_num d_model' without einops."""
    bd, seg_num, d_model = x.shape
    return x.reshape(bd // ts_d, ts_d, seg_num, d_model)


class DSW_embedding(nn.Module):
    def __init__(self, seg_len, d_model):
        super().__init__()
        self.seg_len = seg_len
        self.linear = nn.Linear(seg_len, d_model)

    def forward(self, x):
        batch, ts_len, ts_dim = x.shape
        x_segment = x.permute(0, 2, 1).reshape(batch * ts_dim, ts_len // self.seg_len, self.seg_len)
        x_embed = self.linear(x_segment)
        return x_embed.reshape(batch, ts_dim, ts_len // self.seg_len, -1)


class FullAttention(nn.Module):
    def __init__(self, scale=None, attention_dropout=0.1):
        super().__init__()
        self.scale = scale
        self.dropout = nn.Dropout(attention_dropout)

    def forward(self, queries, keys, values):
        B, L, H, E = queries.shape
        _, S, _, D = values.shape
        scale = self.scale or 1.0 / sqrt(E)
        scores = torch.einsum("blhe,bshe->bhls", queries, keys)
        A = self.dropout(torch.softmax(scale * scores, dim=-1))
        V = torch.einsum("bhls,bshd->blhd", A, values)
        return V.contiguous()


class AttentionLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_keys=None, d_values=None, dropout=0.1):
        super().__init__()
        d_keys = d_keys or (d_model // n_heads)
        d_values = d_values or (d_model // n_heads)
        self.inner_attention = FullAttention(scale=None, attention_dropout=dropout)
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_values * n_heads)
        self.out_projection = nn.Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, queries, keys, values):
        B, L, _ = queries.shape
        _, S, _ = keys.shape
        H = self.n_heads
        queries = self.query_projection(queries).view(B, L, H, -1)
        keys = self.key_projection(keys).view(B, S, H, -1)
        values = self.value_projection(values).view(B, S, H, -1)
        out = self.inner_attention(queries, keys, values)
        return self.out_projection(out.view(B, L, -1))


class TwoStageAttentionLayer(nn.Module):
    """Cross-time attention per dimension, then cross-dimension attention through a small router (Crossformer TSA)."""

    def __init__(self, seg_num, factor, d_model, n_heads, d_ff=None, dropout=0.1):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.time_attention = AttentionLayer(d_model, n_heads, dropout=dropout)
        self.dim_sender = AttentionLayer(d_model, n_heads, dropout=dropout)
        self.dim_receiver = AttentionLayer(d_model, n_heads, dropout=dropout)
        self.router = nn.Parameter(torch.randn(seg_num, factor, d_model))
        self.dropout = nn.Dropout(dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.norm4 = nn.LayerNorm(d_model)
        self.MLP1 = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.MLP2 = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x):
        batch, ts_d, seg_num, d_model = x.shape
        time_in = x.reshape(batch * ts_d, seg_num, d_model)
        time_enc = self.time_attention(time_in, time_in, time_in)
        dim_in = self.norm1(time_in + self.dropout(time_enc))
        dim_in = self.norm2(dim_in + self.dropout(self.MLP1(dim_in)))
        dim_send = rearrange_bdsd(dim_in, ts_d).permute(0, 2, 1, 3).reshape(batch * seg_num, ts_d, d_model)
        batch_router = self.router.unsqueeze(0).expand(batch, -1, -1, -1).reshape(batch * seg_num, -1, d_model)
        dim_buffer = self.dim_sender(batch_router, dim_send, dim_send)
        dim_receive = self.dim_receiver(dim_send, dim_buffer, dim_buffer)
        dim_enc = self.norm3(dim_send + self.dropout(dim_receive))
        dim_enc = self.norm4(dim_enc + self.dropout(self.MLP2(dim_enc)))
        return dim_enc.reshape(batch, seg_num, ts_d, d_model).permute(0, 2, 1, 3)


class SegMerging(nn.Module):
    def __init__(self, d_model, win_size, norm_layer=nn.LayerNorm):
        super().__init__()
        self.d_model = d_model
        self.win_size = win_size
        self.linear_trans = nn.Linear(win_size * d_model, d_model)
        self.norm = norm_layer(win_size * d_model)

    def forward(self, x):
        batch_size, ts_d, seg_num, d_model = x.shape
        pad_num = seg_num % self.win_size
        if pad_num != 0:
            pad_num = self.win_size - pad_num
            x = torch.cat((x, x[:, :, -pad_num:, :]), dim=-2)
        seg_to_merge = []
        for i in range(self.win_size):
            seg_to_merge.append(x[:, :, i::self.win_size, :])
        x = torch.cat(seg_to_merge, -1)
        x = self.norm(x)
        return self.linear_trans(x)


class Model(nn.Module):
    """Thinklab-SJTU Crossformer encoder: ceil-based padding of the input to a seg_len multiple,
    DSW embedding + pos, scale blocks with SegMerging, per-scale linear prediction summed."""

    def __init__(self, data_dim=3, in_len=14, out_len=8, seg_len=4, win_size=2, factor=2, d_model=16, n_heads=2, e_layers=2):
        super().__init__()
        self.data_dim = data_dim
        self.in_len = in_len
        self.out_len = out_len
        self.seg_len = seg_len
        self.pad_in_len = ceil(1.0 * in_len / seg_len) * seg_len
        self.pad_out_len = ceil(1.0 * out_len / seg_len) * seg_len
        self.in_len_add = self.pad_in_len - self.in_len
        self.enc_value_embedding = DSW_embedding(seg_len, d_model)
        self.enc_pos_embedding = nn.Parameter(torch.randn(1, data_dim, (self.pad_in_len // seg_len), d_model))
        self.pre_norm = nn.LayerNorm(d_model)
        blocks = nn.ModuleList()
        seg_num = self.pad_in_len // seg_len
        for i in range(e_layers):
            merge = SegMerging(d_model, win_size) if i > 0 else None
            if merge is not None:
                seg_num = ceil(seg_num / win_size)
            blocks.append(nn.ModuleList([merge if merge is not None else nn.Identity(),
                                         TwoStageAttentionLayer(seg_num, factor, d_model, n_heads)]))
        self.encode_blocks = blocks
        self.heads = nn.ModuleList([nn.Linear(d_model, self.pad_out_len) for _ in range(e_layers)])

    def forward(self, x_seq):
        batch_size = x_seq.shape[0]
        if self.in_len_add != 0:
            x_seq = torch.cat((x_seq[:, :1, :].expand(-1, self.in_len_add, -1), x_seq), dim=1)
        x_seq = self.enc_value_embedding(x_seq)
        x_seq = self.pre_norm(x_seq + self.enc_pos_embedding)
        preds = 0
        for (merge, tsa), head in zip(self.encode_blocks, self.heads):
            x_seq = tsa(merge(x_seq))
            preds = preds + head(x_seq.mean(2))
        return preds.permute(0, 2, 1)[:, : self.out_len, :]


def make_inputs():
    return (torch.randn(2, 14, 3),)
