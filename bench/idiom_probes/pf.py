# nn.Module features
import torch, torch.nn as nn, torch.nn.functional as F
from common import x, xr
import common
P = []
probe = common.collector(P)
torch.manual_seed(1)

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
        self.act = nn.ReLU()
        self.d = nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Tanh()})
        self.pl = nn.ParameterList([nn.Parameter(torch.randn(3)) for _ in range(2)])
        self.pd = nn.ParameterDict({"w": nn.Parameter(torch.randn(3)), "v": nn.Parameter(torch.randn(3))})
        self.register_buffer("running", torch.zeros(3))
        self.register_buffer("count", torch.zeros((), dtype=torch.long))
        self.calls = 0
        self.scale = 2.0
    def forward(self, x):
        for i, l in enumerate(self.layers):
            x = l(x)
            if i < len(self.layers) - 1:
                x = self.act(x)
        return x

m0 = MLP()

@probe(m0, x)
def modulelist_enumerate_len(m, x):
    return m(x)

@probe(m0, x)
def modulelist_slice_negative(m, x):
    for l in m.layers[1:]:
        x = l(x)
    return m.layers[-1](x) + len(m.layers[:2])

@probe(m0, x)
def modulelist_reversed_zip(m, x):
    for l, k in zip(reversed(m.layers), range(3)):
        x = l(x) * k
    return x

@probe(m0, x)
def moduledict_items_keys(m, x):
    out = x
    for k, mod in m.d.items():
        out = mod(out)
    return out + ("a" in m.d) + len(m.d) + len(list(m.d.keys()))

@probe(m0, x)
def moduledict_index_by_str(m, x):
    key = "b" if x.shape[0] > 2 else "a"
    return m.d[key](x)

@probe(m0, x)
def parameterlist_iter(m, x):
    return x * sum(p.sum() for p in m.pl) + m.pl[0] + m.pl[-1] * len(m.pl)

@probe(m0, x)
def parameterdict_access(m, x):
    out = x * m.pd["w"]
    for k in m.pd:
        out = out + m.pd[k]
    for k, v in m.pd.items():
        out = out * v.sum()
    return out

@probe(m0, x)
def named_parameters_filter(m, x):
    s = 0
    for n, p in m.named_parameters():
        if "bias" in n:
            s = s + p.sum()
    return x * s

@probe(m0, x)
def named_modules_count_isinstance(m, x):
    n = sum(1 for _, mod in m.named_modules() if isinstance(mod, nn.Linear))
    return x * n + len(list(m.modules()))

@probe(m0, x)
def children_iteration(m, x):
    for c in m.children():
        if isinstance(c, nn.ReLU):
            x = c(x)
    return x

@probe(m0, x)
def buffers_iteration(m, x):
    return x + sum(b.float().sum() for b in m.buffers()) + len(list(m.named_buffers()))

@probe(m0, x)
def buffer_reassign(m, x):
    m.running = m.running * 0.9 + x.mean(0) * 0.1
    return m.running + 1

@probe(m0, x)
def buffer_inplace_update(m, x):
    m.count.add_(1)
    m.running.mul_(0.5).add_(x.sum(0))
    return x * m.count

@probe(m0, x)
def module_int_attr_mutation(m, x):
    m.calls += 1
    m.new_flag = True
    return x * m.calls

@probe(m0, x)
def module_eval_inside(m, x):
    m.eval()
    y = x * (2 if m.training else 3)
    m.train()
    return y

@probe(m0, x)
def parameters_next_dtype(m, x):
    p = next(m.parameters())
    return x.to(p.dtype) * p.shape[0] + (p.device == x.device)

@probe(m0, x)
def getattr_module_by_fstring(m, x):
    for i in range(2):
        x = getattr(m.layers, str(i))(x)
    return x

@probe(m0, x)
def sgd_step_no_grad_param_update(m, x):
    with torch.no_grad():
        for p in m.layers[0].parameters():
            p.sub_(0.1 * p)
    return m.layers[0](x)

@probe(m0, x)
def param_requires_grad_branch(m, x):
    n = sum(p.numel() for p in m.parameters() if p.requires_grad)
    return x * n

class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.lin.register_forward_hook(lambda mod, inp, out: out * 2)
        self.lin.register_forward_pre_hook(lambda mod, inp: (inp[0] + 1,))
    def forward(self, x):
        return self.lin(x)

@probe(Hooked(), x)
def forward_hooks(m, x):
    return m(x)

class KW(nn.Module):
    def __init__(self):
        super().__init__(); self.lin = nn.Linear(3, 3)
    def forward(self, x, scale=1.0, *, shift=0):
        return self.lin(x) * scale + shift

@probe(KW(), x)
def module_call_kwargs(m, x):
    return m(x, 2.0, shift=1) + m(x, scale=3.0)

class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 3), nn.LayerNorm(3))
        self.sub2 = KW()
    def forward(self, x):
        return self.sub(x) + self.sub2.lin.weight.shape[0]

@probe(Nested(), x)
def nested_sequential(m, x):
    return m(x)

