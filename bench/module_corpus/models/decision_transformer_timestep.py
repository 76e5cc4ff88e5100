import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.key = nn.Linear(n_embd, n_embd)
        self.query = nn.Linear(n_embd, n_embd)
        self.value = nn.Linear(n_embd, n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(block_size + 1, block_size + 1)).view(1, 1, block_size + 1, block_size + 1))
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def attn(self, x):
        B, T, C = x.size()
        k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    """kzl decision-transformer (Atari variant): interleaved (rtg, state, action) tokens, global timestep
    embedding gathered with torch.gather + repeat_interleave, model_type switch, logits on state tokens."""

    def __init__(self, vocab_size=4, block_size=3 * 4, n_embd=16, n_head=2, n_layer=2, max_timestep=20,
                 model_type="reward_conditioned"):
        super().__init__()
        self.model_type = model_type
        self.block_size = block_size
        self.n_embd = n_embd
        self.pos_emb = nn.Parameter(torch.zeros(1, block_size + 1, n_embd))
        self.global_pos_emb = nn.Parameter(torch.zeros(1, max_timestep + 1, n_embd))
        nn.init.normal_(self.pos_emb, std=0.02)
        nn.init.normal_(self.global_pos_emb, std=0.02)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.state_encoder = nn.Sequential(nn.Conv2d(4, 8, 4, stride=4), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4, n_embd), nn.Tanh())
        self.ret_emb = nn.Sequential(nn.Linear(1, n_embd), nn.Tanh())
        self.action_embeddings = nn.Sequential(nn.Embedding(vocab_size, n_embd), nn.Tanh())

    def forward(self, states, actions, targets=None, rtgs=None, timesteps=None):
        state_embeddings = self.state_encoder(states.reshape(-1, 4, 8, 8).type(torch.float32).contiguous())
        state_embeddings = state_embeddings.reshape(states.shape[0], states.shape[1], self.n_embd)
        if actions is not None and self.model_type == "reward_conditioned":
            rtg_embeddings = self.ret_emb(rtgs.type(torch.float32))
            action_embeddings = self.action_embeddings(actions.type(torch.long).squeeze(-1))
            token_embeddings = torch.zeros((states.shape[0], states.shape[1] * 3 - int(targets is None), self.n_embd),
                                           dtype=torch.float32, device=state_embeddings.device)
            token_embeddings[:, ::3, :] = rtg_embeddings
            token_embeddings[:, 1::3, :] = state_embeddings
            token_embeddings[:, 2::3, :] = action_embeddings[:, -states.shape[1] + int(targets is None):, :]
        elif actions is None and self.model_type == "reward_conditioned":
            rtg_embeddings = self.ret_emb(rtgs.type(torch.float32))
            token_embeddings = torch.zeros((states.shape[0], states.shape[1] * 2, self.n_embd), dtype=torch.float32)
            token_embeddings[:, ::2, :] = rtg_embeddings
            token_embeddings[:, 1::2, :] = state_embeddings[:, -states.shape[1]:, :]
        else:
            raise NotImplementedError()
        batch_size = states.shape[0]
        all_global_pos_emb = torch.repeat_interleave(self.global_pos_emb, batch_size, dim=0)
        position_embeddings = torch.gather(all_global_pos_emb, 1,
                                           torch.repeat_interleave(timesteps, self.n_embd, dim=-1)) + self.pos_emb[:, :token_embeddings.shape[1], :]
        x = self.blocks(token_embeddings + position_embeddings)
        logits = self.head(self.ln_f(x))
        if actions is not None and self.model_type == "reward_conditioned":
            logits = logits[:, 1::3, :]
        elif actions is None and self.model_type == "reward_conditioned":
            logits = logits[:, 1:, :]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def make_inputs():
    B, T = 2, 4
    return ((torch.randn(B, T, 4 * 8 * 8), torch.randint(0, 4, (B, T, 1))),
            {"targets": torch.randint(0, 4, (B, T, 1)), "rtgs": torch.randn(B, T, 1), "timesteps": torch.tensor([[[3]], [[7]]])})
