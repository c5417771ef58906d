"""`make bench`: every benchmarks/bench_*.py module's main(), in name order."""
