import math
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F


def inverse_sigmoid(x, eps=1e-3):
    x = x.clamp(min=0, max=1)
    x1 = x.clamp(min=eps)
    x2 = (1 - x).clamp(min=eps)
    return torch.log(x1 / x2)


def gen_sineembed_for_position(pos_tensor, d_model=16):
    scale = 2 * math.pi
    dim_t = torch.arange(d_model // 2, dtype=torch.float32, device=pos_tensor.device)
    dim_t = 10000 ** (2 * (torch.div(dim_t, 2, rounding_mode="floor")) / (d_model // 2))
    x_embed = pos_tensor[:, :, 0] * scale
    y_embed = pos_tensor[:, :, 1] * scale
    pos_x = x_embed[:, :, None] / dim_t
    pos_y = y_embed[:, :, None] / dim_t
    pos_x = torch.stack((pos_x[:, :, 0::2].sin(), pos_x[:, :, 1::2].cos()), dim=3).flatten(2)
    pos_y = torch.stack((pos_y[:, :, 0::2].sin(), pos_y[:, :, 1::2].cos()), dim=3).flatten(2)
    if pos_tensor.size(-1) == 2:
        pos = torch.cat((pos_y, pos_x), dim=2)
    elif pos_tensor.size(-1) == 4:
        w_embed = pos_tensor[:, :, 2] * scale
        pos_w = w_embed[:, :, None] / dim_t
        pos_w = torch.stack((pos_w[:, :, 0::2].sin(), pos_w[:, :, 1::2].cos()), dim=3).flatten(2)
        h_embed = pos_tensor[:, :, 3] * scale
        pos_h = h_embed[:, :, None] / dim_t
        pos_h = torch.stack((pos_h[:, :, 0::2].sin(), pos_h[:, :, 1::2].cos()), dim=3).flatten(2)
        pos = torch.cat((pos_y, pos_x, pos_w, pos_h), dim=2)
    else:
        raise ValueError("Unknown pos_tensor shape(-1):{}".format(pos_tensor.size(-1)))
    return pos


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


def _get_clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


class DecoderLayer(nn.Module):
    def __init__(self, d_model=16, nhead=2):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead)
        self.cross_attn = nn.MultiheadAttention(d_model, nhead)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear = nn.Linear(d_model, d_model)

    def forward(self, tgt, memory, pos=None, query_pos=None, query_sine_embed=None, is_first=False):
        q = k = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, k, tgt)[0])
        q = tgt + (query_sine_embed if not is_first else query_pos)
        tgt = self.norm2(tgt + self.cross_attn(q, memory + pos, memory)[0])
        return tgt + F.relu(self.linear(tgt))


