"""Triton kernels and their PyTorch reference twins. Imports only torch and triton (checked by
the import contracts, docs/ARCHITECTURE.md)."""
