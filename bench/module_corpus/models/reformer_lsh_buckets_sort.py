import functools
from functools import partial, reduce, wraps
from operator import mul
import torch
import torch.nn as nn
import torch.nn.functional as F

TOKEN_SELF_ATTN_VALUE = -5e4


def exists(val):
    return val is not None


def default(val, default_val):
    return default_val if val is None else val


def sort_key_val(t1, t2, dim=-1):
    values, indices = t1.sort(dim=dim)
    t2 = t2.expand_as(t1)
    return values, t2.gather(dim, indices)


def batched_index_select(values, indices):
    last_dim = values.shape[-1]
    return values.gather(1, indices[:, :, None].expand(-1, -1, last_dim))


def merge_dims(ind_from, ind_to, tensor):
    shape = list(tensor.shape)
    arr_slice = slice(ind_from, ind_to + 1)
    shape[arr_slice] = [reduce(mul, shape[arr_slice])]
    return tensor.reshape(*shape)


def split_at_index(dim, index, t):
    pre_slices = (slice(None),) * dim
    l = (*pre_slices, slice(None, index))
    r = (*pre_slices, slice(index, None))
    return t[l], t[r]


def look_one_back(x):
    x_extra = torch.cat([x[:, -1:, ...], x[:, :-1, ...]], dim=1)
    return torch.cat([x, x_extra], dim=2)


@functools.lru_cache(maxsize=8)
def hash_offsets(n_hashes: int, n_buckets: int):
    # per-round bucket offsets, cached per (n_hashes, n_buckets)
    offsets = torch.arange(n_hashes)
    return torch.reshape(offsets * n_buckets, (1, -1, 1))


