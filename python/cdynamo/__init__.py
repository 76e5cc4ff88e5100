"""cdynamo: a Python-level JIT compiler for PyTorch programs, with its core in C++."""
