"""`make bench`: every benchmarks/bench_*.py, run by `python -m benchmarks`, which writes
their figures into docs/performance.md (benchmarks/report.py)."""
