import torch
import torch.nn as nn
import torch.nn.functional as F


def softmin3(a, b, c, gamma):
    """-gamma * logsumexp(-[a, b, c] / gamma) with Python floats for gamma."""
    stacked = torch.stack([a, b, c], dim=-1)
    return -gamma * torch.logsumexp(-stacked / gamma, dim=-1)


class SoftDTW(nn.Module):
    """Naive soft-DTW (Cuturi & Blondel) with a Python nested list of tensors as the DP table."""

    def __init__(self, gamma=1.0, normalize=False, bandwidth=None, dist_func=None):
        super().__init__()
        self.gamma = gamma
        self.normalize = normalize
        self.bandwidth = 0 if bandwidth is None else float(bandwidth)
        self.dist_func = dist_func if dist_func is not None else SoftDTW._euclidean_dist_func

    @staticmethod
    def _euclidean_dist_func(x, y):
        n = x.size(1)
        m = y.size(1)
        d = x.size(2)
        x = x.unsqueeze(2).expand(-1, n, m, d)
        y = y.unsqueeze(1).expand(-1, n, m, d)
        return torch.pow(x - y, 2).sum(3)

    def _soft_dtw(self, D):
        B, N, M = D.shape
        inf = torch.full((B,), float('inf'), dtype=D.dtype)
        R = [[inf for _ in range(M + 1)] for _ in range(N + 1)]
        R[0][0] = torch.zeros(B, dtype=D.dtype)
        for i in range(1, N + 1):
            for j in range(1, M + 1):
                if 0 < self.bandwidth < abs(i - j):
                    continue
                r = softmin3(R[i - 1][j - 1], R[i - 1][j], R[i][j - 1], self.gamma)
                R[i][j] = D[:, i - 1, j - 1] + r
        return R[N][M]

    def forward(self, X, Y):
        bx, lx, dx = X.shape
        by, ly, dy = Y.shape
        assert bx == by and dx == dy
        if self.normalize:
            x = torch.cat([X, X, Y])
            y = torch.cat([Y, X, Y])
            D = self.dist_func(x, y)
            out = self._soft_dtw(D)
            out_xy, out_xx, out_yy = torch.split(out, X.shape[0])
            return out_xy - 1 / 2 * (out_xx + out_yy)
        else:
            D_xy = self.dist_func(X, Y)
            return self._soft_dtw(D_xy)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(2, 4, batch_first=True)
        self.sdtw = SoftDTW(gamma=0.1, normalize=True)
        self.sdtw_band = SoftDTW(gamma=1.0, bandwidth=1)

    def forward(self, a, b, c):
        ea, _ = self.enc(a)
        eb, _ = self.enc(b)
        return self.sdtw(ea, eb), self.sdtw_band(a, c)


def make_inputs():
    return torch.randn(2, 4, 2), torch.randn(2, 4, 2), torch.randn(2, 5, 2)
