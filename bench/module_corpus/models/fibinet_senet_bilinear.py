import itertools
from collections import OrderedDict, namedtuple
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_GROUP_NAME = "default_group"


class SparseFeat(namedtuple("SparseFeat", ["name", "vocabulary_size", "embedding_dim", "use_hash", "dtype", "embedding_name",
                                           "group_name"])):
    __slots__ = ()

    def __new__(cls, name, vocabulary_size, embedding_dim=4, use_hash=False, dtype="int32", embedding_name=None,
                group_name=DEFAULT_GROUP_NAME):
        if embedding_name is None:
            embedding_name = name
        if embedding_dim == "auto":
            embedding_dim = 6 * int(pow(vocabulary_size, 0.25))
        return super(SparseFeat, cls).__new__(cls, name, vocabulary_size, embedding_dim, use_hash, dtype, embedding_name,
                                              group_name)

    def __hash__(self):
        return self.name.__hash__()


class DenseFeat(namedtuple("DenseFeat", ["name", "dimension", "dtype"])):
    __slots__ = ()

    def __new__(cls, name, dimension=1, dtype="float32"):
        return super(DenseFeat, cls).__new__(cls, name, dimension, dtype)

    def __hash__(self):
        return self.name.__hash__()


def build_input_features(feature_columns):
    features = OrderedDict()
    start = 0
    for feat in feature_columns:
        feat_name = feat.name
        if feat_name in features:
            continue
        if isinstance(feat, SparseFeat):
            features[feat_name] = (start, start + 1)
            start += 1
        elif isinstance(feat, DenseFeat):
            features[feat_name] = (start, start + feat.dimension)
            start += feat.dimension
        else:
            raise TypeError("Invalid feature column type,got", type(feat))
    return features


def create_embedding_matrix(feature_columns, init_std=0.0001, sparse=False, device="cpu"):
    sparse_feature_columns = list(filter(lambda x: isinstance(x, SparseFeat), feature_columns)) if len(feature_columns) else []
    embedding_dict = nn.ModuleDict({feat.embedding_name: nn.Embedding(feat.vocabulary_size, feat.embedding_dim, sparse=sparse)
                                    for feat in sparse_feature_columns})
    for tensor in embedding_dict.values():
        nn.init.normal_(tensor.weight, mean=0, std=init_std)
    return embedding_dict.to(device)


def combined_dnn_input(sparse_embedding_list, dense_value_list):
    if len(sparse_embedding_list) > 0 and len(dense_value_list) > 0:
        sparse_dnn_input = torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1)
        dense_dnn_input = torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)
        return torch.cat([sparse_dnn_input, dense_dnn_input], dim=-1)
    elif len(sparse_embedding_list) > 0:
        return torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1)
    elif len(dense_value_list) > 0:
        return torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)
    else:
        raise NotImplementedError


