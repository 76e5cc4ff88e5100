import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Alphabet:
    def __init__(self):
        self.standard_toks = list("LAGVSERTIDPKQNFYMHWC")
        self.prepend_toks = ("<cls>", "<pad>", "<eos>", "<unk>")
        self.append_toks = ("<mask>",)
        self.all_toks = list(self.prepend_toks) + self.standard_toks + list(self.append_toks)
        self.tok_to_idx = {tok: i for i, tok in enumerate(self.all_toks)}
        self.padding_idx = self.get_idx("<pad>")
        self.mask_idx = self.get_idx("<mask>")
        self.cls_idx = self.get_idx("<cls>")
        self.eos_idx = self.get_idx("<eos>")

    def __len__(self):
        return len(self.all_toks)

    def get_idx(self, tok):
        return self.tok_to_idx.get(tok, self.tok_to_idx["<unk>"])


class ESM1bLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-12, affine=True):
        super().__init__()
        self.hidden_size = (hidden_size,) if isinstance(hidden_size, int) else tuple(hidden_size)
        self.eps = eps
        self.affine = bool(affine)
        if self.affine:
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.bias = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x):
        dims = tuple(-(i + 1) for i in range(len(self.hidden_size)))
        means = x.mean(dims, keepdim=True)
        x_zeromean = x - means
        variances = x_zeromean.pow(2).mean(dims, keepdim=True)
        x = x_zeromean / torch.sqrt(variances + self.eps)
        if self.affine:
            x = (self.weight * x) + self.bias
        return x


class ContactPredictionHead(nn.Module):
    def __init__(self, in_features, prepend_bos, append_eos, eos_idx=None):
        super().__init__()
        self.prepend_bos = prepend_bos
        self.append_eos = append_eos
        self.eos_idx = eos_idx
        self.regression = nn.Linear(in_features, 1)

    def forward(self, tokens, attentions):
        if self.append_eos:
            eos_mask = tokens.ne(self.eos_idx).to(attentions)
            eos_mask = eos_mask.unsqueeze(1) * eos_mask.unsqueeze(2)
            attentions = attentions * eos_mask[:, None, None, :, :]
            attentions = attentions[..., :-1, :-1]
        if self.prepend_bos:
            attentions = attentions[..., 1:, 1:]
        batch_size, layers, heads, seqlen, _ = attentions.size()
        attentions = attentions.view(batch_size, layers * heads, seqlen, seqlen)
        attentions = attentions + attentions.transpose(-1, -2)
        a1 = attentions.sum(-1, keepdims=True)
        a2 = attentions.sum(-2, keepdims=True)
        a12 = attentions.sum((-1, -2), keepdims=True)
        normalized = attentions - (a1 * a2) / a12
        return torch.sigmoid(self.regression(normalized.permute(0, 2, 3, 1)).squeeze(3))


class Model(nn.Module):
    """fair-esm ESM2 embedding: token dropout (mask tokens zeroed, rescale by observed mask ratio), padding zeroing,
    transformer layers returning attention maps, repr_layers dict and contact head."""

    def __init__(self, num_layers=2, embed_dim=16, attention_heads=2, token_dropout=True):
        super().__init__()
        self.alphabet = Alphabet()
        self.num_layers = num_layers
        self.embed_dim = embed_dim
        self.attention_heads = attention_heads
        self.token_dropout = token_dropout
        self.embed_scale = 1
        self.embed_tokens = nn.Embedding(len(self.alphabet), embed_dim, padding_idx=self.alphabet.padding_idx)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(embed_dim, attention_heads, embed_dim * 2, dropout=0.0,
                                                                batch_first=False, norm_first=True)
                                     for _ in range(num_layers)])
        self.emb_layer_norm_after = ESM1bLayerNorm(embed_dim)
        self.contact_head = ContactPredictionHead(num_layers * attention_heads, True, True, eos_idx=self.alphabet.eos_idx)

    def forward(self, tokens, repr_layers=(), need_head_weights=False, return_contacts=True):
        if return_contacts:
            need_head_weights = True
        assert tokens.ndim == 2
        padding_mask = tokens.eq(self.alphabet.padding_idx)
        x = self.embed_scale * self.embed_tokens(tokens)
        if self.token_dropout:
            x.masked_fill_((tokens == self.alphabet.mask_idx).unsqueeze(-1), 0.0)
            mask_ratio_train = 0.15 * 0.8
            src_lengths = (~padding_mask).sum(-1)
            mask_ratio_observed = (tokens == self.alphabet.mask_idx).sum(-1).to(x.dtype) / src_lengths
            x = x * (1 - mask_ratio_train) / (1 - mask_ratio_observed)[:, None, None]
        if padding_mask is not None:
            x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
        repr_layers = set(repr_layers)
        hidden_representations = {}
        if 0 in repr_layers:
            hidden_representations[0] = x
        if need_head_weights:
            attn_weights = []
        x = x.transpose(0, 1)
        if not padding_mask.any():
            padding_mask = None
        for layer_idx, layer in enumerate(self.layers):
            h = layer.norm1(x)
            attn, attn_w = layer.self_attn(h, h, h, key_padding_mask=padding_mask, need_weights=need_head_weights,
                                           average_attn_weights=False)
            x = x + attn
            x = x + layer._ff_block(layer.norm2(x))
            if (layer_idx + 1) in repr_layers:
                hidden_representations[layer_idx + 1] = x.transpose(0, 1)
            if need_head_weights:
                attn_weights.append(attn_w)
        x = self.emb_layer_norm_after(x)
        x = x.transpose(0, 1)
        if (layer_idx + 1) in repr_layers:
            hidden_representations[layer_idx + 1] = x
        result = {"logits": x @ self.embed_tokens.weight.t(), "representations": hidden_representations}
        if need_head_weights:
            attentions = torch.stack(attn_weights, 1)
            if padding_mask is not None:
                attention_mask = 1 - padding_mask.type_as(attentions)
                attention_mask = attention_mask.unsqueeze(1) * attention_mask.unsqueeze(2)
                attentions = attentions * attention_mask[:, None, None, :, :]
            result["attentions"] = attentions
            if return_contacts:
                result["contacts"] = self.contact_head(tokens, attentions)
        return result


def make_inputs():
    a = Alphabet()
    seq1 = [a.cls_idx] + [a.get_idx(c) for c in "MKTAYIA"] + [a.eos_idx]
    seq2 = [a.cls_idx] + [a.get_idx(c) for c in "MK"] + [a.mask_idx] + [a.get_idx(c) for c in "LW"] + [a.eos_idx] + [a.padding_idx] * 2
    return (torch.tensor([seq1, seq2]),), {"repr_layers": [0, 2]}
