import torch
import torch.nn as nn
import torch.nn.functional as F


class DistillKL(nn.Module):
    """HobbitLong/RepDistiller DistillKL: KL(student/T || teacher/T) * T^2 / batch."""

    def __init__(self, T):
        super(DistillKL, self).__init__()
        self.T = T

    def forward(self, y_s, y_t):
        p_s = F.log_softmax(y_s / self.T, dim=1)
        p_t = F.softmax(y_t / self.T, dim=1)
        loss = F.kl_div(p_s, p_t, reduction="sum") * (self.T ** 2) / y_s.shape[0]
        return loss


class Attention(nn.Module):
    """Paying More Attention to Attention (Zagoruyko & Komodakis) as in RepDistiller."""

    def __init__(self, p=2):
        super(Attention, self).__init__()
        self.p = p

    def forward(self, g_s, g_t):
        return [self.at_loss(f_s, f_t) for f_s, f_t in zip(g_s, g_t)]

    def at_loss(self, f_s, f_t):
        s_H, t_H = f_s.shape[2], f_t.shape[2]
        if s_H > t_H:
            f_s = F.adaptive_avg_pool2d(f_s, (t_H, t_H))
        elif s_H < t_H:
            f_t = F.adaptive_avg_pool2d(f_t, (s_H, s_H))
        else:
            pass
        return (self.at(f_s) - self.at(f_t)).pow(2).mean()

    def at(self, f):
        return F.normalize(f.pow(self.p).mean(1).view(f.size(0), -1))


class HintLoss(nn.Module):
    def __init__(self):
        super(HintLoss, self).__init__()
        self.crit = nn.MSELoss()

    def forward(self, f_s, f_t):
        return self.crit(f_s, f_t)


class ConvReg(nn.Module):
    """Convolutional regression for FitNet"""

    def __init__(self, s_shape, t_shape, use_relu=True):
        super(ConvReg, self).__init__()
        self.use_relu = use_relu
        s_N, s_C, s_H, s_W = s_shape
        t_N, t_C, t_H, t_W = t_shape
        if s_H == 2 * t_H:
            self.conv = nn.Conv2d(s_C, t_C, kernel_size=3, stride=2, padding=1)
        elif s_H * 2 == t_H:
            self.conv = nn.ConvTranspose2d(s_C, t_C, kernel_size=4, stride=2, padding=1)
        elif s_H >= t_H:
            self.conv = nn.Conv2d(s_C, t_C, kernel_size=(1 + s_H - t_H, 1 + s_W - t_W))
        else:
            raise NotImplementedError("student size {}, teacher size {}".format(s_H, t_H))
        self.bn = nn.BatchNorm2d(t_C)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.conv(x)
        if self.use_relu:
            return self.relu(self.bn(x))
        else:
            return self.bn(x)


class Net(nn.Module):
    def __init__(self, width, num_classes=5):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(width, 2 * width, 3, 2, 1), nn.BatchNorm2d(2 * width), nn.ReLU())
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x, is_feat=False, preact=False):
        f0 = self.layer1(x)
        f1 = self.layer2(f0)
        out = self.fc(F.adaptive_avg_pool2d(f1, 1).flatten(1))
        if is_feat:
            return [f0, f1], out
        return out


class Model(nn.Module):
    """RepDistiller train_student step, forward only: frozen teacher run under torch.no_grad() and kept in eval(),
    student features (is_feat=True), loss = gamma*CE + alpha*KD(T=4) + beta*(FitNet hint | AT), criterion list
    in an nn.ModuleList indexed by position, the distill method chosen by string."""

    def __init__(self, distill="hint", gamma=1.0, alpha=0.9, beta=100.0):
        super().__init__()
        self.model_s = Net(4)
        self.model_t = Net(8)
        self.distill = distill
        self.gamma, self.alpha, self.beta = gamma, alpha, beta
        data = torch.randn(2, 3, 8, 8)
        self.model_t.eval()
        self.model_s.eval()
        feat_t, _ = self.model_t(data, is_feat=True)
        feat_s, _ = self.model_s(data, is_feat=True)
        self.hint_layer = 1
        self.regress_s = ConvReg(feat_s[self.hint_layer].shape, feat_t[self.hint_layer].shape)
        criterion_kd = HintLoss() if distill == "hint" else Attention()
        self.criterion_list = nn.ModuleList([nn.CrossEntropyLoss(), DistillKL(4.0), criterion_kd, Attention()])
        for p in self.model_t.parameters():
            p.requires_grad = False

    def train(self, mode=True):
        super().train(mode)
        self.model_t.eval()
        return self

    def forward(self, input, target):
        criterion_cls = self.criterion_list[0]
        criterion_div = self.criterion_list[1]
        criterion_kd = self.criterion_list[2]
        feat_s, logit_s = self.model_s(input, is_feat=True, preact=False)
        with torch.no_grad():
            feat_t, logit_t = self.model_t(input, is_feat=True, preact=False)
            feat_t = [f.detach() for f in feat_t]
        loss_cls = criterion_cls(logit_s, target)
        loss_div = criterion_div(logit_s, logit_t)
        if self.distill == "hint":
            f_s = self.regress_s(feat_s[self.hint_layer])
            f_t = feat_t[self.hint_layer]
            loss_kd = criterion_kd(f_s, f_t)
        elif self.distill == "attention":
            g_s = feat_s[1:-1]
            g_t = feat_t[1:-1]
            loss_group = criterion_kd(g_s, g_t)
            loss_kd = sum(loss_group)
        else:
            raise NotImplementedError(self.distill)
        at = sum(self.criterion_list[3](feat_s, feat_t))
        loss = self.gamma * loss_cls + self.alpha * loss_div + self.beta * loss_kd
        acc1 = (logit_s.argmax(1) == target).float().mean() * 100.0
        return {"loss": loss, "loss_kd": loss_kd, "at": at, "acc1": acc1}


def make_inputs():
    return torch.randn(4, 3, 8, 8), torch.tensor([0, 3, 1, 4])
