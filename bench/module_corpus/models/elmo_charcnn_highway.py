from typing import Callable, Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F


class Highway(nn.Module):
    """allennlp Highway: y = g * x + (1 - g) * f(A(x)); gate bias initialised to 1 so it passes input."""

    def __init__(self, input_dim: int, num_layers: int = 1, activation: Callable[[torch.Tensor], torch.Tensor] = F.relu):
        super().__init__()
        self._input_dim = input_dim
        self._layers = nn.ModuleList([nn.Linear(input_dim, input_dim * 2) for _ in range(num_layers)])
        self._activation = activation
        for layer in self._layers:
            layer.bias[input_dim:].data.fill_(1)

    def forward(self, inputs):
        current_input = inputs
        for layer in self._layers:
            projected_input = layer(current_input)
            linear_part = current_input
            nonlinear_part, gate = projected_input.chunk(2, dim=-1)
            nonlinear_part = self._activation(nonlinear_part)
            gate = torch.sigmoid(gate)
            current_input = gate * linear_part + (1 - gate) * nonlinear_part
        return current_input


def add_sentence_boundary_token_ids(tensor, mask, sentence_begin_token, sentence_end_token):
    sequence_lengths = mask.sum(dim=1).detach().cpu().numpy() if False else mask.sum(dim=1).tolist()
    tensor_shape = list(tensor.data.shape)
    new_shape = list(tensor_shape)
    new_shape[1] = tensor_shape[1] + 2
    tensor_with_boundary_tokens = tensor.new_zeros(*new_shape)
    tensor_with_boundary_tokens[:, 1:-1, :] = tensor
    for i, j in enumerate(sequence_lengths):
        tensor_with_boundary_tokens[i, 0, :] = sentence_begin_token
        tensor_with_boundary_tokens[i, j + 1, :] = sentence_end_token
    new_mask = (tensor_with_boundary_tokens > 0).sum(dim=-1) > 0
    return tensor_with_boundary_tokens, new_mask


class Model(nn.Module):
    """allennlp _ElmoCharacterEncoder: bos/eos char ids added in forward, char embedding, multiple CNN filters
    (max over time), highway, projection; options dict-driven."""

    def __init__(self):
        super().__init__()
        self._options = {"char_cnn": {"activation": "relu", "embedding": {"dim": 4}, "filters": [[1, 4], [2, 8], [3, 8]],
                                      "max_characters_per_token": 6, "n_characters": 40, "n_highway": 2},
                         "lstm": {"projection_dim": 8}}
        cnn_options = self._options["char_cnn"]
        self.max_chars = cnn_options["max_characters_per_token"]
        self._beginning_of_sentence_characters = torch.tensor([38] + [39] * (self.max_chars - 1)) + 1
        self._end_of_sentence_characters = torch.tensor([37] + [39] * (self.max_chars - 1)) + 1
        self._char_embedding_weights = nn.Parameter(torch.randn(cnn_options["n_characters"] + 1, cnn_options["embedding"]["dim"]))
        filters = cnn_options["filters"]
        char_embed_dim = cnn_options["embedding"]["dim"]
        convolutions = []
        for i, (width, num) in enumerate(filters):
            conv = nn.Conv1d(in_channels=char_embed_dim, out_channels=num, kernel_size=width, bias=True)
            convolutions.append(conv)
            self.add_module("char_conv_{}".format(i), conv)
        self._convolutions = convolutions
        n_filters = sum(f[1] for f in filters)
        self._highways = Highway(n_filters, cnn_options["n_highway"], activation=F.relu)
        self._projection = nn.Linear(n_filters, self._options["lstm"]["projection_dim"], bias=True)

    def forward(self, inputs: torch.Tensor) -> Dict[str, torch.Tensor]:
        mask = (inputs > 0).sum(dim=-1) > 0
        character_ids_with_bos_eos, mask_with_bos_eos = add_sentence_boundary_token_ids(
            inputs, mask, self._beginning_of_sentence_characters, self._end_of_sentence_characters)
        max_chars_per_token = self._options["char_cnn"]["max_characters_per_token"]
        character_embedding = F.embedding(character_ids_with_bos_eos.view(-1, max_chars_per_token), self._char_embedding_weights)
        cnn_options = self._options["char_cnn"]
        if cnn_options["activation"] == "tanh":
            activation = torch.tanh
        elif cnn_options["activation"] == "relu":
            activation = F.relu
        else:
            raise Exception("Unknown activations")
        character_embedding = torch.transpose(character_embedding, 1, 2)
        convs = []
        for i in range(len(self._convolutions)):
            conv = getattr(self, "char_conv_{}".format(i))
            convolved = conv(character_embedding)
            convolved, _ = torch.max(convolved, dim=-1)
            convolved = activation(convolved)
            convs.append(convolved)
        token_embedding = torch.cat(convs, dim=-1)
        token_embedding = self._highways(token_embedding)
        token_embedding = self._projection(token_embedding)
        batch_size, sequence_length, _ = character_ids_with_bos_eos.size()
        return {"mask": mask_with_bos_eos, "token_embedding": token_embedding.view(batch_size, sequence_length, -1)}


def make_inputs():
    ids = torch.randint(1, 37, (2, 4, 6))
    ids[1, 3] = 0
    return (ids,)
