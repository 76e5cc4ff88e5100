import math
import torch
import torch.nn as nn
import torch.nn.functional as F

# Code ported from a Keras model: channels_last tensors, padding="same" resolved at call time,
# activations given as strings, Keras' BatchNormalization(momentum=0.99, epsilon=1e-3) defaults,
# TimeDistributed wrapper, Lambda layers wrapping python functions, a Sequential-like "add" API.

ACTIVATIONS = {
    "linear": lambda x: x,
    "relu": F.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "hard_sigmoid": lambda x: torch.clamp(0.2 * x + 0.5, 0.0, 1.0),
    "softmax": lambda x: F.softmax(x, dim=-1),
    "elu": F.elu,
}


def get_activation(identifier):
    if identifier is None:
        return ACTIVATIONS["linear"]
    if callable(identifier):
        return identifier
    return ACTIVATIONS[identifier]


class Layer(nn.Module):
    def __init__(self, name=None, **kwargs):
        super().__init__()
        self._name = name or self.__class__.__name__.lower()
        self.built = False

    def build(self, input_shape):
        self.built = True

    def call(self, inputs):
        raise NotImplementedError

    def forward(self, inputs):
        if not self.built:
            raise RuntimeError(f"layer {self._name} used before being built")
        return self.call(inputs)


class Conv2D(Layer):
    def __init__(self, in_channels, filters, kernel_size, strides=(1, 1), padding="valid", dilation_rate=(1, 1),
                 activation=None, use_bias=True, data_format="channels_last", **kwargs):
        super().__init__(**kwargs)
        if isinstance(kernel_size, int):
            kernel_size = (kernel_size, kernel_size)
        if isinstance(strides, int):
            strides = (strides, strides)
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding.lower()
        self.dilation_rate = dilation_rate
        self.data_format = data_format
        self.activation = get_activation(activation)
        # Keras kernel layout (kh, kw, in, out) kept as-is
        self.kernel = nn.Parameter(torch.empty(kernel_size[0], kernel_size[1], in_channels, filters))
        nn.init.xavier_uniform_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(filters)) if use_bias else None
        self.build(None)

    def _same_padding(self, in_h, in_w):
        out_h = math.ceil(float(in_h) / float(self.strides[0]))
        out_w = math.ceil(float(in_w) / float(self.strides[1]))
        pad_h = max((out_h - 1) * self.strides[0] + (self.kernel_size[0] - 1) * self.dilation_rate[0] + 1 - in_h, 0)
        pad_w = max((out_w - 1) * self.strides[1] + (self.kernel_size[1] - 1) * self.dilation_rate[1] + 1 - in_w, 0)
        pad_top = pad_h // 2
        pad_bottom = pad_h - pad_top
        pad_left = pad_w // 2
        pad_right = pad_w - pad_left
        return [pad_left, pad_right, pad_top, pad_bottom]

    def call(self, inputs):
        if self.data_format == "channels_last":
            x = inputs.permute(0, 3, 1, 2)
        else:
            x = inputs
        if self.padding == "same":
            x = F.pad(x, self._same_padding(x.shape[2], x.shape[3]))
        weight = self.kernel.permute(3, 2, 0, 1)
        x = F.conv2d(x, weight, self.bias, stride=self.strides, dilation=self.dilation_rate)
        x = self.activation(x)
        if self.data_format == "channels_last":
            x = x.permute(0, 2, 3, 1)
        return x


class BatchNormalization(Layer):
    def __init__(self, num_features, axis=-1, momentum=0.99, epsilon=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.bn = nn.BatchNorm1d(num_features, eps=epsilon, momentum=1.0 - momentum)
        self.build(None)

    def call(self, inputs):
        x = inputs.movedim(self.axis, 1)
        shape = x.shape
        x = self.bn(x.reshape(shape[0], shape[1], -1)).reshape(shape)
        return x.movedim(1, self.axis)


class Dense(Layer):
    def __init__(self, input_dim, units, activation=None, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.kernel = nn.Parameter(torch.empty(input_dim, units))
        nn.init.xavier_uniform_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(units)) if use_bias else None
        self.activation = get_activation(activation)
        self.build(None)

    def call(self, inputs):
        output = torch.matmul(inputs, self.kernel)
        if self.bias is not None:
            output = output + self.bias
        return self.activation(output)


class Lambda(Layer):
    def __init__(self, function, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = arguments if arguments else {}
        self.build(None)

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


class TimeDistributed(Layer):
    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer
        self.build(None)

    def call(self, inputs):
        batch_size, timesteps = inputs.shape[0], inputs.shape[1]
        inner = inputs.reshape((-1,) + tuple(inputs.shape[2:]))
        y = self.layer(inner)
        return y.reshape((batch_size, timesteps) + tuple(y.shape[1:]))


class GlobalAveragePooling2D(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.build(None)

    def call(self, inputs):
        return inputs.mean(dim=(1, 2))


class Sequential(nn.Module):
    def __init__(self, layers=None):
        super().__init__()
        self._layers_list = nn.ModuleList()
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        self._layers_list.append(layer)

    def forward(self, x):
        for layer in self._layers_list:
            x = layer(x)
        return x


class SimpleRNN(Layer):
    def __init__(self, input_dim, units, activation="tanh", return_sequences=False, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.return_sequences = return_sequences
        self.cell_in = Dense(input_dim, units, use_bias=True)
        self.cell_rec = Dense(units, units, use_bias=False)
        self.activation = get_activation(activation)
        self.build(None)

    def call(self, inputs):
        h = inputs.new_zeros(inputs.shape[0], self.units)
        outs = []
        for t in range(inputs.shape[1]):
            h = self.activation(self.cell_in(inputs[:, t]) + self.cell_rec(h))
            outs.append(h)
        return torch.stack(outs, 1) if self.return_sequences else h


class Model(nn.Module):
    """A Keras video classifier ported to PyTorch: TimeDistributed CNN over frames (NHWC), SimpleRNN, Dense softmax."""

    def __init__(self, num_classes=4):
        super().__init__()
        frame_encoder = Sequential([
            Lambda(lambda x, scale: x * scale - 1.0, arguments={"scale": 2.0 / 255.0}, name="rescale"),
            Conv2D(3, 8, 3, strides=2, padding="same", activation="relu"),
            BatchNormalization(8),
            Conv2D(8, 8, (3, 2), strides=(2, 1), padding="same", activation="elu"),
            GlobalAveragePooling2D(),
        ])
        self.td = TimeDistributed(frame_encoder)
        self.rnn = SimpleRNN(8, 12, return_sequences=False)
        self.head = Dense(12, num_classes, activation="softmax")
        self.aux = Dense(12, 1, activation="hard_sigmoid")

    def forward(self, frames):
        x = self.td(frames)
        h = self.rnn(x)
        return self.head(h), self.aux(h)


def make_inputs():
    return (torch.rand(2, 3, 11, 9, 3) * 255.0,)
