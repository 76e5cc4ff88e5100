import torch
import torch.nn as nn


class Sequence(nn.Module):
    def __init__(self, hidden=16):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


class Model(nn.Module):
    """pytorch/examples time_sequence_prediction: double-precision LSTMCell loop over input.split(1, dim=1),
    then `future` free-running steps; the test loss is computed on the observed part."""

    def __init__(self):
        super().__init__()
        self.seq = Sequence()
        self.seq.double()
        self.criterion = nn.MSELoss()

    def forward(self, test_input, test_target, future=4):
        pred = self.seq(test_input, future=future)
        loss = self.criterion(pred[:, :-future], test_target)
        y = pred.detach().numpy()
        return pred, loss, float(y[:, -1].mean())


def make_inputs():
    t = torch.arange(0, 12, dtype=torch.double)
    x = torch.sin(t.unsqueeze(0) / 3.0 + torch.tensor([[0.0], [0.5]], dtype=torch.double))
    return (x[:, :-1], x[:, 1:]), {"future": 4}
