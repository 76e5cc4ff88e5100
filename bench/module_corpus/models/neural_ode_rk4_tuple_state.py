import abc
import collections

import torch
import torch.nn as nn

_ButcherTableau = collections.namedtuple('_ButcherTableau', 'alpha beta c_sol c_error')

_RK4_TABLEAU = _ButcherTableau(
    alpha=[1 / 3, 2 / 3, 1.],
    beta=[[1 / 3], [-1 / 3, 1.], [1., -1., 1.]],
    c_sol=[1 / 8, 3 / 8, 3 / 8, 1 / 8],
    c_error=None,
)


def _check_inputs(func, y0, t):
    tensor_input = False
    if torch.is_tensor(y0):
        tensor_input = True
        y0 = (y0,)
        _base_nontuple_func_ = func
        func = lambda t, y: (_base_nontuple_func_(t, y[0]),)
    assert isinstance(y0, tuple), 'y0 must be either a torch.Tensor or a tuple'
    for y0_ in y0:
        assert torch.is_tensor(y0_), 'each element must be a torch.Tensor but received {}'.format(type(y0_))
    if t[0] > t[1]:
        raise NotImplementedError
    return tensor_input, func, y0, t


class FixedGridODESolver(metaclass=abc.ABCMeta):
    """torchdiffeq-0.0.x style fixed-grid solver working on tuples of tensors."""

    def __init__(self, func, y0, step_size=None, **unused_kwargs):
        unused_kwargs.pop('rtol', None)
        unused_kwargs.pop('atol', None)
        self.func = func
        self.y0 = y0
        self.step_size = step_size

    @property
    @abc.abstractmethod
    def order(self):
        pass

    @abc.abstractmethod
    def step_func(self, func, t, dt, y):
        pass

    def integrate(self, t):
        solution = [self.y0]
        y0 = self.y0
        for t0, t1 in zip(t[:-1], t[1:]):
            dy = self.step_func(self.func, t0, t1 - t0, y0)
            y1 = tuple(y0_ + dy_ for y0_, dy_ in zip(y0, dy))
            y0 = y1
            solution.append(y1)
        return tuple(map(torch.stack, tuple(zip(*solution))))


def rk4_alt_step_func(func, t, dt, y, k1=None):
    if k1 is None:
        k1 = func(t, y)
    k2 = func(t + dt / 3, tuple(y_ + dt * k1_ / 3 for y_, k1_ in zip(y, k1)))
    k3 = func(t + dt * 2 / 3, tuple(y_ + dt * (k1_ / -3 + k2_) for y_, k1_, k2_ in zip(y, k1, k2)))
    k4 = func(t + dt, tuple(y_ + dt * (k1_ - k2_ + k3_) for y_, k1_, k2_, k3_ in zip(y, k1, k2, k3)))
    return tuple((k1_ + 3 * k2_ + 3 * k3_ + k4_) * (dt / 8) for k1_, k2_, k3_, k4_ in zip(k1, k2, k3, k4))


class RK4(FixedGridODESolver):
    def step_func(self, func, t, dt, y):
        return rk4_alt_step_func(func, t, dt, y)

    @property
    def order(self):
        return 4


class Euler(FixedGridODESolver):
    def step_func(self, func, t, dt, y):
        return tuple(dt * f_ for f_ in func(t, y))

    @property
    def order(self):
        return 1


SOLVERS = {'rk4': RK4, 'euler': Euler}


def odeint(func, y0, t, rtol=1e-7, atol=1e-9, method=None, options=None):
    tensor_input, func, y0, t = _check_inputs(func, y0, t)
    if options is None:
        options = {}
    if method is None:
        method = 'rk4'
    solver = SOLVERS[method](func, y0, rtol=rtol, atol=atol, **options)
    solution = solver.integrate(t)
    if tensor_input:
        solution = solution[0]
    return solution


class ODEFunc(nn.Module):
    def __init__(self, dim=4, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        tt = torch.ones_like(y[:, :1]) * t
        return self.net(torch.cat([tt, y], 1))


class CoupledFunc(nn.Module):
    """Second-order system as a tuple state (position, velocity)."""

    def __init__(self, dim=4):
        super().__init__()
        self.acc = nn.Linear(2 * dim, dim)

    def forward(self, t, state):
        x, v = state
        return v, torch.tanh(self.acc(torch.cat([x, v], -1))) - 0.1 * v


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.odefunc = ODEFunc()
        self.coupled = CoupledFunc()
        self.register_buffer('integration_time', torch.linspace(0., 1., 4))

    def forward(self, x):
        self.odefunc.nfe = 0
        out = odeint(self.odefunc, x, self.integration_time, method='rk4')
        xs, vs = odeint(self.coupled, (x, torch.zeros_like(x)), self.integration_time, method='euler')
        return out[-1], xs[-1] + vs[-1], self.odefunc.nfe


def make_inputs():
    return (torch.randn(3, 4),)
