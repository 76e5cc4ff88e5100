import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.mm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'


class Model(nn.Module):
    """Dense GCN with the adjacency normalised in forward: A + I, deg = A.sum(1), d_inv_sqrt = deg.pow(-0.5),
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0., torch.diag, D^-1/2 A D^-1/2; also the row-normalise variant
    with r_inv[torch.isinf(r_inv)] = 0 used for features; masked accuracy on train_idx."""

    def __init__(self, nfeat=6, nhid=8, nclass=3, dropout=0.5):
        super(Model, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    @staticmethod
    def normalize_adj(adj):
        adj = adj + torch.eye(adj.size(0))
        rowsum = adj.sum(1)
        d_inv_sqrt = torch.pow(rowsum, -0.5).flatten()
        d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.
        d_mat_inv_sqrt = torch.diag(d_inv_sqrt)
        return adj.mm(d_mat_inv_sqrt).t().mm(d_mat_inv_sqrt)

    @staticmethod
    def normalize_features(mx):
        rowsum = mx.sum(1)
        r_inv = torch.pow(rowsum, -1).flatten()
        r_inv[torch.isinf(r_inv)] = 0.
        return torch.diag(r_inv).mm(mx)

    def forward(self, x, adj, labels, idx_train):
        adj = self.normalize_adj(adj)
        x = self.normalize_features(x)
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        output = F.log_softmax(x, dim=1)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        preds = output[idx_train].max(1)[1].type_as(labels)
        correct = preds.eq(labels[idx_train]).double()
        acc_train = correct.sum() / len(idx_train)
        return output, loss_train, acc_train


def make_inputs():
    adj = (torch.rand(7, 7) > 0.6).float()
    adj = ((adj + adj.t()) > 0).float()
    x = (torch.rand(7, 6) > 0.5).float()
    x[2] = 0
    return x, adj, torch.tensor([0, 1, 2, 0, 1, 2, 0]), torch.LongTensor(range(4))
