"""Benchmarks: one module per benchmark (data loading, runner, metrics, result file)."""
