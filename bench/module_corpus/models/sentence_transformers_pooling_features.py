import torch
import torch.nn as nn
import torch.nn.functional as F


class Transformer(nn.Module):
    def __init__(self, vocab=40, dim=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layer = nn.TransformerEncoderLayer(dim, 2, 24, dropout=0.0, batch_first=True)

    def forward(self, features):
        output_tokens = self.layer(self.emb(features["input_ids"]),
                                   src_key_padding_mask=features["attention_mask"] == 0)
        cls_tokens = output_tokens[:, 0, :]
        features.update({"token_embeddings": output_tokens, "cls_token_embeddings": cls_tokens,
                         "attention_mask": features["attention_mask"]})
        return features


class Pooling(nn.Module):
    """sentence-transformers Pooling: mode flags, output_vectors list, mean with
    attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float(), clamp(min=1e-9), max with
    token_embeddings[input_mask_expanded == 0] = -1e9, sqrt-len variant, features.update and
    get_pooling_mode_str via a list of (flag, name) pairs."""

    def __init__(self, word_embedding_dimension, pooling_mode_cls_token=False, pooling_mode_max_tokens=False,
                 pooling_mode_mean_tokens=True, pooling_mode_mean_sqrt_len_tokens=False):
        super(Pooling, self).__init__()
        self.config_keys = ['word_embedding_dimension', 'pooling_mode_cls_token', 'pooling_mode_mean_tokens',
                            'pooling_mode_max_tokens', 'pooling_mode_mean_sqrt_len_tokens']
        self.word_embedding_dimension = word_embedding_dimension
        self.pooling_mode_cls_token = pooling_mode_cls_token
        self.pooling_mode_mean_tokens = pooling_mode_mean_tokens
        self.pooling_mode_max_tokens = pooling_mode_max_tokens
        self.pooling_mode_mean_sqrt_len_tokens = pooling_mode_mean_sqrt_len_tokens
        pooling_mode_multiplier = sum([pooling_mode_cls_token, pooling_mode_max_tokens, pooling_mode_mean_tokens,
                                       pooling_mode_mean_sqrt_len_tokens])
        self.pooling_output_dimension = (pooling_mode_multiplier * word_embedding_dimension)

    def get_pooling_mode_str(self) -> str:
        modes = []
        if self.pooling_mode_cls_token:
            modes.append('cls')
        if self.pooling_mode_mean_tokens:
            modes.append('mean')
        if self.pooling_mode_max_tokens:
            modes.append('max')
        if self.pooling_mode_mean_sqrt_len_tokens:
            modes.append('mean_sqrt_len_tokens')
        return "+".join(modes)

    def get_config_dict(self):
        return {key: self.__dict__[key] for key in self.config_keys}

    def forward(self, features):
        token_embeddings = features['token_embeddings']
        attention_mask = features['attention_mask']
        output_vectors = []
        if self.pooling_mode_cls_token:
            cls_token = features.get('cls_token_embeddings', token_embeddings[:, 0])
            output_vectors.append(cls_token)
        if self.pooling_mode_max_tokens:
            input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
            token_embeddings = token_embeddings.clone()
            token_embeddings[input_mask_expanded == 0] = -1e9
            max_over_time = torch.max(token_embeddings, 1)[0]
            output_vectors.append(max_over_time)
            token_embeddings = features['token_embeddings']
        if self.pooling_mode_mean_tokens or self.pooling_mode_mean_sqrt_len_tokens:
            input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
            sum_embeddings = torch.sum(token_embeddings * input_mask_expanded, 1)
            if 'token_weights_sum' in features:
                sum_mask = features['token_weights_sum'].unsqueeze(-1).expand(sum_embeddings.size())
            else:
                sum_mask = input_mask_expanded.sum(1)
            sum_mask = torch.clamp(sum_mask, min=1e-9)
            if self.pooling_mode_mean_tokens:
                output_vectors.append(sum_embeddings / sum_mask)
            if self.pooling_mode_mean_sqrt_len_tokens:
                output_vectors.append(sum_embeddings / torch.sqrt(sum_mask))
        output_vector = torch.cat(output_vectors, 1)
        features.update({'sentence_embedding': output_vector})
        return features


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = Transformer()
        self.pooling = Pooling(12, pooling_mode_cls_token=True, pooling_mode_max_tokens=True,
                               pooling_mode_mean_sqrt_len_tokens=True)
        self.normalize = True

    def forward(self, input_ids, attention_mask):
        features = {"input_ids": input_ids, "attention_mask": attention_mask}
        features = self.pooling(self.transformer(features))
        emb = features["sentence_embedding"]
        if self.normalize:
            emb = F.normalize(emb, p=2, dim=1)
        cos = emb @ emb.t()
        return emb, cos, self.pooling.get_pooling_mode_str(), self.pooling.get_config_dict()


def make_inputs():
    return torch.randint(1, 40, (3, 6)), torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]])
