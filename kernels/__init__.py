"""Triton kernels and their PyTorch reference twins. Imports only torch and triton."""
