"""The probes' registry (probe, collector) and shared inputs (x, xr)."""
import torch
P = []
def probe(*args, state=None, reset=None, args2=None, between=None):
    """state(): snapshot of side state after run; reset(): restore side state before run;
    args2: second call's args (same compiled fn); between(): called after first call."""
    def deco(fn):
        P.append(dict(fn=fn, args=args, state=state, reset=reset, args2=args2, between=between))
        return fn
    return deco


def collector(probes):
    """A probe decorator of one file: registers with `probe` and keeps the entry in `probes`."""
    def file_probe(*args, **kwargs):
        def deco(fn):
            probe(*args, **kwargs)(fn)
            probes.append(P.pop())
            return fn
        return deco
    return file_probe

torch.manual_seed(0)
x = torch.randn(4, 3)
xr = torch.randn(4, 3, requires_grad=True)
