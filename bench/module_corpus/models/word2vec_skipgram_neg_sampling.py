import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SkipGramModel(nn.Module):
    """Skip-gram with negative sampling (Adoni/word2vec_pytorch style): u/v embeddings, init with
    uniform_(-initrange, initrange) and a zero context table, torch.bmm of neg embeddings with emb_u.unsqueeze(2),
    F.logsigmoid, -1 * sum, plus save-embedding-like .cpu().data.numpy() nearest neighbour lookup."""

    def __init__(self, emb_size, emb_dimension):
        super(SkipGramModel, self).__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=False)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=False)
        self.init_emb()

    def init_emb(self):
        initrange = 0.5 / self.emb_dimension
        self.u_embeddings.weight.data.uniform_(-initrange, initrange)
        self.v_embeddings.weight.data.uniform_(-0.1, 0.1)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        score = torch.mul(emb_u, emb_v).squeeze()
        score = torch.sum(score, dim=1)
        score = F.logsigmoid(score)
        neg_emb_v = self.v_embeddings(neg_v)
        neg_score = torch.bmm(neg_emb_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = F.logsigmoid(-1 * neg_score)
        return -1 * (torch.sum(score) + torch.sum(neg_score))


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.skip_gram_model = SkipGramModel(30, 8)

    def forward(self, pos_u, pos_v, neg_v, query):
        loss = self.skip_gram_model(pos_u, pos_v, neg_v)
        embedding = self.skip_gram_model.u_embeddings.weight.cpu().data.numpy()
        q = embedding[query]
        sims = embedding @ q / (np.linalg.norm(embedding, axis=1) * np.linalg.norm(q) + 1e-8)
        nearest = np.argsort(-sims)[1:4]
        return loss / pos_u.size(0), torch.from_numpy(nearest)


def make_inputs():
    return torch.randint(0, 30, (4,)), torch.randint(0, 30, (4,)), torch.randint(0, 30, (4, 5)), 3
