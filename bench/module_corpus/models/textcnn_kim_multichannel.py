import torch
import torch.nn as nn
import torch.nn.functional as F


class Config(object):
    """649453932/Chinese-Text-Classification-Pytorch style config object."""

    def __init__(self):
        self.model_name = "TextCNN"
        self.dropout = 0.5
        self.num_classes = 4
        self.n_vocab = 40
        self.embed = 8
        self.filter_sizes = (2, 3, 4)
        self.num_filters = 6
        self.pad_size = 12
        self.embedding_pretrained = torch.linspace(-1, 1, 40 * 8).view(40, 8)


class Model(nn.Module):
    """Kim (2014) CNN for sentence classification (Shawn1993/cnn-text-classification-pytorch + Chinese-Text-Classification):
    static + non-static embedding channels, ModuleList of Conv2d(1, Co, (K, D)), conv_and_pool with squeeze(3) and
    max_pool1d over x.size(2), forward taking a (ids, seq_len) tuple."""

    def __init__(self, config=None):
        super(Model, self).__init__()
        config = config or Config()
        if config.embedding_pretrained is not None:
            self.embedding = nn.Embedding.from_pretrained(config.embedding_pretrained, freeze=False)
            self.embedding_static = nn.Embedding.from_pretrained(config.embedding_pretrained, freeze=True)
        else:
            self.embedding = nn.Embedding(config.n_vocab, config.embed, padding_idx=config.n_vocab - 1)
            self.embedding_static = None
        Ci = 1 if self.embedding_static is None else 2
        self.convs = nn.ModuleList([nn.Conv2d(Ci, config.num_filters, (k, config.embed)) for k in config.filter_sizes])
        self.convs_nonstatic = nn.ModuleList([nn.Conv1d(config.embed, config.num_filters, k, padding=k // 2)
                                              for k in config.filter_sizes])
        self.dropout = nn.Dropout(config.dropout)
        self.fc = nn.Linear(config.num_filters * len(config.filter_sizes) * 2, config.num_classes)

    def conv_and_pool(self, x, conv):
        x = F.relu(conv(x)).squeeze(3)
        x = F.max_pool1d(x, x.size(2)).squeeze(2)
        return x

    def forward(self, x):
        ids, seq_len = x
        out = self.embedding(ids)
        if self.embedding_static is not None:
            static = self.embedding_static(ids)
            out2 = torch.stack([out, static], dim=1)
        else:
            out2 = out.unsqueeze(1)
        a = torch.cat([self.conv_and_pool(out2, conv) for conv in self.convs], 1)
        # Shawn1993 variant: Conv1d over (N, D, W), masked by length before the max
        e = out.transpose(1, 2)
        mask = (torch.arange(ids.size(1))[None, :] < seq_len[:, None]).unsqueeze(1)
        b = [F.relu(conv(e))[:, :, :ids.size(1)].masked_fill(~mask, float("-inf")).max(dim=2)[0] for conv in self.convs_nonstatic]
        b = torch.cat(b, 1)
        out = self.dropout(torch.cat([a, b], 1))
        logit = self.fc(out)
        return logit, torch.max(logit.data, 1)[1]


def make_inputs():
    ids = torch.randint(0, 40, (3, 12))
    return ((ids, torch.tensor([12, 7, 4])),)