class SENETLayer(nn.Module):
    def __init__(self, filed_size, reduction_ratio=3, seed=1024, device="cpu"):
        super(SENETLayer, self).__init__()
        self.seed = seed
        self.filed_size = filed_size
        self.reduction_size = max(1, filed_size // reduction_ratio)
        self.excitation = nn.Sequential(nn.Linear(self.filed_size, self.reduction_size, bias=False), nn.ReLU(),
                                        nn.Linear(self.reduction_size, self.filed_size, bias=False), nn.ReLU())
        self.to(device)

    def forward(self, inputs):
        if len(inputs.shape) != 3:
            raise ValueError("Unexpected inputs dimensions %d, expect to be 3 dimensions" % (len(inputs.shape)))
        Z = torch.mean(inputs, dim=-1, out=None)
        A = self.excitation(Z)
        V = torch.mul(inputs, torch.unsqueeze(A, dim=2))
        return V


class BilinearInteraction(nn.Module):
    def __init__(self, filed_size, embedding_size, bilinear_type="interaction", seed=1024, device="cpu"):
        super(BilinearInteraction, self).__init__()
        self.bilinear_type = bilinear_type
        self.seed = seed
        self.bilinear = nn.ModuleList()
        if self.bilinear_type == "all":
            self.bilinear = nn.Linear(embedding_size, embedding_size, bias=False)
        elif self.bilinear_type == "each":
            for _ in range(filed_size):
                self.bilinear.append(nn.Linear(embedding_size, embedding_size, bias=False))
        elif self.bilinear_type == "interaction":
            for _, _ in itertools.combinations(range(filed_size), 2):
                self.bilinear.append(nn.Linear(embedding_size, embedding_size, bias=False))
        else:
            raise NotImplementedError
        self.to(device)

    def forward(self, inputs):
        if len(inputs.shape) != 3:
            raise ValueError("Unexpected inputs dimensions %d, expect to be 3 dimensions" % (len(inputs.shape)))
        inputs = torch.split(inputs, 1, dim=1)
        if self.bilinear_type == "all":
            p = [torch.mul(self.bilinear(v_i), v_j) for v_i, v_j in itertools.combinations(inputs, 2)]
        elif self.bilinear_type == "each":
            p = [torch.mul(self.bilinear[i](inputs[i]), inputs[j]) for i, j in itertools.combinations(range(len(inputs)), 2)]
        elif self.bilinear_type == "interaction":
            p = [torch.mul(bilinear(v[0]), v[1]) for v, bilinear in zip(itertools.combinations(inputs, 2), self.bilinear)]
        else:
            raise NotImplementedError
        return torch.cat(p, dim=1)


class Model(nn.Module):
    """shenweichen/DeepCTR-Torch FiBiNET: namedtuple feature columns with __new__ defaults, feature_index OrderedDict
    of (start, end) column slices into one float input matrix, ModuleDict embeddings, SENET + bilinear interactions
    over itertools.combinations, combined_dnn_input, linear + DNN logit, sigmoid output."""

    def __init__(self, bilinear_type="interaction"):
        super().__init__()
        self.feature_columns = [SparseFeat("user", 10, 4), SparseFeat("item", 12, 4), SparseFeat("cate", 5, 4),
                                SparseFeat("hour", 24, 4, embedding_name="hour_emb"), DenseFeat("price", 1), DenseFeat("ctx", 2)]
        self.feature_index = build_input_features(self.feature_columns)
        self.embedding_dict = create_embedding_matrix(self.feature_columns, init_std=0.1)
        self.sparse_feature_columns = [f for f in self.feature_columns if isinstance(f, SparseFeat)]
        self.dense_feature_columns = [f for f in self.feature_columns if isinstance(f, DenseFeat)]
        field_size = len(self.sparse_feature_columns)
        self.SE = SENETLayer(field_size, 3)
        self.Bilinear = BilinearInteraction(field_size, 4, bilinear_type)
        self.Bilinear_each = BilinearInteraction(field_size, 4, "each")
        n_pairs = field_size * (field_size - 1) // 2
        dnn_in = 2 * n_pairs * 4 + 3
        self.dnn = nn.Sequential(nn.Linear(dnn_in, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.dnn_linear = nn.Linear(8, 1, bias=False)
        self.linear_dense = nn.Linear(3, 1)
        self.out_bias = nn.Parameter(torch.zeros((1,)))

    def input_from_feature_columns(self, X):
        sparse_embedding_list = [self.embedding_dict[feat.embedding_name](
            X[:, self.feature_index[feat.name][0]:self.feature_index[feat.name][1]].long())
            for feat in self.sparse_feature_columns]
        dense_value_list = [X[:, self.feature_index[feat.name][0]:self.feature_index[feat.name][1]]
                            for feat in self.dense_feature_columns]
        return sparse_embedding_list, dense_value_list

    def forward(self, X):
        sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X)
        sparse_embedding_input = torch.cat(sparse_embedding_list, dim=1)
        senet_output = self.SE(sparse_embedding_input)
        senet_bilinear_out = self.Bilinear(senet_output)
        bilinear_out = self.Bilinear_each(sparse_embedding_input)
        linear_logit = self.linear_dense(torch.cat(dense_value_list, dim=-1))
        temp = torch.split(torch.cat((senet_bilinear_out, bilinear_out), dim=1), 1, dim=1)
        dnn_input = combined_dnn_input(temp, dense_value_list)
        dnn_output = self.dnn(dnn_input)
        dnn_logit = self.dnn_linear(dnn_output)
        logit = linear_logit + dnn_logit + self.out_bias
        return torch.sigmoid(logit)


def make_inputs():
    g = torch.Generator().manual_seed(3)
    cols = [torch.randint(0, 10, (4, 1), generator=g), torch.randint(0, 12, (4, 1), generator=g),
            torch.randint(0, 5, (4, 1), generator=g), torch.randint(0, 24, (4, 1), generator=g)]
    X = torch.cat([c.float() for c in cols] + [torch.rand(4, 1, generator=g), torch.randn(4, 2, generator=g)], 1)
    return (X,)
