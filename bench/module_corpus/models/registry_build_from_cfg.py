import inspect
import torch
import torch.nn as nn


class Registry:
    """mmcv-style registry with a decorator and build_from_cfg."""

    def __init__(self, name):
        self._name = name
        self._module_dict = dict()

    def get(self, key):
        return self._module_dict.get(key, None)

    def register_module(self, name=None, force=False, module=None):
        def _register(cls):
            module_name = name or cls.__name__
            if not force and module_name in self._module_dict:
                raise KeyError(f"{module_name} is already registered in {self._name}")
            self._module_dict[module_name] = cls
            return cls
        return _register


def build_from_cfg(cfg, registry, default_args=None):
    if not isinstance(cfg, dict):
        raise TypeError(f"cfg must be a dict, but got {type(cfg)}")
    args = cfg.copy()
    if default_args is not None:
        for name, value in default_args.items():
            args.setdefault(name, value)
    obj_type = args.pop("type")
    if isinstance(obj_type, str):
        obj_cls = registry.get(obj_type)
        if obj_cls is None:
            raise KeyError(f"{obj_type} is not in the {registry._name} registry")
    elif inspect.isclass(obj_type):
        obj_cls = obj_type
    else:
        raise TypeError(f"type must be a str or valid type, but got {type(obj_type)}")
    return obj_cls(**args)


BACKBONES = Registry("backbone")
NECKS = Registry("neck")
HEADS = Registry("head")
ACTIVATIONS = Registry("activation")
for _act in [nn.ReLU, nn.GELU, nn.SiLU, nn.Hardswish]:
    ACTIVATIONS.register_module(module=_act)(_act)


def build_activation_layer(cfg):
    return build_from_cfg(cfg, ACTIVATIONS)


@BACKBONES.register_module()
class TinyResNet(nn.Module):
    def __init__(self, in_channels=3, base=8, depth=2, act_cfg=dict(type="ReLU"), out_indices=(0, 1)):
        super().__init__()
        self.out_indices = out_indices
        self.stages = nn.ModuleList()
        c = in_channels
        for i in range(depth):
            self.stages.append(nn.Sequential(nn.Conv2d(c, base * 2 ** i, 3, 2, 1), nn.BatchNorm2d(base * 2 ** i),
                                             build_activation_layer(act_cfg)))
            c = base * 2 ** i

    def forward(self, x):
        outs = []
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i in self.out_indices:
                outs.append(x)
        return tuple(outs)


@NECKS.register_module(name="GAPNeck")
class GlobalAveragePooling(nn.Module):
    def __init__(self, dim=2):
        super().__init__()
        assert dim in [1, 2, 3], f"GlobalAveragePooling dim only support {1, 2, 3}, get {dim} instead."
        self.gap = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, inputs):
        if isinstance(inputs, tuple):
            outs = tuple([self.gap(x) for x in inputs])
            outs = tuple([out.view(x.size(0), -1) for out, x in zip(outs, inputs)])
        elif isinstance(inputs, torch.Tensor):
            outs = self.gap(inputs)
            outs = outs.view(inputs.size(0), -1)
        else:
            raise TypeError("neck inputs should be tuple or torch.tensor")
        return outs


@HEADS.register_module()
class LinearClsHead(nn.Module):
    def __init__(self, num_classes, in_channels, topk=(1,)):
        super().__init__()
        self.fc = nn.Linear(in_channels, num_classes)
        self.topk = topk

    def pre_logits(self, x):
        if isinstance(x, tuple):
            x = x[-1]
        return x

    def forward(self, x):
        return self.fc(self.pre_logits(x))


class Model(nn.Module):
    def __init__(self, backbone=dict(type="TinyResNet", act_cfg=dict(type="Hardswish")), neck=dict(type="GAPNeck"),
                 head=dict(type="LinearClsHead", num_classes=5, in_channels=16)):
        super().__init__()
        self.backbone = build_from_cfg(backbone, BACKBONES, default_args=dict(base=8))
        self.neck = build_from_cfg(neck, NECKS) if neck is not None else None
        self.head = build_from_cfg(head, HEADS)

    @property
    def with_neck(self):
        return hasattr(self, "neck") and self.neck is not None

    def extract_feat(self, img):
        x = self.backbone(img)
        if self.with_neck:
            x = self.neck(x)
        return x

    def forward(self, img, return_loss=False, **kwargs):
        if return_loss:
            raise NotImplementedError
        feats = self.extract_feat(img)
        cls_score = self.head(feats)
        pred = torch.softmax(cls_score, dim=1) if cls_score is not None else None
        return dict(cls_score=cls_score, pred=pred, feats=list(feats))


def make_inputs():
    return (torch.randn(2, 3, 16, 16),)
