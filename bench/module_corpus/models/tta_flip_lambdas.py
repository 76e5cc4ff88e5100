import itertools
from functools import reduce

import torch
import torch.nn as nn
import torch.nn.functional as F


class HorizontalFlip:
    identity_param = False

    def __init__(self):
        self.params = [False, True]

    def apply_aug_image(self, image, apply=False, **kwargs):
        return image.flip(3) if apply else image

    def apply_deaug_mask(self, mask, apply=False, **kwargs):
        return mask.flip(3) if apply else mask


class Rotate90:
    identity_param = 0

    def __init__(self, angles):
        if self.identity_param not in angles:
            angles = [self.identity_param] + list(angles)
        self.params = angles

    def apply_aug_image(self, image, angle=0, **kwargs):
        k = angle // 90 if angle >= 0 else (angle + 360) // 90
        return torch.rot90(image, k, (2, 3))

    def apply_deaug_mask(self, mask, angle=0, **kwargs):
        return self.apply_aug_image(mask, -angle)


class Multiply:
    identity_param = 1

    def __init__(self, factors):
        self.params = list(factors)

    def apply_aug_image(self, image, factor=1, **kwargs):
        return image * factor if factor != 1 else image

    def apply_deaug_mask(self, mask, factor=1, **kwargs):
        return mask


class Compose:
    """ttach-style product of transform parameters."""

    def __init__(self, transforms):
        self.aug_transforms = transforms
        self.aug_transform_parameters = list(itertools.product(*[t.params for t in self.aug_transforms]))
        self.deaug_transforms = transforms[::-1]
        self.deaug_transform_parameters = [p[::-1] for p in self.aug_transform_parameters]

    def __iter__(self):
        for aug_params, deaug_params in zip(self.aug_transform_parameters, self.deaug_transform_parameters):
            image_aug_chain = Chain([lambda x, t=t, p=p: t.apply_aug_image(x, p) for t, p in
                                     zip(self.aug_transforms, aug_params)])
            mask_deaug_chain = Chain([lambda x, t=t, p=p: t.apply_deaug_mask(x, p) for t, p in
                                      zip(self.deaug_transforms, deaug_params)])
            yield Transformer(image_pipeline=image_aug_chain, mask_pipeline=mask_deaug_chain)

    def __len__(self):
        return len(self.aug_transform_parameters)


class Chain:
    def __init__(self, functions):
        self.functions = functions or []

    def __call__(self, x):
        for f in self.functions:
            x = f(x)
        return x


class Transformer:
    def __init__(self, image_pipeline, mask_pipeline):
        self.image_pipeline = image_pipeline
        self.mask_pipeline = mask_pipeline

    def augment_image(self, image):
        return self.image_pipeline(image)

    def deaugment_mask(self, mask):
        return self.mask_pipeline(mask)


class Merger:
    def __init__(self, type='mean', n=1):
        if type not in ['mean', 'gmean', 'sum', 'max', 'min', 'tsharpen']:
            raise ValueError('Not correct merge type `{}`.'.format(type))
        self.output = None
        self.type = type
        self.n = n

    def append(self, x):
        if self.type == 'tsharpen':
            x = x ** 0.5
        if self.output is None:
            self.output = x
        elif self.type in ['mean', 'sum', 'tsharpen']:
            self.output = self.output + x
        elif self.type == 'gmean':
            self.output = self.output * x
        elif self.type == 'max':
            self.output = F.max(self.output, x)
        elif self.type == 'min':
            self.output = F.min(self.output, x)

    @property
    def result(self):
        if self.type in ['sum', 'max', 'min']:
            result = self.output
        elif self.type in ['mean', 'tsharpen']:
            result = self.output / self.n
        elif self.type in ['gmean']:
            result = self.output ** (1 / self.n)
        else:
            raise ValueError('Not correct merge type `{}`.'.format(self.type))
        return result


class SegmentationTTAWrapper(nn.Module):
    def __init__(self, model, transforms, merge_mode='mean', output_mask_key=None):
        super().__init__()
        self.model = model
        self.transforms = transforms
        self.merge_mode = merge_mode
        self.output_key = output_mask_key

    def forward(self, image, *args):
        merger = Merger(type=self.merge_mode, n=len(self.transforms))
        for transformer in self.transforms:
            augmented_image = transformer.augment_image(image)
            augmented_output = self.model(augmented_image, *args)
            if self.output_key is not None:
                augmented_output = augmented_output[self.output_key]
            deaugmented_output = transformer.deaugment_mask(augmented_output)
            merger.append(deaugmented_output)
        result = merger.result
        if self.output_key is not None:
            result = {self.output_key: result}
        return result


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1))

    def forward(self, x, temperature=1.0):
        return {'mask': self.body(x) / temperature, 'n_params': reduce(lambda a, b: a + b, [p.numel() for p in self.parameters()])}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        transforms = Compose([HorizontalFlip(), Rotate90(angles=[90, 180]), Multiply(factors=[0.9, 1, 1.1])])
        self.tta = SegmentationTTAWrapper(SegNet(), transforms, merge_mode='mean', output_mask_key='mask')

    def forward(self, x):
        return self.tta(x, 2.0)


def make_inputs():
    return (torch.randn(2, 3, 6, 6),)
