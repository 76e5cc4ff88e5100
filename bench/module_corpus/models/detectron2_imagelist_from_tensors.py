import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ImageList(object):
    """detectron2 ImageList: images of different sizes padded to one batch tensor whose size is divisible by
    size_divisibility; image_sizes kept as a list of (h, w) tuples; __len__ / __getitem__."""

    def __init__(self, tensor, image_sizes):
        self.tensor = tensor
        self.image_sizes = image_sizes

    def __len__(self):
        return len(self.image_sizes)

    def __getitem__(self, idx):
        size = self.image_sizes[idx]
        return self.tensor[idx, ..., : size[0], : size[1]]

    @property
    def device(self):
        return self.tensor.device

    @staticmethod
    def from_tensors(tensors, size_divisibility=0, pad_value=0.0):
        assert len(tensors) > 0
        assert isinstance(tensors, (tuple, list))
        for t in tensors:
            assert isinstance(t, torch.Tensor), type(t)
            assert t.shape[:-2] == tensors[0].shape[:-2], t.shape
        image_sizes = [(im.shape[-2], im.shape[-1]) for im in tensors]
        max_size = tuple(max(s) for s in zip(*[img.shape for img in tensors]))
        if size_divisibility > 1:
            stride = size_divisibility
            max_size = list(max_size)
            max_size[-2] = int(math.ceil(max_size[-2] / stride) * stride)
            max_size[-1] = int(math.ceil(max_size[-1] / stride) * stride)
            max_size = tuple(max_size)
        if len(tensors) == 1:
            image_size = image_sizes[0]
            padding_size = [0, max_size[-1] - image_size[1], 0, max_size[-2] - image_size[0]]
            batched_imgs = F.pad(tensors[0], padding_size, value=pad_value).unsqueeze_(0)
        else:
            batch_shape = (len(tensors),) + max_size
            batched_imgs = tensors[0].new_full(batch_shape, pad_value)
            for img, pad_img in zip(tensors, batched_imgs):
                pad_img[..., : img.shape[-2], : img.shape[-1]].copy_(img)
        return ImageList(batched_imgs.contiguous(), image_sizes)


class Model(nn.Module):
    """detectron2 GeneralizedRCNN.preprocess_image: per-image dicts, pixel_mean/std buffers with
    .view(-1, 1, 1), ImageList.from_tensors with size_divisibility, backbone on the padded batch, and
    per-image postprocess cropping back to image_sizes with a scale to the requested output size."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pixel_mean", torch.tensor([103.53, 116.28, 123.675]).view(-1, 1, 1), False)
        self.register_buffer("pixel_std", torch.tensor([57.375, 57.12, 58.395]).view(-1, 1, 1), False)
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(4, 2, 3, stride=2, padding=1))
        self.size_divisibility = 4

    @property
    def device(self):
        return self.pixel_mean.device

    def preprocess_image(self, batched_inputs):
        images = [x["image"].to(self.device) for x in batched_inputs]
        images = [(x - self.pixel_mean) / self.pixel_std for x in images]
        images = ImageList.from_tensors(images, self.size_divisibility)
        return images

    def forward(self, batched_inputs):
        images = self.preprocess_image(batched_inputs)
        features = self.backbone(images.tensor)
        up = F.interpolate(features, size=images.tensor.shape[-2:], mode="bilinear", align_corners=False)
        results = []
        for i, (input_per_image, image_size) in enumerate(zip(batched_inputs, images.image_sizes)):
            height = input_per_image.get("height", image_size[0])
            width = input_per_image.get("width", image_size[1])
            r = up[i, :, : image_size[0], : image_size[1]]
            r = F.interpolate(r[None], size=(height, width), mode="bilinear", align_corners=False)[0]
            results.append({"sem_seg": r})
        return results, images.tensor, len(images), images[1]


def make_inputs():
    return ([{"image": torch.rand(3, 10, 7) * 255, "height": 20, "width": 14},
             {"image": torch.rand(3, 6, 9) * 255}],)
