import torch
import torch.nn as nn
import torch.nn.functional as F


class BertLikeEncoder(nn.Module):
    def __init__(self, width, heads=2, layers=1, cross=True):
        super().__init__()
        self.cross = cross
        self.self_layers = nn.ModuleList([nn.MultiheadAttention(width, heads, batch_first=True) for _ in range(layers)])
        self.cross_layers = nn.ModuleList([nn.MultiheadAttention(width, heads, batch_first=True) for _ in range(layers)])
        self.ffn = nn.ModuleList([nn.Sequential(nn.Linear(width, width * 2), nn.GELU(), nn.Linear(width * 2, width))
                                  for _ in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(width) for _ in range(3 * layers)])

    def forward(self, embeds, attention_mask, encoder_hidden_states=None, encoder_attention_mask=None, mode="multimodal"):
        x = embeds
        key_padding = attention_mask == 0
        for i, (sa, ca, ff) in enumerate(zip(self.self_layers, self.cross_layers, self.ffn)):
            x = self.norms[3 * i](x + sa(x, x, x, key_padding_mask=key_padding)[0])
            if mode == "multimodal":
                assert encoder_hidden_states is not None, "encoder_hidden_states must be given for cross-attention layers"
                kpm = None if encoder_attention_mask is None else encoder_attention_mask == 0
                x = self.norms[3 * i + 1](x + ca(x, encoder_hidden_states, encoder_hidden_states, key_padding_mask=kpm)[0])
            x = self.norms[3 * i + 2](x + ff(x))
        return x


class Model(nn.Module):
    """salesforce BLIP_Base.forward(image, caption, mode): mode in ['image', 'text', 'multimodal'];
    [ENC] token swap for the multimodal branch; ITM head, ITC projections with F.normalize."""

    def __init__(self, vocab_size=30, width=16, vision_width=16, embed_dim=8, enc_token_id=3):
        super().__init__()
        self.enc_token_id = enc_token_id
        self.visual_encoder = nn.Sequential(nn.Conv2d(3, vision_width, 4, 4), nn.Flatten(2))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, vision_width))
        self.word_embeddings = nn.Embedding(vocab_size, width)
        self.text_encoder = BertLikeEncoder(width)
        self.vision_proj = nn.Linear(vision_width, embed_dim)
        self.text_proj = nn.Linear(width, embed_dim)
        self.itm_head = nn.Linear(width, 2)
        self.temp = nn.Parameter(0.07 * torch.ones([]))

    def encode_image(self, image):
        x = self.visual_encoder(image).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        return torch.cat([cls, x], dim=1)

    def forward(self, image, input_ids, attention_mask, mode):
        assert mode in ["image", "text", "multimodal"], "mode parameter must be image, text, or multimodal"
        if mode == "image":
            return self.encode_image(image)
        elif mode == "text":
            text_output = self.text_encoder(self.word_embeddings(input_ids), attention_mask, mode="text")
            return text_output
        elif mode == "multimodal":
            image_embeds = self.encode_image(image)
            image_atts = torch.ones(image_embeds.size()[:-1], dtype=torch.long, device=image.device)
            input_ids = input_ids.clone()
            input_ids[:, 0] = self.enc_token_id
            output = self.text_encoder(self.word_embeddings(input_ids), attention_mask,
                                       encoder_hidden_states=image_embeds, encoder_attention_mask=image_atts,
                                       mode="multimodal")
            with torch.no_grad():
                self.temp.clamp_(0.001, 0.5)
            image_feat = F.normalize(self.vision_proj(image_embeds[:, 0, :]), dim=-1)
            text_only = self.text_encoder(self.word_embeddings(input_ids), attention_mask, mode="text")
            text_feat = F.normalize(self.text_proj(text_only[:, 0, :]), dim=-1)
            sim_i2t = image_feat @ text_feat.t() / self.temp
            itm = self.itm_head(output[:, 0, :])
            return {"itm_logits": itm, "sim_i2t": sim_i2t, "hidden": output}


def make_inputs():
    ids = torch.tensor([[2, 5, 6, 7, 0], [2, 9, 8, 0, 0]])
    return torch.randn(2, 3, 8, 8), ids, (ids != 0).long(), "multimodal"
