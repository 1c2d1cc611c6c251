"""Workloads: ML operator graphs, GEMM layout candidates, and the exchange phases they imply."""
