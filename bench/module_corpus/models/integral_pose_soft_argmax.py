import torch
import torch.nn as nn
import torch.nn.functional as F


def generate_3d_integral_preds_tensor(heatmaps, num_joints, x_dim, y_dim, z_dim):
    assert isinstance(heatmaps, torch.Tensor)
    heatmaps = heatmaps.reshape((heatmaps.shape[0], num_joints, z_dim, y_dim, x_dim))
    accu_x = heatmaps.sum(dim=2)
    accu_x = accu_x.sum(dim=2)
    accu_y = heatmaps.sum(dim=2)
    accu_y = accu_y.sum(dim=3)
    accu_z = heatmaps.sum(dim=3)
    accu_z = accu_z.sum(dim=3)
    accu_x = accu_x * torch.arange(float(x_dim), device=heatmaps.device)
    accu_y = accu_y * torch.arange(float(y_dim), device=heatmaps.device)
    accu_z = accu_z * torch.arange(float(z_dim), device=heatmaps.device)
    accu_x = accu_x.sum(dim=2, keepdim=True)
    accu_y = accu_y.sum(dim=2, keepdim=True)
    accu_z = accu_z.sum(dim=2, keepdim=True)
    return accu_x, accu_y, accu_z


def softmax_integral_tensor(preds, num_joints, output_3d, hm_width, hm_height, hm_depth):
    preds = preds.reshape((preds.shape[0], num_joints, -1))
    preds = F.softmax(preds, 2)
    if output_3d:
        x, y, z = generate_3d_integral_preds_tensor(preds, num_joints, hm_width, hm_height, hm_depth)
    else:
        x, y, _ = generate_3d_integral_preds_tensor(preds, num_joints, hm_width, hm_height, 1)
        z = None
    x = x / float(hm_width) - 0.5
    y = y / float(hm_height) - 0.5
    if output_3d:
        z = z / float(hm_depth) - 0.5
        preds = torch.cat((x, y, z), dim=2)
    else:
        preds = torch.cat((x, y), dim=2)
    return preds.reshape((preds.shape[0], num_joints * (3 if output_3d else 2)))


class SoftArgmax2D(nn.Module):
    """DSNT-style normalized soft-argmax with learnable temperature (beta) and a flip-test average."""

    def __init__(self, beta=1.0, learn_beta=True):
        super().__init__()
        self.beta = nn.Parameter(torch.tensor(beta)) if learn_beta else beta

    def forward(self, heatmaps):
        b, j, h, w = heatmaps.shape
        probs = F.softmax(self.beta * heatmaps.flatten(2), dim=-1).view(b, j, h, w)
        xs = (torch.arange(w, dtype=heatmaps.dtype) * 2 + 1) / w - 1
        ys = (torch.arange(h, dtype=heatmaps.dtype) * 2 + 1) / h - 1
        x = (probs.sum(2) * xs).sum(-1)
        y = (probs.sum(3) * ys).sum(-1)
        return torch.stack([x, y], -1), probs


FLIP_PAIRS = ((1, 2), (3, 4))


def flip_back(output_flipped, matched_parts):
    assert output_flipped.ndim == 4, "output_flipped should be [batch_size, num_joints, height, width]"
    output_flipped = output_flipped.flip(3)
    for pair in matched_parts:
        tmp = output_flipped[:, pair[0], :, :].clone()
        output_flipped[:, pair[0], :, :] = output_flipped[:, pair[1], :, :]
        output_flipped[:, pair[1], :, :] = tmp
    return output_flipped


class Model(nn.Module):
    """JimmySuen integral-human-pose style head (3D integral regression) + 2D soft-argmax with flip test."""

    def __init__(self, num_joints=5, depth_dim=4, hm=8):
        super().__init__()
        self.num_joints = num_joints
        self.depth_dim = depth_dim
        self.hm = hm
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
        self.final_layer = nn.Conv2d(16, num_joints * depth_dim, 1)
        self.head2d = nn.Conv2d(16, num_joints, 1)
        self.soft_argmax = SoftArgmax2D()

    def forward(self, x, flip_test=True):
        feat = self.backbone(x)
        hm3d = self.final_layer(feat)
        preds3d = softmax_integral_tensor(hm3d, self.num_joints, True, feat.shape[3], feat.shape[2], self.depth_dim)
        hm2d = self.head2d(feat)
        if flip_test:
            hm_flip = self.head2d(self.backbone(x.flip(3)))
            hm_flip = flip_back(hm_flip, FLIP_PAIRS)
            hm2d = (hm2d + hm_flip) * 0.5
        coords, probs = self.soft_argmax(hm2d)
        return preds3d, coords


def make_inputs():
    return (torch.randn(2, 3, 32, 32),)
