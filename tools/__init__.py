"""Developer tools run from a checkout (CI scripts, tests, benchmarks); not part of the wheel."""
