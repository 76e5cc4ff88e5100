import torch
import torch.nn as nn
import torch.nn.functional as F


def activation_layer(act_name, hidden_size=None, dice_dim=2):
    if isinstance(act_name, str):
        if act_name.lower() == "sigmoid":
            act_layer = nn.Sigmoid()
        elif act_name.lower() == "linear":
            act_layer = nn.Identity()
        elif act_name.lower() == "relu":
            act_layer = nn.ReLU(inplace=True)
        elif act_name.lower() == "prelu":
            act_layer = nn.PReLU()
        else:
            raise NotImplementedError
    elif issubclass(act_name, nn.Module):
        act_layer = act_name()
    else:
        raise NotImplementedError
    return act_layer


class CIN(nn.Module):
    """Compressed Interaction Network (DeepCTR-Torch xDeepFM): outer products per layer via einsum, Conv1d as
    the field-compression, split_half keeps half the maps for the next layer and half for the output."""

    def __init__(self, field_size, layer_size=(8, 8), activation="relu", split_half=True, l2_reg=1e-5, seed=1024, device="cpu"):
        super(CIN, self).__init__()
        if len(layer_size) == 0:
            raise ValueError("layer_size must be a list(tuple) of length greater than 1")
        self.layer_size = layer_size
        self.field_nums = [field_size]
        self.split_half = split_half
        self.activation = activation_layer(activation)
        self.l2_reg = l2_reg
        self.seed = seed
        self.conv1ds = nn.ModuleList()
        for i, size in enumerate(self.layer_size):
            self.conv1ds.append(nn.Conv1d(self.field_nums[-1] * self.field_nums[0], size, 1))
            if self.split_half:
                if i != len(self.layer_size) - 1 and size % 2 > 0:
                    raise ValueError("layer_size must be even number except for the last layer when split_half=True")
                self.field_nums.append(size // 2)
            else:
                self.field_nums.append(size)
        self.to(device)

    def forward(self, inputs):
        if len(inputs.shape) != 3:
            raise ValueError("Unexpected inputs dimensions %d, expect to be 3 dimensions" % (len(inputs.shape)))
        batch_size = inputs.shape[0]
        dim = inputs.shape[-1]
        hidden_nn_layers = [inputs]
        final_result = []
        for i, size in enumerate(self.layer_size):
            x = torch.einsum("bhd,bmd->bhmd", hidden_nn_layers[-1], hidden_nn_layers[0])
            x = x.reshape(batch_size, hidden_nn_layers[-1].shape[1] * hidden_nn_layers[0].shape[1], dim)
            x = self.conv1ds[i](x)
            if self.activation is None or self.activation == "linear":
                curr_out = x
            else:
                curr_out = self.activation(x)
            if self.split_half:
                if i != len(self.layer_size) - 1:
                    next_hidden, direct_connect = torch.split(curr_out, 2 * [size // 2], 1)
                else:
                    direct_connect = curr_out
                    next_hidden = 0
            else:
                direct_connect = curr_out
                next_hidden = curr_out
            final_result.append(direct_connect)
            hidden_nn_layers.append(next_hidden)
        result = torch.cat(final_result, dim=1)
        result = torch.sum(result, -1)
        return result


class DNN(nn.Module):
    def __init__(self, inputs_dim, hidden_units, activation="relu", dropout_rate=0, use_bn=False, init_std=0.0001):
        super(DNN, self).__init__()
        self.dropout = nn.Dropout(dropout_rate)
        self.use_bn = use_bn
        if len(hidden_units) == 0:
            raise ValueError("hidden_units is empty!!")
        hidden_units = [inputs_dim] + list(hidden_units)
        self.linears = nn.ModuleList([nn.Linear(hidden_units[i], hidden_units[i + 1]) for i in range(len(hidden_units) - 1)])
        if self.use_bn:
            self.bn = nn.ModuleList([nn.BatchNorm1d(hidden_units[i + 1]) for i in range(len(hidden_units) - 1)])
        self.activation_layers = nn.ModuleList([activation_layer(activation, hidden_units[i + 1]) for i in range(len(hidden_units) - 1)])
        for name, tensor in self.linears.named_parameters():
            if "weight" in name:
                nn.init.normal_(tensor, mean=0, std=init_std)

    def forward(self, inputs):
        deep_input = inputs
        for i in range(len(self.linears)):
            fc = self.linears[i](deep_input)
            if self.use_bn:
                fc = self.bn[i](fc)
            fc = self.activation_layers[i](fc)
            fc = self.dropout(fc)
            deep_input = fc
        return deep_input


class Model(nn.Module):
    def __init__(self, vocab_sizes=(7, 9, 5, 11), emb=4):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(v, emb) for v in vocab_sizes])
        self.linear_emb = nn.ModuleList([nn.Embedding(v, 1) for v in vocab_sizes])
        field = len(vocab_sizes)
        self.cin = CIN(field, (8, 6), activation="prelu", split_half=True)
        self.cin_full = CIN(field, (4,), activation=nn.Tanh, split_half=False)
        self.cin_linear = nn.Linear(4 + 6 + 4, 1, bias=False)
        self.dnn = DNN(field * emb, (16, 8), activation="relu", use_bn=True, init_std=0.1)
        self.dnn_linear = nn.Linear(8, 1, bias=False)

    def forward(self, X):
        embs = [e(X[:, i:i + 1]) for i, e in enumerate(self.embeddings)]
        cin_input = torch.cat(embs, dim=1)
        linear_logit = torch.sum(torch.cat([e(X[:, i:i + 1]) for i, e in enumerate(self.linear_emb)], dim=-1), dim=-1)
        cin_output = torch.cat([self.cin(cin_input), self.cin_full(cin_input)], 1)
        cin_logit = self.cin_linear(cin_output)
        dnn_logit = self.dnn_linear(self.dnn(torch.flatten(cin_input, 1)))
        return torch.sigmoid(linear_logit + cin_logit + dnn_logit)


def make_inputs():
    return (torch.stack([torch.randint(0, v, (5,)) for v in (7, 9, 5, 11)], 1),)
