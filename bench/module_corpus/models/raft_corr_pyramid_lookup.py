import torch
import torch.nn as nn
import torch.nn.functional as F


def bilinear_sampler(img, coords, mode="bilinear", mask=False):
    """Wrapper for grid_sample, uses pixel coordinates"""
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (W - 1) - 1
    ygrid = 2 * ygrid / (H - 1) - 1
    grid = torch.cat([xgrid, ygrid], dim=-1)
    img = F.grid_sample(img, grid, align_corners=True)
    if mask:
        mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
        return img, mask.float()
    return img


def coords_grid(batch, ht, wd, device):
    coords = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device), indexing="ij")
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)


class CorrBlock:
    def __init__(self, fmap1, fmap2, num_levels=4, radius=4):
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid = []
        corr = CorrBlock.corr(fmap1, fmap2)
        batch, h1, w1, dim, h2, w2 = corr.shape
        corr = corr.reshape(batch * h1 * w1, dim, h2, w2)
        self.corr_pyramid.append(corr)
        for i in range(self.num_levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.corr_pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape
        out_pyramid = []
        for i in range(self.num_levels):
            corr = self.corr_pyramid[i]
            dx = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
            dy = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
            delta = torch.stack(torch.meshgrid(dy, dx, indexing="ij"), axis=-1)
            centroid_lvl = coords.reshape(batch * h1 * w1, 1, 1, 2) / 2 ** i
            delta_lvl = delta.view(1, 2 * r + 1, 2 * r + 1, 2)
            coords_lvl = centroid_lvl + delta_lvl
            corr = bilinear_sampler(corr, coords_lvl)
            corr = corr.view(batch, h1, w1, -1)
            out_pyramid.append(corr)
        out = torch.cat(out_pyramid, dim=-1)
        return out.permute(0, 3, 1, 2).contiguous().float()

    @staticmethod
    def corr(fmap1, fmap2):
        batch, dim, ht, wd = fmap1.shape
        fmap1 = fmap1.view(batch, dim, ht * wd)
        fmap2 = fmap2.view(batch, dim, ht * wd)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        corr = corr.view(batch, ht, wd, 1, ht, wd)
        return corr / torch.sqrt(torch.tensor(dim).float())


class ConvGRU(nn.Module):
    def __init__(self, hidden_dim=16, input_dim=24):
        super().__init__()
        self.convz = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)
        self.convr = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)
        self.convq = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)

    def forward(self, h, x):
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


class Model(nn.Module):
    """princeton-vl RAFT (small-ish): feature encoder at 1/4, all-pairs corr pyramid (plain Python class),
    iterative updates with coords1.detach(), convex-free 4x bilinear upflow."""

    def __init__(self, hdim=16, cdim=8, corr_levels=2, corr_radius=2, iters=3):
        super().__init__()
        self.hidden_dim = hdim
        self.context_dim = cdim
        self.corr_levels = corr_levels
        self.corr_radius = corr_radius
        self.iters = iters
        self.fnet = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3), nn.ReLU(), nn.Conv2d(16, 16, 3, 2, 1))
        self.cnet = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3), nn.ReLU(), nn.Conv2d(16, hdim + cdim, 3, 2, 1))
        cor_planes = corr_levels * (2 * corr_radius + 1) ** 2
        self.encoder = nn.Sequential(nn.Conv2d(cor_planes + 2, 16, 3, padding=1), nn.ReLU())
        self.gru = ConvGRU(hdim, 16 + cdim)
        self.flow_head = nn.Sequential(nn.Conv2d(hdim, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 3, padding=1))

    def initialize_flow(self, img):
        N, C, H, W = img.shape
        coords0 = coords_grid(N, H // 4, W // 4, device=img.device)
        coords1 = coords_grid(N, H // 4, W // 4, device=img.device)
        return coords0, coords1

    def upflow(self, flow, mode="bilinear"):
        new_size = (4 * flow.shape[2], 4 * flow.shape[3])
        return 4 * F.interpolate(flow, size=new_size, mode=mode, align_corners=True)

    def forward(self, image1, image2, iters=None, flow_init=None, test_mode=True):
        image1 = 2 * (image1 / 255.0) - 1.0
        image2 = 2 * (image2 / 255.0) - 1.0
        image1 = image1.contiguous()
        image2 = image2.contiguous()
        fmap1, fmap2 = self.fnet(image1).float(), self.fnet(image2).float()
        corr_fn = CorrBlock(fmap1, fmap2, num_levels=self.corr_levels, radius=self.corr_radius)
        cnet = self.cnet(image1)
        net, inp = torch.split(cnet, [self.hidden_dim, self.context_dim], dim=1)
        net = torch.tanh(net)
        inp = torch.relu(inp)
        coords0, coords1 = self.initialize_flow(image1)
        if flow_init is not None:
            coords1 = coords1 + flow_init
        flow_predictions = []
        for itr in range(iters or self.iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)
            flow = coords1 - coords0
            motion = self.encoder(torch.cat([corr, flow], dim=1))
            net = self.gru(net, torch.cat([inp, motion], dim=1))
            delta_flow = self.flow_head(net)
            coords1 = coords1 + delta_flow
            flow_up = self.upflow(coords1 - coords0)
            flow_predictions.append(flow_up)
        if test_mode:
            return coords1 - coords0, flow_up
        return flow_predictions


def make_inputs():
    return torch.rand(1, 3, 32, 32) * 255, torch.rand(1, 3, 32, 32) * 255
