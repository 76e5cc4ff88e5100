import torch
import torch.nn as nn
import torch.nn.functional as F


class NCF(nn.Module):
    """guoyang9 NCF: model in {'MLP', 'GMF', 'NeuMF-end', 'NeuMF-pre'}; embedding sizes from factor_num * 2**(num_layers-1)."""

    def __init__(self, user_num, item_num, factor_num, num_layers, dropout, model, GMF_model=None, MLP_model=None):
        super(NCF, self).__init__()
        self.dropout = dropout
        self.model = model
        self.GMF_model = GMF_model
        self.MLP_model = MLP_model
        self.embed_user_GMF = nn.Embedding(user_num, factor_num)
        self.embed_item_GMF = nn.Embedding(item_num, factor_num)
        self.embed_user_MLP = nn.Embedding(user_num, factor_num * (2 ** (num_layers - 1)))
        self.embed_item_MLP = nn.Embedding(item_num, factor_num * (2 ** (num_layers - 1)))
        MLP_modules = []
        for i in range(num_layers):
            input_size = factor_num * (2 ** (num_layers - i))
            MLP_modules.append(nn.Dropout(p=self.dropout))
            MLP_modules.append(nn.Linear(input_size, input_size // 2))
            MLP_modules.append(nn.ReLU())
        self.MLP_layers = nn.Sequential(*MLP_modules)
        if self.model in ["MLP", "GMF"]:
            predict_size = factor_num
        else:
            predict_size = factor_num * 2
        self.predict_layer = nn.Linear(predict_size, 1)

    def forward(self, user, item):
        if not self.model == "MLP":
            embed_user_GMF = self.embed_user_GMF(user)
            embed_item_GMF = self.embed_item_GMF(item)
            output_GMF = embed_user_GMF * embed_item_GMF
        if not self.model == "GMF":
            embed_user_MLP = self.embed_user_MLP(user)
            embed_item_MLP = self.embed_item_MLP(item)
            interaction = torch.cat((embed_user_MLP, embed_item_MLP), -1)
            output_MLP = self.MLP_layers(interaction)
        if self.model == "GMF":
            concat = output_GMF
        elif self.model == "MLP":
            concat = output_MLP
        else:
            concat = torch.cat((output_GMF, output_MLP), -1)
        prediction = self.predict_layer(concat)
        return prediction.view(-1)


class MultiHeadSelfAttentionInteract(nn.Module):
    """AutoInt interacting layer: per-field multi-head self attention with residual projection."""

    def __init__(self, embedding_dim, att_embedding_size=8, head_num=2, use_res=True, scaling=False):
        super().__init__()
        if head_num <= 0:
            raise ValueError("head_num must be a int > 0")
        self.att_embedding_size = att_embedding_size
        self.head_num = head_num
        self.use_res = use_res
        self.scaling = scaling
        self.W_Query = nn.Parameter(torch.randn(embedding_dim, att_embedding_size * head_num) * 0.05)
        self.W_key = nn.Parameter(torch.randn(embedding_dim, att_embedding_size * head_num) * 0.05)
        self.W_Value = nn.Parameter(torch.randn(embedding_dim, att_embedding_size * head_num) * 0.05)
        if self.use_res:
            self.W_Res = nn.Parameter(torch.randn(embedding_dim, att_embedding_size * head_num) * 0.05)

    def forward(self, inputs):
        if len(inputs.shape) != 3:
            raise ValueError("Unexpected inputs dimensions %d, expect to be 3 dimensions" % (len(inputs.shape)))
        querys = torch.tensordot(inputs, self.W_Query, dims=([-1], [0]))
        keys = torch.tensordot(inputs, self.W_key, dims=([-1], [0]))
        values = torch.tensordot(inputs, self.W_Value, dims=([-1], [0]))
        querys = torch.stack(torch.split(querys, self.att_embedding_size, dim=2))
        keys = torch.stack(torch.split(keys, self.att_embedding_size, dim=2))
        values = torch.stack(torch.split(values, self.att_embedding_size, dim=2))
        inner_product = torch.einsum("bnik,bnjk->bnij", querys, keys)
        if self.scaling:
            inner_product /= self.att_embedding_size ** 0.5
        self.normalized_att_scores = F.softmax(inner_product, dim=-1)
        result = torch.matmul(self.normalized_att_scores, values)
        result = torch.cat(torch.split(result, 1), dim=-1)
        result = torch.squeeze(result, dim=0)
        if self.use_res:
            result += torch.tensordot(inputs, self.W_Res, dims=([-1], [0]))
        return F.relu(result)


class Model(nn.Module):
    def __init__(self, user_num=10, item_num=20, field_dims=(5, 7, 3), embed_dim=8):
        super().__init__()
        self.ncf = nn.ModuleDict({m: NCF(user_num, item_num, 4, 2, 0.1, m) for m in ["MLP", "GMF", "NeuMF-end"]})
        self.offsets = tuple([0] + list(torch.tensor(field_dims).cumsum(0)[:-1].tolist()))
        self.embedding = nn.Embedding(sum(field_dims), embed_dim)
        self.int_layers = nn.Sequential(MultiHeadSelfAttentionInteract(embed_dim, scaling=True),
                                        MultiHeadSelfAttentionInteract(16))
        self.fc = nn.Linear(len(field_dims) * 16, 1)

    def forward(self, user, item, fields):
        scores = {name: m(user, item) for name, m in self.ncf.items()}
        x = fields + fields.new_tensor(self.offsets).unsqueeze(0)
        att = self.int_layers(self.embedding(x))
        ctr = torch.sigmoid(self.fc(att.flatten(1)).squeeze(1))
        return scores, ctr


def make_inputs():
    return torch.tensor([1, 4, 7]), torch.tensor([3, 11, 19]), torch.tensor([[0, 6, 2], [4, 1, 0], [2, 3, 1]])
