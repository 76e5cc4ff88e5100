"""Backends: callables `backend(gm: torch.fx.GraphModule, example_inputs: list) -> callable`.

The registry maps names to them; importing it registers the built-in ones (see eager.py).
"""
from .registry import call_backend, list_backends, lookup_backend, register_backend

__all__ = ["call_backend", "list_backends", "lookup_backend", "register_backend"]
