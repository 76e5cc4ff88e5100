import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Net(nn.Module):
    """Old pytorch/examples mnist Net: F.max_pool2d(self.conv2_drop(...)), x.view(-1, 320)-style hard-coded
    flatten via num_flat_features, F.dropout(x, training=self.training)."""

    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 10)

    def num_flat_features(self, x):
        size = x.size()[1:]  # all dimensions except the batch dimension
        num_features = 1
        for s in size:
            num_features *= s
        return num_features

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.net = Net()
        self.register_buffer("mean", torch.Tensor([0.1307]))
        self.register_buffer("std", torch.Tensor([0.3081]))

    def forward(self, data, target):
        data = (data - self.mean.type_as(data)) / self.std.type_as(data)
        data, target = Variable(data, volatile=True), Variable(target)
        output = self.net(data)
        test_loss = F.nll_loss(output, target, reduction='sum').data
        pred = output.data.max(1, keepdim=True)[1]
        correct = pred.eq(target.data.view_as(pred)).long().cpu().sum()
        return test_loss / data.size()[0], correct, output.data.new(output.size()).copy_(output)


def make_inputs():
    return torch.rand(3, 1, 16, 16), torch.tensor([1, 7, 3])
