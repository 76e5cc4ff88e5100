import torch
from torch import nn
from torch.autograd import Function
import torch.nn.functional as F


def _make_ix_like(input, dim=0):
    d = input.size(dim)
    rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
    view = [1] * input.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


class SparsemaxFunction(Function):
    @staticmethod
    def forward(ctx, input, dim=-1):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        input -= max_val
        tau, supp_size = SparsemaxFunction._threshold_and_support(input, dim=dim)
        output = torch.clamp(input - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze()
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None

    @staticmethod
    def _threshold_and_support(input, dim=-1):
        input_srt, _ = torch.sort(input, descending=True, dim=dim)
        input_cumsum = input_srt.cumsum(dim) - 1
        rhos = _make_ix_like(input, dim)
        support = rhos * input_srt > input_cumsum
        support_size = support.sum(dim=dim).unsqueeze(dim)
        tau = input_cumsum.gather(dim, support_size - 1)
        tau /= support_size.to(input.dtype)
        return tau, support_size


sparsemax = SparsemaxFunction.apply


class Sparsemax(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super(Sparsemax, self).__init__()

    def forward(self, input):
        return sparsemax(input, self.dim)


class Entmax15(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super().__init__()

    def forward(self, X):
        # entmax15 forward without the custom Function (exact sort-based threshold)
        max_val, _ = X.max(dim=self.dim, keepdim=True)
        X = X - max_val
        X = X / 2
        Xsrt, _ = torch.sort(X, descending=True, dim=self.dim)
        rho = _make_ix_like(X, self.dim)
        mean = Xsrt.cumsum(self.dim) / rho
        mean_sq = (Xsrt ** 2).cumsum(self.dim) / rho
        ss = rho * (mean_sq - mean ** 2)
        delta = (1 - ss) / rho
        delta_nz = torch.clamp(delta, 0)
        tau = mean - torch.sqrt(delta_nz)
        support_size = (tau <= Xsrt).sum(dim=self.dim).unsqueeze(self.dim)
        tau_star = tau.gather(self.dim, support_size - 1)
        return torch.clamp(X - tau_star, min=0) ** 2


class GBN(nn.Module):
    def __init__(self, input_dim, virtual_batch_size=2, momentum=0.01):
        super(GBN, self).__init__()
        self.input_dim = input_dim
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(torch.ceil(torch.tensor(x.shape[0] / self.virtual_batch_size))), 0)
        res = [self.bn(x_) for x_ in chunks]
        return torch.cat(res, dim=0)


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, group_dim, virtual_batch_size=2, momentum=0.02, mask_type="sparsemax"):
        super(AttentiveTransformer, self).__init__()
        self.fc = nn.Linear(input_dim, group_dim, bias=False)
        self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)
        if mask_type == "sparsemax":
            self.selector = Sparsemax(dim=-1)
        elif mask_type == "entmax":
            self.selector = Entmax15(dim=-1)
        else:
            raise NotImplementedError("Please choose either sparsemax" + "or entmax as masktype")

    def forward(self, priors, processed_feat):
        x = self.fc(processed_feat)
        x = self.bn(x)
        x = torch.mul(x, priors)
        x = self.selector(x)
        return x


class Model(nn.Module):
    """dreamquark-ai/tabnet: sparsemax as an autograd.Function (in-place input -= max), entmax15, ghost batch norm chunking
    with a tensor-computed chunk count, decision steps with priors and a mask entropy loss."""

    def __init__(self, input_dim=6, n_d=4, n_a=4, n_steps=3, gamma=1.3, epsilon=1e-15):
        super().__init__()
        self.n_steps = n_steps
        self.gamma = gamma
        self.epsilon = epsilon
        self.n_d = n_d
        self.initial_bn = nn.BatchNorm1d(input_dim, momentum=0.01)
        self.feat = nn.ModuleList([nn.Sequential(nn.Linear(input_dim, 2 * (n_d + n_a)), nn.GLU()) for _ in range(n_steps + 1)])
        self.att = nn.ModuleList([AttentiveTransformer(n_a, input_dim, mask_type="sparsemax" if s % 2 == 0 else "entmax")
                                  for s in range(n_steps)])

    def forward(self, x):
        res = 0
        x = self.initial_bn(x)
        prior = torch.ones(x.shape).to(x.device)
        M_loss = 0
        att = self.feat[0](x)[:, self.n_d:]
        steps_output = []
        for step in range(self.n_steps):
            M = self.att[step](prior, att)
            M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
            prior = torch.mul(self.gamma - M, prior)
            masked_x = torch.mul(M, x)
            out = self.feat[step + 1](masked_x)
            d = F.relu(out[:, : self.n_d])
            steps_output.append(d)
            att = out[:, self.n_d:]
        M_loss /= self.n_steps
        res = torch.sum(torch.stack(steps_output, dim=0), dim=0)
        return res, M_loss


def make_inputs():
    return (torch.randn(4, 6),)
