import torch
import torch.nn as nn
import torch.nn.functional as F


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.cnn1 = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(1, 4, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(4),
            nn.ReflectionPad2d(1),
            nn.Conv2d(4, 8, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(8),
        )
        self.fc1 = nn.Sequential(
            nn.Linear(8 * 8 * 8, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 5))

    def forward_once(self, x):
        output = self.cnn1(x)
        output = output.view(output.size()[0], -1)
        output = self.fc1(output)
        return output

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        return output1, output2


class ContrastiveLoss(torch.nn.Module):
    """Contrastive loss function (Hadsell et al. 2006), as in the harveyslash Facial-Similarity notebook."""

    def __init__(self, margin=2.0):
        super(ContrastiveLoss, self).__init__()
        self.margin = margin

    def forward(self, output1, output2, label):
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss_contrastive = torch.mean((1 - label) * torch.pow(euclidean_distance, 2) +
                                      (label) * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2))
        return loss_contrastive


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.net = SiameseNetwork()
        self.criterion = ContrastiveLoss()

    def forward(self, img0, img1, label):
        output1, output2 = self.net(img0, img1)
        loss_contrastive = self.criterion(output1, output2, label)
        dissimilarity = F.pairwise_distance(output1, output2)
        return loss_contrastive, dissimilarity, 'Dissimilarity: {:.2f}'.format(dissimilarity[0].item())


def make_inputs():
    return torch.randn(3, 1, 8, 8), torch.randn(3, 1, 8, 8), torch.tensor([[0.], [1.], [1.]])
