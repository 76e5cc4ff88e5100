"""Loss modules made inside forward from tensors (nn.CrossEntropyLoss(weight=class_weights)(logits, y)):
traced as the functional call they wrap. Assumes torch.nn's losses call these functionals with their attributes."""
import torch
import torch.nn.functional as F


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return torch.nn._reduction.legacy_get_string(size_average, reduce)
    return reduction


class MadeLoss:
    """The module's functional with its options bound; the tensors it holds (weight, pos_weight)
    stay the traced values they were made from."""

    def __init__(self, functional, **options):
        self.functional = functional
        self.options = options
        self.training = True
        for name, value in options.items():
            setattr(self, name, value)

    def __call__(self, input, target):
        return self.functional(input, target, **self.options)

    forward = __call__


def cross_entropy_loss_(weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                        label_smoothing=0.0):
    return MadeLoss(F.cross_entropy, weight=weight, ignore_index=ignore_index,
                    reduction=_reduction(size_average, reduce, reduction), label_smoothing=label_smoothing)


def nll_loss_(weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return MadeLoss(F.nll_loss, weight=weight, ignore_index=ignore_index, reduction=_reduction(size_average, reduce, reduction))


def bce_loss_(weight=None, size_average=None, reduce=None, reduction="mean"):
    return MadeLoss(F.binary_cross_entropy, weight=weight, reduction=_reduction(size_average, reduce, reduction))


def bce_with_logits_loss_(weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
    return MadeLoss(F.binary_cross_entropy_with_logits, weight=weight, reduction=_reduction(size_average, reduce, reduction),
                    pos_weight=pos_weight)


LOSSES_MADE_FROM_TENSORS = {
    torch.nn.CrossEntropyLoss: cross_entropy_loss_,
    torch.nn.NLLLoss: nll_loss_,
    torch.nn.BCELoss: bce_loss_,
    torch.nn.BCEWithLogitsLoss: bce_with_logits_loss_,
}


def loss_made_from_tensors(cls):
    """The stand-in making cls from traced values, or None (cls must be one of torch's own)."""
    return LOSSES_MADE_FROM_TENSORS.get(cls)
