import torch
from torch import nn


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


class Model(nn.Module):
    """PyTorch text-classification tutorial with collate_batch folded into forward: a Python list of 1-D token
    tensors, offsets = torch.tensor([0] + lengths[:-1]).cumsum(0), torch.cat of the list, predicted_label
    .argmax(1) + 1 and accuracy via .item()."""

    def __init__(self):
        super(Model, self).__init__()
        self.model = TextClassificationModel(40, 8, 4)

    def collate(self, batch):
        label_list, text_list, offsets = [], [], [0]
        for (_label, _text) in batch:
            label_list.append(_label - 1)
            text_list.append(_text)
            offsets.append(_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        return label_list, text_list, offsets

    def forward(self, batch):
        label, text, offsets = self.collate(batch)
        predicted_label = self.model(text, offsets)
        loss = nn.functional.cross_entropy(predicted_label, label)
        total_acc = (predicted_label.argmax(1) == label).sum().item()
        total_count = label.size(0)
        return loss, total_acc / total_count


def make_inputs():
    batch = [(1, torch.tensor([3, 4, 5])), (3, torch.tensor([7, 8])), (2, torch.tensor([1, 2, 3, 9, 10]))]
    return (batch,)
