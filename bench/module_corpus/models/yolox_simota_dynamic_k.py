import torch
import torch.nn as nn
import torch.nn.functional as F


def bboxes_iou(bboxes_a, bboxes_b, xyxy=True):
    if bboxes_a.shape[1] != 4 or bboxes_b.shape[1] != 4:
        raise IndexError
    if xyxy:
        tl = torch.max(bboxes_a[:, None, :2], bboxes_b[:, :2])
        br = torch.min(bboxes_a[:, None, 2:], bboxes_b[:, 2:])
        area_a = torch.prod(bboxes_a[:, 2:] - bboxes_a[:, :2], 1)
        area_b = torch.prod(bboxes_b[:, 2:] - bboxes_b[:, :2], 1)
    else:
        tl = torch.max((bboxes_a[:, None, :2] - bboxes_a[:, None, 2:] / 2), (bboxes_b[:, :2] - bboxes_b[:, 2:] / 2))
        br = torch.min((bboxes_a[:, None, :2] + bboxes_a[:, None, 2:] / 2), (bboxes_b[:, :2] + bboxes_b[:, 2:] / 2))
        area_a = torch.prod(bboxes_a[:, 2:], 1)
        area_b = torch.prod(bboxes_b[:, 2:], 1)
    en = (tl < br).type(tl.type()).prod(dim=2)
    area_i = torch.prod(br - tl, 2) * en
    return area_i / (area_a[:, None] + area_b - area_i)


