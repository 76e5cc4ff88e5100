import torch
from torch import nn


class Encoder(nn.Module):
    """The base encoder interface for the encoder-decoder architecture."""

    def __init__(self, **kwargs):
        super(Encoder, self).__init__(**kwargs)

    def forward(self, X, *args):
        raise NotImplementedError


class Decoder(nn.Module):
    def __init__(self, **kwargs):
        super(Decoder, self).__init__(**kwargs)

    def init_state(self, enc_outputs, *args):
        raise NotImplementedError

    def forward(self, X, state):
        raise NotImplementedError


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder, **kwargs):
        super(EncoderDecoder, self).__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, *args):
        enc_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_outputs, *args)
        return self.decoder(dec_X, dec_state)


class Seq2SeqEncoder(Encoder):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super(Seq2SeqEncoder, self).__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X, *args):
        X = self.embedding(X)
        X = X.permute(1, 0, 2)
        output, state = self.rnn(X)
        return output, state


class Seq2SeqDecoder(Decoder):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super(Seq2SeqDecoder, self).__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, *args):
        return enc_outputs[1]

    def forward(self, X, state):
        X = self.embedding(X).permute(1, 0, 2)
        context = state[-1].repeat(X.shape[0], 1, 1)
        X_and_context = torch.cat((X, context), 2)
        output, state = self.rnn(X_and_context, state)
        output = self.dense(output).permute(1, 0, 2)
        return output, state


def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    """The softmax cross-entropy loss with masks."""

    def forward(self, pred, label, valid_len):
        weights = torch.ones_like(label)
        weights = sequence_mask(weights, valid_len)
        self.reduction = 'none'
        unweighted_loss = super(MaskedSoftmaxCELoss, self).forward(pred.permute(0, 2, 1), label)
        weighted_loss = (unweighted_loss * weights).mean(dim=1)
        return weighted_loss


class Model(nn.Module):
    """d2l.ai seq2seq train step without backward: bos prepended with torch.tensor([bos] * n).reshape(-1, 1),
    teacher forcing via Y[:, :-1], MaskedSoftmaxCELoss subclass that flips self.reduction in forward."""

    def __init__(self, vocab=12, bos=1):
        super().__init__()
        encoder = Seq2SeqEncoder(vocab, 8, 16, 2)
        decoder = Seq2SeqDecoder(vocab, 8, 16, 2)
        self.net = EncoderDecoder(encoder, decoder)
        self.loss = MaskedSoftmaxCELoss()
        self.bos = bos

    def forward(self, X, X_valid_len, Y, Y_valid_len):
        bos = torch.tensor([self.bos] * Y.shape[0], device=Y.device).reshape(-1, 1)
        dec_input = torch.cat([bos, Y[:, :-1]], 1)
        Y_hat, _ = self.net(X, dec_input, X_valid_len)
        l = self.loss(Y_hat, Y, Y_valid_len)
        num_tokens = Y_valid_len.sum()
        return Y_hat, l.sum(), num_tokens


def make_inputs():
    X = torch.randint(0, 12, (3, 7))
    Y = torch.randint(0, 12, (3, 6))
    return X, torch.tensor([7, 5, 3]), Y, torch.tensor([6, 4, 2])
