import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def init_params(module, n_layers):
    if isinstance(module, nn.Linear):
        module.weight.data.normal_(mean=0.0, std=0.02 / math.sqrt(n_layers))
        if module.bias is not None:
            module.bias.data.zero_()
    if isinstance(module, nn.Embedding):
        module.weight.data.normal_(mean=0.0, std=0.02)


class GraphNodeFeature(nn.Module):
    """Compute node features for each node in the graph (atom + in/out degree embeddings, graph token)."""

    def __init__(self, num_heads, num_atoms, num_in_degree, num_out_degree, hidden_dim, n_layers):
        super().__init__()
        self.num_heads = num_heads
        self.num_atoms = num_atoms
        self.atom_encoder = nn.Embedding(num_atoms + 1, hidden_dim, padding_idx=0)
        self.in_degree_encoder = nn.Embedding(num_in_degree, hidden_dim, padding_idx=0)
        self.out_degree_encoder = nn.Embedding(num_out_degree, hidden_dim, padding_idx=0)
        self.graph_token = nn.Embedding(1, hidden_dim)
        self.apply(lambda module: init_params(module, n_layers=n_layers))

    def forward(self, batched_data):
        x, in_degree, out_degree = batched_data["x"], batched_data["in_degree"], batched_data["out_degree"]
        n_graph, n_node = x.size()[:2]
        node_feature = self.atom_encoder(x).sum(dim=-2)
        node_feature = node_feature + self.in_degree_encoder(in_degree) + self.out_degree_encoder(out_degree)
        graph_token_feature = self.graph_token.weight.unsqueeze(0).repeat(n_graph, 1, 1)
        return torch.cat([graph_token_feature, node_feature], dim=1)


class GraphAttnBias(nn.Module):
    """Compute attention bias: spatial (shortest path) encoding, virtual-distance to graph token, multi-hop edge enc."""

    def __init__(self, num_heads, num_edges, num_spatial, num_edge_dis, multi_hop_max_dist, n_layers):
        super().__init__()
        self.num_heads = num_heads
        self.multi_hop_max_dist = multi_hop_max_dist
        self.edge_encoder = nn.Embedding(num_edges + 1, num_heads, padding_idx=0)
        self.edge_dis_encoder = nn.Embedding(num_edge_dis * num_heads * num_heads, 1)
        self.spatial_pos_encoder = nn.Embedding(num_spatial, num_heads, padding_idx=0)
        self.graph_token_virtual_distance = nn.Embedding(1, num_heads)
        self.apply(lambda module: init_params(module, n_layers=n_layers))

    def forward(self, batched_data):
        attn_bias, spatial_pos, x = batched_data["attn_bias"], batched_data["spatial_pos"], batched_data["x"]
        edge_input = batched_data["edge_input"]
        n_graph, n_node = x.size()[:2]
        graph_attn_bias = attn_bias.clone()
        graph_attn_bias = graph_attn_bias.unsqueeze(1).repeat(1, self.num_heads, 1, 1)
        spatial_pos_bias = self.spatial_pos_encoder(spatial_pos).permute(0, 3, 1, 2)
        graph_attn_bias[:, :, 1:, 1:] = graph_attn_bias[:, :, 1:, 1:] + spatial_pos_bias
        t = self.graph_token_virtual_distance.weight.view(1, self.num_heads, 1)
        graph_attn_bias[:, :, 1:, 0] = graph_attn_bias[:, :, 1:, 0] + t
        graph_attn_bias[:, :, 0, :] = graph_attn_bias[:, :, 0, :] + t
        spatial_pos_ = spatial_pos.clone()
        spatial_pos_[spatial_pos_ == 0] = 1
        spatial_pos_ = torch.where(spatial_pos_ > 1, spatial_pos_ - 1, spatial_pos_)
        if self.multi_hop_max_dist > 0:
            spatial_pos_ = spatial_pos_.clamp(0, self.multi_hop_max_dist)
            edge_input = edge_input[:, :, :, : self.multi_hop_max_dist, :]
        edge_input = self.edge_encoder(edge_input).mean(-2)
        max_dist = edge_input.size(-2)
        edge_input_flat = edge_input.permute(3, 0, 1, 2, 4).reshape(max_dist, -1, self.num_heads)
        edge_input_flat = torch.bmm(edge_input_flat,
                                    self.edge_dis_encoder.weight.reshape(-1, self.num_heads, self.num_heads)[:max_dist, :, :])
        edge_input = edge_input_flat.reshape(max_dist, n_graph, n_node, n_node, self.num_heads).permute(1, 2, 3, 0, 4)
        edge_input = (edge_input.sum(-2) / (spatial_pos_.float().unsqueeze(-1))).permute(0, 3, 1, 2)
        graph_attn_bias[:, :, 1:, 1:] = graph_attn_bias[:, :, 1:, 1:] + edge_input
        graph_attn_bias = graph_attn_bias + attn_bias.unsqueeze(1)
        return graph_attn_bias


class Model(nn.Module):
    def __init__(self, hidden_dim=16, num_heads=2, n_layers=2):
        super().__init__()
        self.num_heads = num_heads
        self.node_feature = GraphNodeFeature(num_heads, 10, 8, 8, hidden_dim, n_layers)
        self.attn_bias = GraphAttnBias(num_heads, 6, 8, 4, 3, n_layers)
        self.layers = nn.ModuleList([nn.MultiheadAttention(hidden_dim, num_heads, batch_first=True) for _ in range(n_layers)])
        self.lns = nn.ModuleList([nn.LayerNorm(hidden_dim) for _ in range(n_layers)])
        self.head = nn.Linear(hidden_dim, 1)

    def forward(self, batched_data):
        x = self.node_feature(batched_data)
        bias = self.attn_bias(batched_data)
        n_graph, n_tok = x.shape[:2]
        padding = torch.cat([torch.zeros(n_graph, 1, dtype=torch.bool), batched_data["x"][:, :, 0].eq(0)], dim=1)
        bias = bias.masked_fill(padding[:, None, None, :], float("-inf"))
        mask = bias.reshape(n_graph * self.num_heads, n_tok, n_tok)
        for ln, attn in zip(self.lns, self.layers):
            h = ln(x)
            x = x + attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return self.head(x[:, 0, :])


def make_inputs():
    g = torch.Generator().manual_seed(0)
    n_graph, n_node = 2, 4
    x = torch.randint(1, 10, (n_graph, n_node, 2), generator=g)
    x[1, 3] = 0
    spatial = torch.randint(1, 5, (n_graph, n_node, n_node), generator=g)
    spatial[1, 3, :] = 0
    spatial[1, :, 3] = 0
    batched = {
        "x": x,
        "in_degree": torch.randint(1, 8, (n_graph, n_node), generator=g),
        "out_degree": torch.randint(1, 8, (n_graph, n_node), generator=g),
        "attn_bias": torch.zeros(n_graph, n_node + 1, n_node + 1),
        "spatial_pos": spatial,
        "edge_input": torch.randint(0, 7, (n_graph, n_node, n_node, 4, 1), generator=g),
    }
    return (batched,)