@probe(Nested(), x)
def sequential_slice_len_iter(m, x):
    y = m.sub[:2](x)
    for i, l in enumerate(m.sub):
        if i >= 2: y = l(y)
    return y * len(m.sub) + isinstance(m.sub, nn.Sequential)

class WithProp(nn.Module):
    def __init__(self):
        super().__init__(); self.w = nn.Parameter(torch.randn(3))
    @property
    def w2(self): return self.w * 2
    def helper(self, t): return t * self.w2
    def forward(self, x): return self.helper(x)

@probe(WithProp(), x)
def module_property_and_helper(m, x):
    return m(x) + m.helper(x)

@probe(nn.Linear(3, 3), x)
def functional_linear_from_module(m, x):
    return F.linear(x, m.weight, m.bias) + (m.bias is not None) + m.in_features

@probe(nn.Linear(3, 3, bias=False), x)
def bias_none_branch(m, x):
    y = F.linear(x, m.weight)
    if m.bias is not None:
        y = y + m.bias
    return y

class DropM(nn.Module):
    def __init__(self):
        super().__init__(); self.drop = nn.Dropout(0.5)
    def forward(self, x):
        return self.drop(x) + F.dropout(x, 0.5, training=self.training)

_dm = DropM().eval()

@probe(_dm, x)
def dropout_eval_mode(m, x):
    return m(x)

@probe(nn.BatchNorm1d(3), x)
def batchnorm_train_updates_buffers(m, x):
    return m(x)

@probe(nn.BatchNorm1d(3).eval(), x)
def batchnorm_eval(m, x):
    return m(x)

@probe(x)
def module_created_inside(x):
    return nn.ReLU()(x) + nn.Softmax(dim=-1)(x) + nn.Identity()(x) + nn.Flatten(0)(x).sum()

class MyLin(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2

@probe(MyLin(3, 3), x)
def subclass_linear_super_forward(m, x):
    return m(x)

@probe(nn.Embedding(10, 3), torch.tensor([[1, 2], [3, 9]]))
def embedding_long_input(m, idx):
    return m(idx).sum(1)

@probe(nn.MultiheadAttention(3, 1, batch_first=True), x.unsqueeze(0))
def multihead_attention(m, x):
    out, w = m(x, x, x)
    return out, w

@probe(nn.Conv2d(2, 4, 3, padding=1), torch.randn(1, 2, 5, 5))
def conv2d_and_attrs(m, x):
    return m(x) * m.kernel_size[0] + m.out_channels

@probe(nn.LSTM(3, 4, batch_first=True), x.unsqueeze(0))
def lstm_module(m, x):
    out, (h, c) = m(x)
    return out, h, c

class Modes(nn.Module):
    def __init__(self):
        super().__init__(); self.lin = nn.Linear(3, 3)
    def forward(self, x):
        if self.training:
            return self.lin(x)
        return self.lin(x) * 0

@probe(Modes().eval(), x)
def training_flag_eval_module(m, x):
    return m(x)

class SubmodDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
    def forward(self, x):
        return self._modules["a"](x) + self._parameters.__len__() + len(self._buffers)

@probe(SubmodDict(), x)
def private_modules_dict(m, x):
    return m(x)

class Ctr(nn.Module):
    def __init__(self):
        super().__init__(); self.step = 0; self.hist = []
    def forward(self, x):
        self.step += 1
        self.hist.append(self.step)
        return x * self.step

@probe(Ctr(), x)
def module_python_state_mutation(m, x):
    m(x)
    return m(x), m.hist

@probe(nn.Linear(3, 3), x)
def weight_data_and_detach(m, x):
    return x @ m.weight.data.t() + m.weight.detach().sum()

class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.emb.weight
    def forward(self, idx):
        return self.out(self.emb(idx))

@probe(Tied(), torch.tensor([0, 4]))
def tied_weights(m, idx):
    return m(idx), len(list(m.parameters()))

@probe(x)
def param_created_isinstance(x):
    p = nn.Parameter(torch.ones(3))
    return x * p, isinstance(p, nn.Parameter), isinstance(p, torch.Tensor)

@probe(nn.Linear(3, 3), x)
def module_add_attr_via_setattr(m, x):
    setattr(m, "custom_scale", 3)
    return m(x) * m.custom_scale

class ApplyFn(nn.Module):
    def __init__(self, fn):
        super().__init__(); self.fn = fn
    def forward(self, x): return self.fn(x)

@probe(ApplyFn(torch.sigmoid), x)
def module_holding_function(m, x):
    return m(x)

@probe(ApplyFn(lambda t: t.clamp(min=0) * 2), x)
def module_holding_lambda(m, x):
    return m(x)

class Checkp(nn.Module):
    def __init__(self):
        super().__init__(); self.l = nn.Linear(3, 3)
    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.l, x, use_reentrant=False)

@probe(Checkp(), xr)
def checkpoint_module(m, x):
    return m(x)

@probe(m0, x)
def state_dict_round_keys(m, x):
    return x * len([k for k in m.state_dict() if k.startswith("layers")])

@probe(m0, x)
def zero_grad_and_grad_none(m, x):
    return x * sum(p.grad is None for p in m.parameters())
