"""Test-wide setup: Triton's interpreter for the whole test process, so the Triton target's
kernels run on CPU tensors (cdynamo.config.cpu_backend = "triton"). Triton reads TRITON_INTERPRET
when it decorates kernels and while they run, so it must be set before anything imports triton;
cubins for the GPU are still compiled, in the build service's worker processes."""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")
