import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    hidden_dim = 8
    emb_dim = 8
    vocab_size = 20
    is_coverage = True
    pointer_gen = True
    cov_loss_wt = 1.0
    eps = 1e-12


config = Config()


class Attention(nn.Module):
    def __init__(self):
        super(Attention, self).__init__()
        if config.is_coverage:
            self.W_c = nn.Linear(1, config.hidden_dim * 2, bias=False)
        self.decode_proj = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2)
        self.W_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2, bias=False)
        self.v = nn.Linear(config.hidden_dim * 2, 1, bias=False)

    def forward(self, s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask, coverage):
        b, t_k, n = list(encoder_outputs.size())
        dec_fea = self.decode_proj(s_t_hat)
        dec_fea_expanded = dec_fea.unsqueeze(1).expand(b, t_k, n).contiguous()
        dec_fea_expanded = dec_fea_expanded.view(-1, n)
        att_features = encoder_feature + dec_fea_expanded
        if config.is_coverage:
            coverage_input = coverage.view(-1, 1)
            coverage_feature = self.W_c(coverage_input)
            att_features = att_features + coverage_feature
        e = torch.tanh(att_features)
        scores = self.v(e).view(-1, t_k)
        attn_dist_ = F.softmax(scores, dim=1) * enc_padding_mask
        normalization_factor = attn_dist_.sum(1, keepdim=True)
        attn_dist = attn_dist_ / normalization_factor
        attn_dist = attn_dist.unsqueeze(1)
        c_t = torch.bmm(attn_dist, encoder_outputs).view(-1, config.hidden_dim * 2)
        attn_dist = attn_dist.view(-1, t_k)
        if config.is_coverage:
            coverage = coverage.view(-1, t_k) + attn_dist
        return c_t, attn_dist, coverage


class Model(nn.Module):
    """atulkum pointer_summarizer decoder step loop: p_gen, vocab_dist scaled, extra_zeros appended, final
    distribution via scatter_add over enc_batch_extend_vocab, coverage loss."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(config.vocab_size, config.emb_dim)
        self.encoder = nn.LSTM(config.emb_dim, config.hidden_dim, num_layers=1, batch_first=True, bidirectional=True)
        self.W_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2, bias=False)
        self.reduce_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim)
        self.reduce_c = nn.Linear(config.hidden_dim * 2, config.hidden_dim)
        self.attention_network = Attention()
        self.x_context = nn.Linear(config.hidden_dim * 2 + config.emb_dim, config.emb_dim)
        self.lstm = nn.LSTM(config.emb_dim, config.hidden_dim, num_layers=1, batch_first=True, bidirectional=False)
        if config.pointer_gen:
            self.p_gen_linear = nn.Linear(config.hidden_dim * 4 + config.emb_dim, 1)
        self.out1 = nn.Linear(config.hidden_dim * 3, config.hidden_dim)
        self.out2 = nn.Linear(config.hidden_dim, config.vocab_size)

    def reduce_state(self, hidden):
        h, c = hidden
        h_in = h.transpose(0, 1).contiguous().view(-1, config.hidden_dim * 2)
        hidden_reduced_h = F.relu(self.reduce_h(h_in))
        c_in = c.transpose(0, 1).contiguous().view(-1, config.hidden_dim * 2)
        hidden_reduced_c = F.relu(self.reduce_c(c_in))
        return hidden_reduced_h.unsqueeze(0), hidden_reduced_c.unsqueeze(0)

    def decoder_step(self, y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask, c_t_1, extra_zeros,
                     enc_batch_extend_vocab, coverage):
        y_t_1_embd = self.embedding(y_t_1)
        x = self.x_context(torch.cat((c_t_1, y_t_1_embd), 1))
        lstm_out, s_t = self.lstm(x.unsqueeze(1), s_t_1)
        h_decoder, c_decoder = s_t
        s_t_hat = torch.cat((h_decoder.view(-1, config.hidden_dim), c_decoder.view(-1, config.hidden_dim)), 1)
        c_t, attn_dist, coverage_next = self.attention_network(s_t_hat, encoder_outputs, encoder_feature,
                                                               enc_padding_mask, coverage)
        p_gen = None
        if config.pointer_gen:
            p_gen_input = torch.cat((c_t, s_t_hat, x), 1)
            p_gen = torch.sigmoid(self.p_gen_linear(p_gen_input))
        output = torch.cat((lstm_out.view(-1, config.hidden_dim), c_t), 1)
        output = self.out2(self.out1(output))
        vocab_dist = F.softmax(output, dim=1)
        if config.pointer_gen:
            vocab_dist_ = p_gen * vocab_dist
            attn_dist_ = (1 - p_gen) * attn_dist
            if extra_zeros is not None:
                vocab_dist_ = torch.cat([vocab_dist_, extra_zeros], 1)
            final_dist = vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_)
        else:
            final_dist = vocab_dist
        return final_dist, s_t, c_t, attn_dist, p_gen, coverage_next

    def forward(self, enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs, dec_batch, target_batch):
        batch_size = enc_batch.size(0)
        encoder_outputs, hidden = self.encoder(self.embedding(enc_batch))
        encoder_feature = self.W_h(encoder_outputs.contiguous().view(-1, 2 * config.hidden_dim))
        s_t_1 = self.reduce_state(hidden)
        c_t_1 = torch.zeros((batch_size, 2 * config.hidden_dim))
        extra_zeros = torch.zeros((batch_size, max_art_oovs)) if max_art_oovs > 0 else None
        coverage = torch.zeros(enc_batch.size()) if config.is_coverage else None
        step_losses = []
        for di in range(dec_batch.size(1)):
            y_t_1 = dec_batch[:, di]
            final_dist, s_t_1, c_t_1, attn_dist, p_gen, next_coverage = self.decoder_step(
                y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask, c_t_1, extra_zeros,
                enc_batch_extend_vocab, coverage)
            target = target_batch[:, di]
            gold_probs = torch.gather(final_dist, 1, target.unsqueeze(1)).squeeze()
            step_loss = -torch.log(gold_probs + config.eps)
            if config.is_coverage:
                step_coverage_loss = torch.sum(torch.min(attn_dist, coverage), 1)
                step_loss = step_loss + config.cov_loss_wt * step_coverage_loss
                coverage = next_coverage
            step_losses.append(step_loss)
        return torch.mean(torch.stack(step_losses, 1)), final_dist


def make_inputs():
    enc = torch.tensor([[3, 4, 1, 5, 6], [7, 8, 9, 1, 0]])
    mask = (enc != 0).float()
    ext = torch.tensor([[3, 4, 20, 5, 6], [7, 8, 9, 21, 0]])
    return enc, mask, ext, 2, torch.tensor([[2, 3, 4], [2, 7, 8]]), torch.tensor([[3, 20, 5], [7, 21, 9]])