class LSHAttention(nn.Module):
    """lucidrains/reformer-pytorch LSHAttention (trimmed): random-rotation hashing with a fixed seed buffer,
    argsort by (bucket * seqlen + position), chunked attention looking one chunk back, self-token masking,
    undo-sort via a custom scatter, logsumexp-weighted combination over hash rounds."""

    def __init__(self, bucket_size=4, n_hashes=2, causal=False, allow_duplicate_attention=True,
                 attend_across_buckets=True, rehash_each_round=True, drop_for_hash_rate=0.0, random_rotations_per_head=False,
                 return_attn=False):
        super().__init__()
        assert rehash_each_round or allow_duplicate_attention, \
            "The setting {allow_duplicate_attention=False, rehash_each_round=False} is not implemented."
        self.causal = causal
        self.bucket_size = bucket_size
        self.n_hashes = n_hashes
        self._allow_duplicate_attention = allow_duplicate_attention
        self._attend_across_buckets = attend_across_buckets
        self._rehash_each_round = rehash_each_round
        self._random_rotations_per_head = random_rotations_per_head
        self._return_attn = return_attn
        self._cache = {}

    def hash_vectors(self, n_buckets, vecs):
        batch_size = vecs.shape[0]
        device = vecs.device
        assert n_buckets % 2 == 0
        rot_size = n_buckets
        rotations_shape = (batch_size if self._random_rotations_per_head else 1, vecs.shape[-1],
                           self.n_hashes if self._rehash_each_round else 1, rot_size // 2)
        random_rotations = torch.randn(rotations_shape, dtype=vecs.dtype, device=device).expand(batch_size, -1, -1, -1)
        dropped_vecs = vecs
        rotated_vecs = torch.einsum("btf,bfhi->bhti", dropped_vecs, random_rotations)
        if self._rehash_each_round:
            rotated_vecs = torch.cat([rotated_vecs, -rotated_vecs], dim=-1)
            buckets = torch.argmax(rotated_vecs, dim=-1)
        else:
            rotated_vecs = torch.cat([rotated_vecs, -rotated_vecs], dim=-1)
            rotated_vecs = torch.squeeze(rotated_vecs, 1)
            bucket_range = torch.arange(rotated_vecs.shape[-1], device=device)
            bucket_range = torch.reshape(bucket_range, (1, -1))
            bucket_range = bucket_range.expand_as(rotated_vecs)
            _, buckets = sort_key_val(rotated_vecs, bucket_range, dim=-1)
            buckets = buckets[..., -self.n_hashes:].transpose(1, 2)
        offsets = hash_offsets(self.n_hashes, n_buckets).to(device)
        buckets = torch.reshape(buckets + offsets, (batch_size, -1,))
        return buckets

    def forward(self, qk, v, query_len=None, input_mask=None, input_attn_mask=None, **kwargs):
        batch_size, seqlen, dim, device = *qk.shape, qk.device
        query_len = default(query_len, seqlen)
        is_reverse = kwargs.pop("_reverse", False)
        depth = kwargs.pop("_depth", None)
        assert seqlen % (self.bucket_size * 2) == 0, \
            f"Sequence length ({seqlen}) needs to be divisible by target bucket size  x 2 - {self.bucket_size * 2}"
        n_buckets = seqlen // self.bucket_size
        buckets = self.hash_vectors(n_buckets, qk)
        assert int(buckets.shape[1]) == self.n_hashes * seqlen
        total_hashes = self.n_hashes
        ticker = torch.arange(total_hashes * seqlen, device=device).unsqueeze(0).expand_as(buckets)
        buckets_and_t = seqlen * buckets + (ticker % seqlen)
        buckets_and_t = buckets_and_t.detach()
        sbuckets_and_t, sticker = sort_key_val(buckets_and_t, ticker, dim=-1)
        _, undo_sort = sticker.sort(dim=-1)
        del ticker
        sbuckets_and_t = sbuckets_and_t.detach()
        sticker = sticker.detach()
        undo_sort = undo_sort.detach()
        st = (sticker % seqlen)
        sqk = batched_index_select(qk, st)
        sv = batched_index_select(v, st)
        chunk_size = total_hashes * n_buckets
        bq_t = bkv_t = torch.reshape(st, (batch_size, chunk_size, -1))
        bqk = torch.reshape(sqk, (batch_size, chunk_size, -1, dim))
        bv = torch.reshape(sv, (batch_size, chunk_size, -1, dim))
        bq = bqk
        bk = F.normalize(bqk, p=2, dim=-1).type_as(bq)
        bk = look_one_back(bk)
        bv = look_one_back(bv)
        bkv_t = look_one_back(bkv_t)
        dots = torch.einsum("bhie,bhje->bhij", bq, bk) * (dim ** -0.5)
        masked_value = -torch.finfo(dots.dtype).max
        if input_mask is not None:
            input_mask = F.pad(input_mask, (0, seqlen - input_mask.shape[1]), value=True)
            mq = input_mask.gather(1, st).reshape((batch_size, chunk_size, -1))
            mkv = look_one_back(mq)
            mask = mq[:, :, :, None] * mkv[:, :, None, :]
            dots.masked_fill_(~mask, masked_value)
            del mask
        if self.causal:
            mask = bq_t[:, :, :, None] < bkv_t[:, :, None, :]
            dots.masked_fill_(mask, masked_value)
            del mask
        self_mask = bq_t[:, :, :, None] == bkv_t[:, :, None, :]
        dots.masked_fill_(self_mask, TOKEN_SELF_ATTN_VALUE)
        del self_mask
        if not self._attend_across_buckets:
            bq_buckets = bkv_buckets = torch.reshape(sbuckets_and_t // seqlen, (batch_size, chunk_size, -1))
            bkv_buckets = look_one_back(bkv_buckets)
            bucket_mask = bq_buckets[:, :, :, None] != bkv_buckets[:, :, None, :]
            dots.masked_fill_(bucket_mask, masked_value)
            del bucket_mask
        dots_logsumexp = torch.logsumexp(dots, dim=-1, keepdim=True)
        dots = torch.exp(dots - dots_logsumexp).type_as(dots)
        bo = torch.einsum("buij,buje->buie", dots, bv)
        so = torch.reshape(bo, (batch_size, -1, dim))
        slogits = torch.reshape(dots_logsumexp, (batch_size, -1,))
        o = batched_index_select(so, undo_sort)
        logits = slogits.gather(1, undo_sort)
        o = torch.reshape(o, (batch_size, total_hashes, seqlen, dim))
        logits = torch.reshape(logits, (batch_size, total_hashes, seqlen, 1))
        if query_len != seqlen:
            query_slice = (slice(None), slice(None), slice(0, query_len))
            o, logits = o[query_slice], logits[query_slice]
        probs = torch.exp(logits - torch.logsumexp(logits, dim=1, keepdim=True))
        out = torch.sum(o * probs, dim=1)
        attn = torch.empty(0, device=device)
        return out, attn, buckets


class Model(nn.Module):
    """Shared-QK LSH self-attention layer with heads merged into the batch (merge_dims / split_at_index helpers)."""

    def __init__(self, dim=16, heads=2, bucket_size=4, n_hashes=2):
        super().__init__()
        self.heads = heads
        self.toqk = nn.Linear(dim, dim, bias=False)
        self.tov = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.lsh_attn = LSHAttention(bucket_size=bucket_size, n_hashes=n_hashes, causal=True, attend_across_buckets=False)
        self.mem_kv = nn.Parameter(torch.randn(1, 0, dim))

    def forward(self, x, input_mask=None):
        b, t, e, h = *x.shape, self.heads
        dh = e // h
        mem = self.mem_kv.expand(b, -1, -1)
        x_full = torch.cat((x, mem), dim=1)
        qk = self.toqk(x_full)
        v = self.tov(x_full)

        def merge_heads(v):
            return v.view(b, -1, h, dh).transpose(1, 2).reshape(b * h, -1, dh)

        def split_heads(v):
            return v.view(b, h, t, -1).transpose(1, 2).contiguous()

        qk, v = map(merge_heads, (qk, v))
        mask = input_mask.repeat_interleave(h, 0) if input_mask is not None else None
        torch.manual_seed(42)  # reformer-pytorch's Deterministic wrapper records/replays RNG; here a fixed seed
        out, attn, buckets = self.lsh_attn(qk, v, query_len=t, input_mask=mask)
        out = split_heads(out).view(b, t, -1)
        head, tail = split_at_index(1, t // 2, self.to_out(out))
        return head, tail, merge_dims(0, 1, buckets.view(b, h, -1))


def make_inputs():
    mask = torch.ones(2, 16, dtype=torch.bool)
    mask[1, 12:] = False
    return torch.randn(2, 16, 16), mask