class TransformerDecoder(nn.Module):
    """IDEA-Research DAB-DETR decoder: 4-D anchor boxes as queries, sine-embedded, modulated by a query scale MLP,
    iteratively refined through inverse_sigmoid + bbox_embed, detached between layers; intermediate outputs stacked."""

    def __init__(self, d_model=16, num_layers=3, query_dim=4, bbox_embed_diff_each_layer=False, modulate_hw_attn=True):
        super().__init__()
        self.layers = _get_clones(DecoderLayer(d_model), num_layers)
        self.num_layers = num_layers
        self.norm = nn.LayerNorm(d_model)
        self.return_intermediate = True
        self.query_dim = query_dim
        self.d_model = d_model
        self.query_scale = MLP(d_model, d_model, d_model, 2)
        self.ref_point_head = MLP(query_dim // 2 * d_model, d_model, d_model, 2)
        self.bbox_embed = None
        self.bbox_embed_diff_each_layer = bbox_embed_diff_each_layer
        self.modulate_hw_attn = modulate_hw_attn
        if modulate_hw_attn:
            self.ref_anchor_head = MLP(d_model, d_model, 2, 2)

    def forward(self, tgt, memory, pos=None, refpoints_unsigmoid=None):
        output = tgt
        intermediate = []
        reference_points = refpoints_unsigmoid.sigmoid()
        ref_points = [reference_points]
        for layer_id, layer in enumerate(self.layers):
            obj_center = reference_points[..., :self.query_dim]
            query_sine_embed = gen_sineembed_for_position(obj_center, self.d_model)
            query_pos = self.ref_point_head(query_sine_embed)
            if layer_id == 0:
                pos_transformation = 1
            else:
                pos_transformation = self.query_scale(output)
            query_sine_embed = query_sine_embed[..., :self.d_model] * pos_transformation
            if self.modulate_hw_attn:
                refHW_cond = self.ref_anchor_head(output).sigmoid()
                query_sine_embed[..., self.d_model // 2:] *= (refHW_cond[..., 0] / obj_center[..., 2]).unsqueeze(-1)
                query_sine_embed[..., :self.d_model // 2] *= (refHW_cond[..., 1] / obj_center[..., 3]).unsqueeze(-1)
            output = layer(output, memory, pos=pos, query_pos=query_pos, query_sine_embed=query_sine_embed,
                           is_first=(layer_id == 0))
            if self.bbox_embed is not None:
                if self.bbox_embed_diff_each_layer:
                    tmp = self.bbox_embed[layer_id](output)
                else:
                    tmp = self.bbox_embed(output)
                tmp[..., :self.query_dim] += inverse_sigmoid(reference_points)
                new_reference_points = tmp[..., :self.query_dim].sigmoid()
                if layer_id != self.num_layers - 1:
                    ref_points.append(new_reference_points)
                reference_points = new_reference_points.detach()
            if self.return_intermediate:
                intermediate.append(self.norm(output))
        if self.norm is not None:
            output = self.norm(output)
            if self.return_intermediate:
                intermediate.pop()
                intermediate.append(output)
        if self.return_intermediate:
            if self.bbox_embed is not None:
                return [torch.stack(intermediate).transpose(1, 2), torch.stack(ref_points).transpose(1, 2)]
            return [torch.stack(intermediate).transpose(1, 2), reference_points.unsqueeze(0).transpose(1, 2)]
        return output.unsqueeze(0)


class Model(nn.Module):
    def __init__(self, d_model=16, num_queries=6, num_classes=3):
        super().__init__()
        self.refpoint_embed = nn.Embedding(num_queries, 4)
        self.decoder = TransformerDecoder(d_model)
        self.bbox_embed = MLP(d_model, d_model, 4, 3)
        nn.init.constant_(self.bbox_embed.layers[-1].weight.data, 0)
        nn.init.constant_(self.bbox_embed.layers[-1].bias.data, 0)
        self.decoder.bbox_embed = self.bbox_embed
        self.class_embed = nn.Linear(d_model, num_classes)
        self.aux_loss = True

    @torch.jit.unused
    def _set_aux_loss(self, outputs_class, outputs_coord):
        return [{"pred_logits": a, "pred_boxes": b} for a, b in zip(outputs_class[:-1], outputs_coord[:-1])]

    def forward(self, memory, pos):
        bs = memory.shape[1]
        refpoint = self.refpoint_embed.weight.unsqueeze(1).repeat(1, bs, 1)
        tgt = torch.zeros(refpoint.shape[0], bs, memory.shape[-1])
        hs, reference = self.decoder(tgt, memory, pos=pos, refpoints_unsigmoid=refpoint)
        reference_before_sigmoid = inverse_sigmoid(reference)
        tmp = self.bbox_embed(hs)
        tmp[..., :4] += reference_before_sigmoid
        outputs_coord = tmp.sigmoid()
        outputs_class = self.class_embed(hs)
        out = {"pred_logits": outputs_class[-1], "pred_boxes": outputs_coord[-1]}
        if self.aux_loss:
            out["aux_outputs"] = self._set_aux_loss(outputs_class, outputs_coord)
        return out


def make_inputs():
    return torch.randn(10, 2, 16), torch.randn(10, 2, 16)
