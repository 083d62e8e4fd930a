"""Reproducible performance suite for agentstate: ``python -m benchmarks --help``.

Every benchmark runs against a database of its own (a temporary SQLite file, or a dedicated
``<name>_bench`` database on the PostgreSQL server named by ``DATABASE_URL``) and never touches
the development or test databases. Results are printed as a table and written as JSON under
``benchmarks/results/``; the runs docs/PERFORMANCE.md reports are kept there, in git.
"""
