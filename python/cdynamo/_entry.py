"""The frame compile(module) traces: a call of the module, so torch.nn's own layers (whose forward
lives in torch's files, never traced) and user modules alike enter the graph through it."""


def call_module(module, *args, **kwargs):
    return module(*args, **kwargs)
