import math
from typing import List
import torch
import torch.nn as nn


class AnchorGenerator(nn.Module):
    """torchvision-style anchor generator: cell anchors per level, shifted by a meshgrid over the feature map."""

    def __init__(self, sizes=((16,), (32,)), aspect_ratios=((0.5, 1.0, 2.0),) * 2):
        super().__init__()
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = [self.generate_anchors(size, ar) for size, ar in zip(sizes, aspect_ratios)]

    def generate_anchors(self, scales, aspect_ratios, dtype=torch.float32, device=torch.device("cpu")):
        scales = torch.as_tensor(scales, dtype=dtype, device=device)
        aspect_ratios = torch.as_tensor(aspect_ratios, dtype=dtype, device=device)
        h_ratios = torch.sqrt(aspect_ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        base_anchors = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
        return base_anchors.round()

    def grid_anchors(self, grid_sizes: List[List[int]], strides: List[List[torch.Tensor]]) -> List[torch.Tensor]:
        anchors = []
        cell_anchors = self.cell_anchors
        torch._assert(cell_anchors is not None, "cell_anchors should not be None")
        for size, stride, base_anchors in zip(grid_sizes, strides, cell_anchors):
            grid_height, grid_width = size
            stride_height, stride_width = stride
            device = base_anchors.device
            shifts_x = torch.arange(0, grid_width, dtype=torch.int32, device=device) * stride_width
            shifts_y = torch.arange(0, grid_height, dtype=torch.int32, device=device) * stride_height
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x = shift_x.reshape(-1)
            shift_y = shift_y.reshape(-1)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_size, feature_maps: List[torch.Tensor]) -> torch.Tensor:
        grid_sizes = [feature_map.shape[-2:] for feature_map in feature_maps]
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        strides = [[torch.empty((), dtype=torch.int64, device=device).fill_(image_size[0] // g[0]),
                    torch.empty((), dtype=torch.int64, device=device).fill_(image_size[1] // g[1])]
                   for g in grid_sizes]
        self.cell_anchors = [ca.to(dtype=dtype, device=device) for ca in self.cell_anchors]
        anchors_over_all_feature_maps = self.grid_anchors(grid_sizes, strides)
        return torch.cat(anchors_over_all_feature_maps)


class BoxCoder:
    def __init__(self, weights=(1.0, 1.0, 1.0, 1.0), bbox_xform_clip=math.log(1000.0 / 16)):
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def decode_single(self, rel_codes, boxes):
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = rel_codes[:, 2::4] / ww
        dh = rel_codes[:, 3::4] / wh
        dw = torch.clamp(dw, max=self.bbox_xform_clip)
        dh = torch.clamp(dh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        c_to_c_h = torch.tensor(0.5, dtype=pred_ctr_y.dtype, device=pred_h.device) * pred_h
        c_to_c_w = torch.tensor(0.5, dtype=pred_ctr_x.dtype, device=pred_w.device) * pred_w
        pred_boxes1 = pred_ctr_x - c_to_c_w
        pred_boxes2 = pred_ctr_y - c_to_c_h
        pred_boxes3 = pred_ctr_x + c_to_c_w
        pred_boxes4 = pred_ctr_y + c_to_c_h
        return torch.stack((pred_boxes1, pred_boxes2, pred_boxes3, pred_boxes4), dim=2).flatten(1)


class Scale(nn.Module):
    def __init__(self, init_value=1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.FloatTensor([init_value]))

    def forward(self, x):
        return x * self.scale


class Model(nn.Module):
    """RetinaNet-style head with box decoding, plus an FCOS centerness branch sharing the tower."""

    def __init__(self, ch=8, num_classes=3, num_anchors=3):
        super().__init__()
        self.backbone = nn.ModuleList([nn.Conv2d(3, ch, 3, 2, 1), nn.Conv2d(ch, ch, 3, 2, 1)])
        self.cls_logits = nn.Conv2d(ch, num_anchors * num_classes, 3, padding=1)
        self.bbox_pred = nn.Conv2d(ch, num_anchors * 4, 3, padding=1)
        self.centerness = nn.Conv2d(ch, 1, 3, padding=1)
        self.scales = nn.ModuleList([Scale(1.0) for _ in range(2)])
        self.anchor_generator = AnchorGenerator()
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.num_classes = num_classes

    def forward(self, images):
        feats = []
        x = images
        for conv in self.backbone:
            x = torch.relu(conv(x))
            feats.append(x)
        N = images.shape[0]
        all_cls, all_reg, all_ctr, fcos_boxes = [], [], [], []
        for lvl, f in enumerate(feats):
            cls = self.cls_logits(f)
            _, _, H, W = cls.shape
            all_cls.append(cls.view(N, -1, self.num_classes, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, self.num_classes))
            reg = self.bbox_pred(f)
            all_reg.append(reg.view(N, -1, 4, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 4))
            all_ctr.append(self.centerness(f).flatten(1))
            ltrb = torch.exp(self.scales[lvl](reg[:, :4]))
            l, t, r, b = ltrb.unbind(1)
            ctr = torch.sqrt((torch.min(l, r) / torch.max(l, r)) * (torch.min(t, b) / torch.max(t, b)))
            fcos_boxes.append(ctr.flatten(1))
        cls = torch.cat(all_cls, 1)
        reg = torch.cat(all_reg, 1)
        anchors = self.anchor_generator(images.shape[-2:], feats)
        boxes = self.box_coder.decode_single(reg.reshape(-1, 4), anchors.repeat(N, 1)).view(N, -1, 4)
        boxes = boxes.clamp(min=0)
        boxes = torch.stack([boxes[..., 0].clamp(max=images.shape[-1]), boxes[..., 1].clamp(max=images.shape[-2]),
                             boxes[..., 2].clamp(max=images.shape[-1]), boxes[..., 3].clamp(max=images.shape[-2])], -1)
        scores = torch.sigmoid(cls) * torch.sigmoid(torch.cat(all_ctr, 1)).repeat_interleave(3, dim=1)[..., None]
        return boxes, scores, torch.cat(fcos_boxes, 1)


def make_inputs():
    return (torch.randn(2, 3, 16, 20),)