class Model(nn.Module):
    """Megvii YOLOX YOLOXHead.get_assignments (SimOTA): in-center prior, pairwise cost, dynamic-k matching loop."""

    def __init__(self, num_classes=3, width=8, strides=(8, 16)):
        super().__init__()
        self.num_classes = num_classes
        self.strides = strides
        self.stem = nn.Conv2d(3, width, 3, 8, 1)
        self.down = nn.Conv2d(width, width, 3, 2, 1)
        self.cls_preds = nn.ModuleList([nn.Conv2d(width, num_classes, 1) for _ in strides])
        self.reg_preds = nn.ModuleList([nn.Conv2d(width, 4, 1) for _ in strides])
        self.obj_preds = nn.ModuleList([nn.Conv2d(width, 1, 1) for _ in strides])
        self.grids = [torch.zeros(1)] * len(strides)

    def get_output_and_grid(self, output, k, stride, dtype):
        grid = self.grids[k]
        batch_size = output.shape[0]
        n_ch = 5 + self.num_classes
        hsize, wsize = output.shape[-2:]
        if grid.shape[2:4] != output.shape[2:4]:
            yv, xv = torch.meshgrid([torch.arange(hsize), torch.arange(wsize)], indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, hsize, wsize, 2).type(dtype)
            self.grids[k] = grid
        output = output.view(batch_size, 1, n_ch, hsize, wsize)
        output = output.permute(0, 1, 3, 4, 2).reshape(batch_size, hsize * wsize, -1)
        grid = grid.view(1, -1, 2)
        output[..., :2] = (output[..., :2] + grid) * stride
        output[..., 2:4] = torch.exp(output[..., 2:4]) * stride
        return output, grid

    def get_geometry_constraint(self, gt_bboxes_per_image, expanded_strides, x_shifts, y_shifts):
        expanded_strides_per_image = expanded_strides[0]
        x_centers_per_image = ((x_shifts[0] + 0.5) * expanded_strides_per_image).unsqueeze(0)
        y_centers_per_image = ((y_shifts[0] + 0.5) * expanded_strides_per_image).unsqueeze(0)
        center_radius = 1.5
        center_dist = expanded_strides_per_image.unsqueeze(0) * center_radius
        gt_bboxes_per_image_l = (gt_bboxes_per_image[:, 0:1]) - center_dist
        gt_bboxes_per_image_r = (gt_bboxes_per_image[:, 0:1]) + center_dist
        gt_bboxes_per_image_t = (gt_bboxes_per_image[:, 1:2]) - center_dist
        gt_bboxes_per_image_b = (gt_bboxes_per_image[:, 1:2]) + center_dist
        c_l = x_centers_per_image - gt_bboxes_per_image_l
        c_r = gt_bboxes_per_image_r - x_centers_per_image
        c_t = y_centers_per_image - gt_bboxes_per_image_t
        c_b = gt_bboxes_per_image_b - y_centers_per_image
        center_deltas = torch.stack([c_l, c_t, c_r, c_b], 2)
        is_in_centers = center_deltas.min(dim=-1).values > 0.0
        anchor_filter = is_in_centers.sum(dim=0) > 0
        geometry_relation = is_in_centers[:, anchor_filter]
        return anchor_filter, geometry_relation

    def simota_matching(self, cost, pair_wise_ious, gt_classes, num_gt, fg_mask):
        matching_matrix = torch.zeros_like(cost, dtype=torch.uint8)
        n_candidate_k = min(10, pair_wise_ious.size(1))
        topk_ious, _ = torch.topk(pair_wise_ious, n_candidate_k, dim=1)
        dynamic_ks = torch.clamp(topk_ious.sum(1).int(), min=1)
        dynamic_ks = dynamic_ks.tolist()
        for gt_idx in range(num_gt):
            _, pos_idx = torch.topk(cost[gt_idx], k=dynamic_ks[gt_idx], largest=False)
            matching_matrix[gt_idx][pos_idx] = 1
        del topk_ious, dynamic_ks, pos_idx
        anchor_matching_gt = matching_matrix.sum(0)
        if anchor_matching_gt.max() > 1:
            multiple_match_mask = anchor_matching_gt > 1
            _, cost_argmin = torch.min(cost[:, multiple_match_mask], dim=0)
            matching_matrix[:, multiple_match_mask] *= 0
            matching_matrix[cost_argmin, multiple_match_mask] = 1
        fg_mask_inboxes = anchor_matching_gt > 0
        num_fg = fg_mask_inboxes.sum().item()
        fg_mask[fg_mask.clone()] = fg_mask_inboxes
        matched_gt_inds = matching_matrix[:, fg_mask_inboxes].argmax(0)
        gt_matched_classes = gt_classes[matched_gt_inds]
        pred_ious_this_matching = (matching_matrix * pair_wise_ious).sum(0)[fg_mask_inboxes]
        return num_fg, gt_matched_classes, pred_ious_this_matching, matched_gt_inds

    @torch.no_grad()
    def get_assignments(self, num_gt, gt_bboxes_per_image, gt_classes, bboxes_preds_per_image, expanded_strides,
                        x_shifts, y_shifts, cls_preds, obj_preds):
        fg_mask, geometry_relation = self.get_geometry_constraint(gt_bboxes_per_image, expanded_strides, x_shifts, y_shifts)
        bboxes_preds_per_image = bboxes_preds_per_image[fg_mask]
        cls_preds_ = cls_preds[fg_mask]
        obj_preds_ = obj_preds[fg_mask]
        num_in_boxes_anchor = bboxes_preds_per_image.shape[0]
        pair_wise_ious = bboxes_iou(gt_bboxes_per_image, bboxes_preds_per_image, False)
        gt_cls_per_image = F.one_hot(gt_classes.to(torch.int64), self.num_classes).float()
        pair_wise_ious_loss = -torch.log(pair_wise_ious + 1e-8)
        cls_preds_ = (cls_preds_.float().sigmoid_() * obj_preds_.float().sigmoid_()).sqrt()
        pair_wise_cls_loss = F.binary_cross_entropy(
            cls_preds_.unsqueeze(0).repeat(num_gt, 1, 1), gt_cls_per_image.unsqueeze(1).repeat(1, num_in_boxes_anchor, 1),
            reduction="none").sum(-1)
        del cls_preds_
        cost = pair_wise_cls_loss + 3.0 * pair_wise_ious_loss + float(1e6) * (~geometry_relation)
        num_fg, gt_matched_classes, pred_ious_this_matching, matched_gt_inds = self.simota_matching(
            cost, pair_wise_ious, gt_classes, num_gt, fg_mask)
        return gt_matched_classes, fg_mask, pred_ious_this_matching, matched_gt_inds, num_fg

    def forward(self, imgs, labels):
        x = self.stem(imgs)
        feats = [x, self.down(x)]
        outputs, x_shifts, y_shifts, expanded_strides = [], [], [], []
        for k, (stride, f) in enumerate(zip(self.strides, feats)):
            out = torch.cat([self.reg_preds[k](f), self.obj_preds[k](f), self.cls_preds[k](f)], 1)
            out, grid = self.get_output_and_grid(out, k, stride, f.type())
            x_shifts.append(grid[:, :, 0])
            y_shifts.append(grid[:, :, 1])
            expanded_strides.append(torch.zeros(1, grid.shape[1]).fill_(stride).type_as(f))
            outputs.append(out)
        outputs = torch.cat(outputs, 1)
        x_shifts = torch.cat(x_shifts, 1)
        y_shifts = torch.cat(y_shifts, 1)
        expanded_strides = torch.cat(expanded_strides, 1)
        bbox_preds = outputs[:, :, :4]
        obj_preds = outputs[:, :, 4:5]
        cls_preds = outputs[:, :, 5:]
        nlabel = (labels.sum(dim=2) > 0).sum(dim=1)
        cls_targets, fg_masks, num_fg = [], [], 0.0
        for batch_idx in range(outputs.shape[0]):
            num_gt = int(nlabel[batch_idx])
            gt_bboxes_per_image = labels[batch_idx, :num_gt, 1:5]
            gt_classes = labels[batch_idx, :num_gt, 0]
            (gt_matched_classes, fg_mask, pred_ious_this_matching, matched_gt_inds, num_fg_img) = self.get_assignments(
                num_gt, gt_bboxes_per_image, gt_classes, bbox_preds[batch_idx], expanded_strides, x_shifts, y_shifts,
                cls_preds[batch_idx], obj_preds[batch_idx])
            num_fg += num_fg_img
            cls_target = F.one_hot(gt_matched_classes.to(torch.int64), self.num_classes) * pred_ious_this_matching.unsqueeze(-1)
            cls_targets.append(cls_target)
            fg_masks.append(fg_mask)
        cls_targets = torch.cat(cls_targets, 0)
        fg_masks = torch.cat(fg_masks, 0)
        num_fg = max(num_fg, 1)
        loss_cls = F.binary_cross_entropy_with_logits(cls_preds.view(-1, self.num_classes)[fg_masks], cls_targets,
                                                      reduction="none").sum() / num_fg
        return loss_cls, fg_masks


def make_inputs():
    labels = torch.tensor([[[0, 20.0, 20.0, 24.0, 20.0], [2, 44.0, 40.0, 30.0, 36.0], [0, 0, 0, 0, 0]],
                           [[1, 32.0, 30.0, 40.0, 30.0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]])
    return torch.randn(2, 3, 64, 64), labels
