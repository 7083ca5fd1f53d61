"""Benchmarks (`make bench`: operator_bench) and their recorded results."""
