import torch
import torch.nn as nn

# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

sequence_length = 6
input_size = 5
hidden_size = 8
num_layers = 2
num_classes = 3


class BiRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BiRNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, num_classes)  # 2 for bidirection

    def forward(self, x):
        # Set initial states
        h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)
        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))
        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out


class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super(RNNLM, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        x = self.embed(x)
        out, (h, c) = self.lstm(x, h)
        out = out.reshape(out.size(0) * out.size(1), out.size(2))
        out = self.linear(out)
        return out, (h, c)


def detach(states):
    return [state.detach() for state in states]


class Model(nn.Module):
    """yunjey/pytorch-tutorial: module-level `device` global used with .to(device) inside forward, images
    reshaped with .reshape(-1, sequence_length, input_size) from module constants, RNNLM trained over chunks
    with states = detach(states) list comprehension, torch.max(outputs.data, 1) accuracy."""

    def __init__(self):
        super(Model, self).__init__()
        self.birnn = BiRNN(input_size, hidden_size, num_layers, num_classes)
        self.lm = RNNLM(20, 6, 8, 1)
        self.seq_length = 4

    def forward(self, images, labels, ids):
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        outputs = self.birnn(images)
        loss = nn.CrossEntropyLoss()(outputs, labels)
        _, predicted = torch.max(outputs.data, 1)
        correct = (predicted == labels).sum().item()
        states = (torch.zeros(1, ids.size(0), 8).to(device), torch.zeros(1, ids.size(0), 8).to(device))
        lm_loss = 0
        for i in range(0, ids.size(1) - self.seq_length, self.seq_length):
            inputs = ids[:, i:i + self.seq_length].to(device)
            targets = ids[:, (i + 1):(i + 1) + self.seq_length].to(device)
            states = detach(states)
            out, states = self.lm(inputs, states)
            lm_loss += nn.functional.cross_entropy(out, targets.reshape(-1))
        return loss, 100 * correct / labels.size(0), lm_loss


def make_inputs():
    return torch.randn(4, 1, 6, 5), torch.tensor([0, 2, 1, 1]), torch.randint(0, 20, (2, 13))
