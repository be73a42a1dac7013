"""Benchmark harness: datasets, the protocol's settings, baselines, runner, summary."""
