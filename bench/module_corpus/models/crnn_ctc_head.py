import torch
import torch.nn as nn
import torch.nn.functional as F


class BidirectionalLSTM(nn.Module):
    def __init__(self, nIn, nHidden, nOut):
        super().__init__()
        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)

    def forward(self, input):
        recurrent, _ = self.rnn(input)
        T, b, h = recurrent.size()
        t_rec = recurrent.view(T * b, h)
        output = self.embedding(t_rec)
        output = output.view(T, b, -1)
        return output


class Model(nn.Module):
    """CRNN (meijieru/crnn.pytorch) with CTC loss and greedy-decode scores in forward."""

    def __init__(self, imgH=16, nc=1, nclass=11, nh=16, leakyRelu=False):
        super().__init__()
        assert imgH % 16 == 0, "imgH has to be a multiple of 16"
        ks = [3, 3, 3, 3]
        ps = [1, 1, 1, 1]
        ss = [1, 1, 1, 1]
        nm = [8, 16, 16, 16]
        cnn = nn.Sequential()

        def convRelu(i, batchNormalization=False):
            nIn = nc if i == 0 else nm[i - 1]
            nOut = nm[i]
            cnn.add_module("conv{0}".format(i), nn.Conv2d(nIn, nOut, ks[i], ss[i], ps[i]))
            if batchNormalization:
                cnn.add_module("batchnorm{0}".format(i), nn.BatchNorm2d(nOut))
            if leakyRelu:
                cnn.add_module("relu{0}".format(i), nn.LeakyReLU(0.2, inplace=True))
            else:
                cnn.add_module("relu{0}".format(i), nn.ReLU(True))

        convRelu(0)
        cnn.add_module("pooling{0}".format(0), nn.MaxPool2d(2, 2))
        convRelu(1)
        cnn.add_module("pooling{0}".format(1), nn.MaxPool2d(2, 2))
        convRelu(2, True)
        cnn.add_module("pooling{0}".format(2), nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
        convRelu(3, True)
        cnn.add_module("pooling{0}".format(3), nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
        self.cnn = cnn
        self.rnn = nn.Sequential(BidirectionalLSTM(nm[-1], nh, nh), BidirectionalLSTM(nh, nh, nclass))
        self.ctc = nn.CTCLoss(blank=0, reduction="mean", zero_infinity=True)

    def forward(self, input, targets, target_lengths):
        conv = self.cnn(input)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        conv = conv.squeeze(2)
        conv = conv.permute(2, 0, 1)  # [w, b, c]
        output = self.rnn(conv)
        log_probs = F.log_softmax(output, dim=2)
        input_lengths = torch.full(size=(b,), fill_value=log_probs.size(0), dtype=torch.long)
        loss = self.ctc(log_probs, targets, input_lengths, target_lengths)
        preds_size = torch.IntTensor([log_probs.size(0)] * b)
        best = log_probs.argmax(2).transpose(1, 0)
        return loss, best, preds_size


def make_inputs():
    return torch.randn(2, 1, 16, 24), torch.tensor([[1, 2, 3], [4, 5, 0]]), torch.tensor([3, 2])
