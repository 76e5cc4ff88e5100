import torch
import torch.nn as nn
import torch.nn.functional as F


class TextEncoder(nn.Module):
    def __init__(self, vocab=30, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layer = nn.TransformerEncoderLayer(dim, 2, dim * 2, dropout=0.0, batch_first=True)

    def forward(self, ids, mask):
        return self.layer(self.emb(ids), src_key_padding_mask=~mask.bool())


class Model(nn.Module):
    """Fine-tuning head with a partially frozen backbone: torch.set_grad_enabled(self.training and not frozen),
    torch.inference_mode-free variant, requires_grad_ toggled by epoch counter, pooled by masked mean."""

    def __init__(self, freeze_encoder_epochs=1):
        super().__init__()
        self.encoder = TextEncoder()
        self.classifier = nn.Sequential(nn.Dropout(0.1), nn.Linear(16, 3))
        self.freeze_encoder_epochs = freeze_encoder_epochs
        self.current_epoch = 0

    @property
    def encoder_frozen(self):
        return self.current_epoch < self.freeze_encoder_epochs

    def forward(self, ids, mask):
        with torch.set_grad_enabled(self.training and not self.encoder_frozen):
            hidden = self.encoder(ids, mask)
        with torch.no_grad():
            denom = mask.sum(1, keepdim=True).clamp(min=1)
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / denom
        grad_on = torch.is_grad_enabled()
        logits = self.classifier(pooled)
        return logits, grad_on, hidden.requires_grad


def make_inputs():
    ids = torch.randint(0, 30, (2, 6))
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    return ids, mask
