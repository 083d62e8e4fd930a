"""``python -m benchmarks [scaling|http|erasure|admin|all] [--quick] [--keep-db]``.

SQLite by default; PostgreSQL when ``DATABASE_URL`` is set (a dedicated ``<name>_bench``
database is created and dropped). Prints tables and writes JSON to benchmarks/results/.
"""
from __future__ import annotations

import argparse
import sys

from benchmarks.bench_db import bench_database


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", nargs="?", default="scaling", choices=["scaling"])
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run, not for reporting)")
    parser.add_argument("--keep-db", action="store_true", help="leave the benchmark database in place")
    args = parser.parse_args(argv)

    with bench_database(keep=args.keep_db):
        from benchmarks import report, scaling

        result = scaling.run(rounds=3, batch=10) if args.quick else scaling.run()
        scaling.print_table(result)
        print(f"results: {report.write_results('scaling', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
