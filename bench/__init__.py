"""Benchmarks: timing goals live here, never in tests."""
