import torch
import torch.nn as nn


def MLP(channels, do_bn=True):
    n = len(channels)
    layers = []
    for i in range(1, n):
        layers.append(nn.Conv1d(channels[i - 1], channels[i], kernel_size=1, bias=True))
        if i < (n - 1):
            if do_bn:
                layers.append(nn.BatchNorm1d(channels[i]))
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def normalize_keypoints(kpts, image_shape):
    _, _, height, width = image_shape
    one = kpts.new_tensor(1)
    size = torch.stack([one * width, one * height])[None]
    center = size / 2
    scaling = size.max(1, keepdim=True).values * 0.7
    return (kpts - center[:, None, :]) / scaling[:, None, :]


def log_sinkhorn_iterations(Z, log_mu, log_nu, iters: int):
    u, v = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
    for _ in range(iters):
        u = log_mu - torch.logsumexp(Z + v.unsqueeze(1), dim=2)
        v = log_nu - torch.logsumexp(Z + u.unsqueeze(2), dim=1)
    return Z + u.unsqueeze(2) + v.unsqueeze(1)


def log_optimal_transport(scores, alpha, iters: int):
    b, m, n = scores.shape
    one = scores.new_tensor(1)
    ms, ns = (m * one).to(scores), (n * one).to(scores)
    bins0 = alpha.expand(b, m, 1)
    bins1 = alpha.expand(b, 1, n)
    alpha = alpha.expand(b, 1, 1)
    couplings = torch.cat([torch.cat([scores, bins0], -1), torch.cat([bins1, alpha], -1)], 1)
    norm = - (ms + ns).log()
    log_mu = torch.cat([norm.expand(m), ns.log()[None] + norm])
    log_nu = torch.cat([norm.expand(n), ms.log()[None] + norm])
    log_mu, log_nu = log_mu[None].expand(b, -1), log_nu[None].expand(b, -1)
    Z = log_sinkhorn_iterations(couplings, log_mu, log_nu, iters)
    Z = Z - norm
    return Z


def arange_like(x, dim: int):
    return x.new_ones(x.shape[dim]).cumsum(0) - 1


class KeypointEncoder(nn.Module):
    def __init__(self, feature_dim, layers):
        super().__init__()
        self.encoder = MLP([3] + layers + [feature_dim])
        nn.init.constant_(self.encoder[-1].bias, 0.0)

    def forward(self, kpts, scores):
        inputs = [kpts.transpose(1, 2), scores.unsqueeze(1)]
        return self.encoder(torch.cat(inputs, dim=1))


class Model(nn.Module):
    """SuperGlue matching tail: keypoint encoder, dustbin score, log-space Sinkhorn, mutual-nearest matching."""

    default_config = {"descriptor_dim": 16, "keypoint_encoder": [8, 16], "sinkhorn_iterations": 5, "match_threshold": 0.2}

    def __init__(self, config={}):
        super().__init__()
        self.config = {**self.default_config, **config}
        self.kenc = KeypointEncoder(self.config["descriptor_dim"], self.config["keypoint_encoder"])
        self.final_proj = nn.Conv1d(self.config["descriptor_dim"], self.config["descriptor_dim"], kernel_size=1, bias=True)
        bin_score = torch.nn.Parameter(torch.tensor(1.))
        self.register_parameter("bin_score", bin_score)

    def forward(self, data):
        desc0, desc1 = data["descriptors0"], data["descriptors1"]
        kpts0, kpts1 = data["keypoints0"], data["keypoints1"]
        if kpts0.shape[1] == 0 or kpts1.shape[1] == 0:
            shape0, shape1 = kpts0.shape[:-1], kpts1.shape[:-1]
            return {"matches0": kpts0.new_full(shape0, -1, dtype=torch.int)}
        kpts0 = normalize_keypoints(kpts0, data["image0"].shape)
        kpts1 = normalize_keypoints(kpts1, data["image1"].shape)
        desc0 = desc0 + self.kenc(kpts0, data["scores0"])
        desc1 = desc1 + self.kenc(kpts1, data["scores1"])
        mdesc0, mdesc1 = self.final_proj(desc0), self.final_proj(desc1)
        scores = torch.einsum("bdn,bdm->bnm", mdesc0, mdesc1)
        scores = scores / self.config["descriptor_dim"] ** .5
        scores = log_optimal_transport(scores, self.bin_score, iters=self.config["sinkhorn_iterations"])
        max0, max1 = scores[:, :-1, :-1].max(2), scores[:, :-1, :-1].max(1)
        indices0, indices1 = max0.indices, max1.indices
        mutual0 = arange_like(indices0, 1)[None] == indices1.gather(1, indices0)
        mutual1 = arange_like(indices1, 1)[None] == indices0.gather(1, indices1)
        zero = scores.new_tensor(0)
        mscores0 = torch.where(mutual0, max0.values.exp(), zero)
        mscores1 = torch.where(mutual1, mscores0.gather(1, indices1), zero)
        valid0 = mutual0 & (mscores0 > self.config["match_threshold"])
        valid1 = mutual1 & valid0.gather(1, indices1)
        indices0 = torch.where(valid0, indices0, indices0.new_tensor(-1))
        indices1 = torch.where(valid1, indices1, indices1.new_tensor(-1))
        return {"matches0": indices0, "matches1": indices1, "matching_scores0": mscores0, "matching_scores1": mscores1}


def make_inputs():
    data = {"descriptors0": torch.randn(1, 16, 6), "descriptors1": torch.randn(1, 16, 5),
            "keypoints0": torch.rand(1, 6, 2) * 32, "keypoints1": torch.rand(1, 5, 2) * 32,
            "scores0": torch.rand(1, 6), "scores1": torch.rand(1, 5),
            "image0": torch.zeros(1, 1, 24, 32), "image1": torch.zeros(1, 1, 24, 32)}
    return (data,)


def make_inputs_seq():
    def mk(n0, n1):
        return ({"descriptors0": torch.randn(1, 16, n0), "descriptors1": torch.randn(1, 16, n1),
                 "keypoints0": torch.rand(1, n0, 2) * 32, "keypoints1": torch.rand(1, n1, 2) * 32,
                 "scores0": torch.rand(1, n0), "scores1": torch.rand(1, n1),
                 "image0": torch.zeros(1, 1, 24, 32), "image1": torch.zeros(1, 1, 40, 20)},)
    return [mk(6, 5), mk(4, 7), mk(6, 5)]
