import torch
import torch.nn as nn
import torch.nn.functional as F


class Learner(nn.Module):
    """dragen1860/MAML-Pytorch Learner: the net is a config list of (name, param) tuples, weights live in a
    ParameterList, forward(x, vars=None, bn_training=True) walks the config with an idx counter and runs every
    layer functionally (F.conv2d / F.linear / F.batch_norm with running stats in a second ParameterList)."""

    def __init__(self, config, imgc, imgsz):
        super(Learner, self).__init__()
        self.config = config
        self.vars = nn.ParameterList()
        self.vars_bn = nn.ParameterList()
        for i, (name, param) in enumerate(self.config):
            if name == "conv2d":
                w = nn.Parameter(torch.ones(*param[:4]))
                torch.nn.init.kaiming_normal_(w)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
            elif name == "linear":
                w = nn.Parameter(torch.ones(*param))
                torch.nn.init.kaiming_normal_(w)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
            elif name == "bn":
                w = nn.Parameter(torch.ones(param[0]))
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
                running_mean = nn.Parameter(torch.zeros(param[0]), requires_grad=False)
                running_var = nn.Parameter(torch.ones(param[0]), requires_grad=False)
                self.vars_bn.extend([running_mean, running_var])
            elif name in ["tanh", "relu", "upsample", "avg_pool2d", "max_pool2d", "flatten", "reshape", "leakyrelu", "sigmoid"]:
                continue
            else:
                raise NotImplementedError

    def extra_repr(self):
        info = ""
        for name, param in self.config:
            if name == "conv2d":
                tmp = "conv2d:(ch_in:%d, ch_out:%d, k:%dx%d, stride:%d, padding:%d)" % (param[1], param[0], param[2], param[3], param[4], param[5],)
                info += tmp + "\n"
            else:
                info += name + ":" + str(tuple(param)) + "\n"
        return info

    def forward(self, x, vars=None, bn_training=True):
        if vars is None:
            vars = self.vars
        idx = 0
        bn_idx = 0
        for name, param in self.config:
            if name == "conv2d":
                w, b = vars[idx], vars[idx + 1]
                x = F.conv2d(x, w, b, stride=param[4], padding=param[5])
                idx += 2
            elif name == "linear":
                w, b = vars[idx], vars[idx + 1]
                x = F.linear(x, w, b)
                idx += 2
            elif name == "bn":
                w, b = vars[idx], vars[idx + 1]
                running_mean, running_var = self.vars_bn[bn_idx], self.vars_bn[bn_idx + 1]
                x = F.batch_norm(x, running_mean, running_var, weight=w, bias=b, training=bn_training)
                idx += 2
                bn_idx += 2
            elif name == "flatten":
                x = x.view(x.size(0), -1)
            elif name == "reshape":
                x = x.view(x.size(0), *param)
            elif name == "relu":
                x = F.relu(x, inplace=param[0])
            elif name == "leakyrelu":
                x = F.leaky_relu(x, negative_slope=param[0], inplace=param[1])
            elif name == "tanh":
                x = torch.tanh(x)
            elif name == "sigmoid":
                x = torch.sigmoid(x)
            elif name == "upsample":
                x = F.upsample_nearest(x, scale_factor=param[0])
            elif name == "max_pool2d":
                x = F.max_pool2d(x, param[0], param[1], param[2])
            elif name == "avg_pool2d":
                x = F.avg_pool2d(x, param[0], param[1], param[2])
            else:
                raise NotImplementedError
        assert idx == len(vars)
        assert bn_idx == len(self.vars_bn)
        return x

    def parameters(self, recurse=True):
        return self.vars


class Model(nn.Module):
    """Meta.finetunning-style evaluation: adapt a deep copy of fast weights on the support set with
    torch.autograd.grad under enable_grad, then score the query set; fast weights are a python list built with
    map(lambda p: p[1] - lr * p[0], zip(grad, fast_weights))."""

    def __init__(self, n_way=3, update_step_test=2, update_lr=0.4):
        super().__init__()
        config = [
            ("conv2d", [4, 1, 3, 3, 2, 0]), ("relu", [True]), ("bn", [4]),
            ("conv2d", [4, 4, 3, 3, 1, 0]), ("relu", [True]), ("bn", [4]),
            ("max_pool2d", [2, 1, 0]),
            ("flatten", []),
            ("linear", [n_way, 4 * 2 * 2]),
        ]
        self.net = Learner(config, 1, 11)
        self.update_step_test = update_step_test
        self.update_lr = update_lr

    def forward(self, x_spt, y_spt, x_qry):
        with torch.enable_grad():
            logits = self.net(x_spt, bn_training=True)
            loss = F.cross_entropy(logits, y_spt)
            grad = torch.autograd.grad(loss, self.net.parameters())
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))
            for k in range(1, self.update_step_test):
                logits = self.net(x_spt, fast_weights, bn_training=True)
                loss = F.cross_entropy(logits, y_spt)
                grad = torch.autograd.grad(loss, fast_weights)
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
        logits_q = self.net(x_qry, fast_weights, bn_training=True)
        pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
        return logits_q, pred_q


def make_inputs():
    return torch.randn(6, 1, 11, 11), torch.tensor([0, 1, 2, 0, 1, 2]), torch.randn(4, 1, 11, 11)
