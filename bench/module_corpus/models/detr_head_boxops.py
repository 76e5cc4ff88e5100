import torch
import torch.nn as nn
import torch.nn.functional as F


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    iou = inter / union
    return iou, union


def generalized_box_iou(boxes1, boxes2):
    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
    assert (boxes2[:, 2:] >= boxes2[:, :2]).all()
    iou, union = box_iou(boxes1, boxes2)
    lt = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[:, :, 0] * wh[:, :, 1]
    return iou - (area - union) / area


class MLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        self.num_layers = num_layers
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        return x


class Model(nn.Module):
    """DETR head: query embeddings, nn.Transformer decoder (seq-first), aux outputs as list of dicts, GIoU cost."""

    def __init__(self, num_classes=4, hidden_dim=16, num_queries=5, aux_loss=True):
        super().__init__()
        self.num_queries = num_queries
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.input_proj = nn.Conv2d(8, hidden_dim, kernel_size=1)
        self.query_embed = nn.Embedding(num_queries, hidden_dim)
        self.row_embed = nn.Parameter(torch.rand(10, hidden_dim // 2))
        self.col_embed = nn.Parameter(torch.rand(10, hidden_dim // 2))
        layer = nn.TransformerDecoderLayer(hidden_dim, 2, 32, dropout=0.0)
        self.decoder = nn.ModuleList([layer] + [nn.TransformerDecoderLayer(hidden_dim, 2, 32, dropout=0.0)])
        self.norm = nn.LayerNorm(hidden_dim)
        self.class_embed = nn.Linear(hidden_dim, num_classes + 1)
        self.bbox_embed = MLP(hidden_dim, hidden_dim, 4, 3)
        self.aux_loss = aux_loss

    @torch.jit.unused
    def _set_aux_loss(self, outputs_class, outputs_coord):
        return [{"pred_logits": a, "pred_boxes": b} for a, b in zip(outputs_class[:-1], outputs_coord[:-1])]

    def forward(self, samples, tgt_boxes):
        features = self.backbone(samples)
        src = self.input_proj(features)
        bs, c, H, W = src.shape
        pos = torch.cat([self.col_embed[:W].unsqueeze(0).repeat(H, 1, 1),
                         self.row_embed[:H].unsqueeze(1).repeat(1, W, 1)], dim=-1).flatten(0, 1).unsqueeze(1)
        memory = src.flatten(2).permute(2, 0, 1) + pos
        query_embed = self.query_embed.weight.unsqueeze(1).repeat(1, bs, 1)
        tgt = torch.zeros_like(query_embed)
        intermediate = []
        for layer in self.decoder:
            tgt = layer(tgt + query_embed, memory)
            intermediate.append(self.norm(tgt))
        hs = torch.stack(intermediate).transpose(1, 2)
        outputs_class = self.class_embed(hs)
        outputs_coord = self.bbox_embed(hs).sigmoid()
        out = {"pred_logits": outputs_class[-1], "pred_boxes": outputs_coord[-1]}
        if self.aux_loss:
            out["aux_outputs"] = self._set_aux_loss(outputs_class, outputs_coord)
        out_prob = out["pred_logits"].flatten(0, 1).softmax(-1)
        out_bbox = out["pred_boxes"].flatten(0, 1)
        cost_bbox = torch.cdist(out_bbox, tgt_boxes, p=1)
        cost_giou = -generalized_box_iou(box_cxcywh_to_xyxy(out_bbox), box_cxcywh_to_xyxy(tgt_boxes))
        C = 5 * cost_bbox + 2 * cost_giou - out_prob[:, :1]
        out["cost"] = C.view(bs, self.num_queries, -1)
        return out


def make_inputs():
    t = torch.rand(3, 4) * 0.5 + 0.25
    return torch.randn(2, 3, 16, 16), t
