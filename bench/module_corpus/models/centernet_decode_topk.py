import torch
import torch.nn as nn
import torch.nn.functional as F


def _nms(heat, kernel=3):
    pad = (kernel - 1) // 2
    hmax = nn.functional.max_pool2d(heat, (kernel, kernel), stride=1, padding=pad)
    keep = (hmax == heat).float()
    return heat * keep


def _gather_feat(feat, ind, mask=None):
    dim = feat.size(2)
    ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    feat = feat.gather(1, ind)
    if mask is not None:
        mask = mask.unsqueeze(2).expand_as(feat)
        feat = feat[mask]
        feat = feat.view(-1, dim)
    return feat


def _transpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    feat = feat.view(feat.size(0), -1, feat.size(3))
    feat = _gather_feat(feat, ind)
    return feat


def _topk(scores, K=40):
    batch, cat, height, width = scores.size()
    topk_scores, topk_inds = torch.topk(scores.view(batch, cat, -1), K)
    topk_inds = topk_inds % (height * width)
    topk_ys = (topk_inds / width).int().float()
    topk_xs = (topk_inds % width).int().float()
    topk_score, topk_ind = torch.topk(topk_scores.view(batch, -1), K)
    topk_clses = (topk_ind / K).int()
    topk_inds = _gather_feat(topk_inds.view(batch, -1, 1), topk_ind).view(batch, K)
    topk_ys = _gather_feat(topk_ys.view(batch, -1, 1), topk_ind).view(batch, K)
    topk_xs = _gather_feat(topk_xs.view(batch, -1, 1), topk_ind).view(batch, K)
    return topk_score, topk_inds, topk_clses, topk_ys, topk_xs


def ctdet_decode(heat, wh, reg=None, cat_spec_wh=False, K=100):
    """xingyizhou/CenterNet src/lib/models/decode.py ctdet_decode."""
    batch, cat, height, width = heat.size()
    heat = _nms(heat)
    scores, inds, clses, ys, xs = _topk(heat, K=K)
    if reg is not None:
        reg = _transpose_and_gather_feat(reg, inds)
        reg = reg.view(batch, K, 2)
        xs = xs.view(batch, K, 1) + reg[:, :, 0:1]
        ys = ys.view(batch, K, 1) + reg[:, :, 1:2]
    else:
        xs = xs.view(batch, K, 1) + 0.5
        ys = ys.view(batch, K, 1) + 0.5
    wh = _transpose_and_gather_feat(wh, inds)
    if cat_spec_wh:
        raise NotImplementedError
    else:
        wh = wh.view(batch, K, 2)
    clses = clses.view(batch, K, 1).float()
    scores = scores.view(batch, K, 1)
    bboxes = torch.cat([xs - wh[..., 0:1] / 2, ys - wh[..., 1:2] / 2,
                        xs + wh[..., 0:1] / 2, ys + wh[..., 1:2] / 2], dim=2)
    detections = torch.cat([bboxes, scores, clses], dim=2)
    return detections


class Model(nn.Module):
    def __init__(self, heads={'hm': 3, 'wh': 2, 'reg': 2}, head_conv=8):
        super().__init__()
        self.heads = heads
        self.base = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(inplace=True), nn.Conv2d(8, 8, 3, 1, 1))
        for head in sorted(self.heads):
            classes = self.heads[head]
            fc = nn.Sequential(nn.Conv2d(8, head_conv, kernel_size=3, padding=1, bias=True), nn.ReLU(inplace=True),
                               nn.Conv2d(head_conv, classes, kernel_size=1, stride=1, padding=0, bias=True))
            if 'hm' in head:
                fc[-1].bias.data.fill_(-2.19)
            self.__setattr__(head, fc)

    def forward(self, x, K=10):
        feat = self.base(x)
        ret = {}
        for head in self.heads:
            ret[head] = self.__getattr__(head)(feat)
        output = ret
        hm = output['hm'].sigmoid_()
        dets = ctdet_decode(hm, output['wh'], reg=output['reg'], K=K)
        return [ret], dets


def make_inputs():
    return (torch.randn(2, 3, 16, 16),), {"K": 6}
