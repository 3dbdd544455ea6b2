"""autograd-lint: a static analyzer for PyTorch autograd bugs."""

__version__ = "0.1.0"
