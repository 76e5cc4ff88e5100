"""`python -m cdynamo.verify`: checks that this installation of cdynamo works and says what to fix.

Checks the Python and torch versions, a C++ compiler, the cdynamo._C extension, then compiles a
minimal function with every available backend (CPU, and CUDA when present) and compares with eager.
"""
import os
import shutil
import subprocess
import sys
import traceback

SUPPORTED_PYTHONS = ((3, 11), (3, 12))
MIN_TORCH = (2, 11)


class CheckFailed(Exception):
    """A check failed; the message says what is wrong and what to do."""


def check_python():
    version = sys.version_info[:2]
    if version not in SUPPORTED_PYTHONS:
        supported = " or ".join(f"{major}.{minor}" for major, minor in SUPPORTED_PYTHONS)
        raise CheckFailed(
            f"Python {version[0]}.{version[1]} is not supported; use Python {supported} "
            "(cdynamo's frame hook depends on the interpreter's internals)."
        )
    return f"Python {sys.version.split()[0]}"


def check_torch():
    try:
        import torch
    except ImportError as error:
        raise CheckFailed(f"torch does not import ({error}); install it: pip install torch") from None
    release = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    if release < MIN_TORCH:
        raise CheckFailed(
            f"torch {torch.__version__} is too old; cdynamo needs torch >= "
            f"{MIN_TORCH[0]}.{MIN_TORCH[1]}: pip install --upgrade torch"
        )
    return f"torch {torch.__version__}, CUDA {'available' if torch.cuda.is_available() else 'not available'}"


def check_cxx_compiler():
    # The compiler of the inductor backend's kernels: config.cxx's default, read without
    # importing cdynamo (whose extension is checked later).
    configured = os.environ.get("CDYNAMO_CXX") or "g++"
    compiler = shutil.which(configured)
    if compiler is None:
        raise CheckFailed(
            f"the C++ compiler {configured!r} is not on PATH; install g++ (e.g. apt-get install g++) "
            "or clang++ with libomp-dev, or set CDYNAMO_CXX / cdynamo.config.cxx to one: it compiles "
            "the kernels cdynamo's inductor backend generates."
        )
    try:
        first_line = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError) as error:
        raise CheckFailed(
            f"{compiler} --version failed ({error}); reinstall the compiler or set CDYNAMO_CXX to another"
        ) from None
    return f"{first_line} ({compiler})"


def check_extension():
    try:
        from cdynamo import _C
    except ImportError as error:
        raise CheckFailed(
            f"cdynamo._C does not import ({error}); rebuild it: `make build` in a checkout, or "
            "pip install --no-build-isolation . in an environment that has torch."
        ) from None
    return _C.__file__


def _minimal_example(x):
    return (x.sin() + x * 2).relu().sum(dim=-1) + 1


def check_backend(backend, device):
    import torch

    import cdynamo
    from cdynamo import config
    from cdynamo.testing import CompileCounterWithBackend, same

    counting_backend = CompileCounterWithBackend(backend)
    x = torch.randn(8, 16, device=device)
    cdynamo.reset()
    # nopython and raised errors: a silent fallback to eager must not pass as a working backend.
    with config.patch(suppress_errors=False):
        compiled = cdynamo.optimize(counting_backend, nopython=True)(_minimal_example)
        actual = compiled(x)
    expected = _minimal_example(x)
    if counting_backend.frame_count != 1:
        raise CheckFailed(
            f"backend {backend!r} on {device}: expected 1 compiled graph, got "
            f"{counting_backend.frame_count}"
        )
    if not same(actual, expected, tol=1e-4):
        raise CheckFailed(f"backend {backend!r} on {device}: compiled result differs from eager")
    return f"matches eager ({counting_backend.op_count} ops in 1 graph)"


def run_checks():
    """Run every check, printing one line each; returns the number of failed required checks."""
    failures = 0

    def run(title, check, *args):
        nonlocal failures
        try:
            detail = check(*args)
            print(f"  ok    {title}: {detail}")
            return True
        except CheckFailed as error:
            print(f"  FAIL  {title}: {error}")
        except Exception:
            print(f"  FAIL  {title}: unexpected error:\n{traceback.format_exc()}")
        failures += 1
        return False

    print("cdynamo installation check")
    run("Python version", check_python)
    if not run("torch", check_torch):
        return failures
    run("C++ compiler", check_cxx_compiler)
    if not run("cdynamo._C extension", check_extension):
        return failures

    import torch

    import cdynamo

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for backend in cdynamo.list_backends():
        for device in devices:
            run(f"backend {backend!r} on {device}", check_backend, backend, device)
    return failures


def main():
    failures = run_checks()
    if failures:
        print(f"{failures} required check(s) failed: fix them as each line above says, then "
              "run `python -m cdynamo.verify` again.")
        return 1
    print("All required checks passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
