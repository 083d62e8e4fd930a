"""docs/SCALING.md's recipe as shell. Each step a DBA runs by hand is a code block fenced
```` ```sh recipe:NAME ````; .ci/multinode runs the same text (``python3 -m tools.recipe NAME``), with
only the variables of the ``site`` block set to its own hosts, ports and paths, so the topology CI
tests cannot drift from the one the page describes. Standard library only (CI runs it before any
virtualenv exists)::

    python3 -m tools.recipe primary          # the block, as written
    python3 -m tools.recipe --list           # every step's name, in the page's order
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

SCALING = Path(__file__).resolve().parent.parent / "docs" / "SCALING.md"
BLOCK = re.compile(r"^```sh recipe:(?P<name>[a-z0-9-]+)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
# The step that names the site's values: a reader sets them, CI sets its own (never runs it).
SITE = "site"


def recipe_steps(text: str) -> dict[str, str]:
    """Every step's shell text by name, in the page's order; a name used twice is an error."""
    steps: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        name = match["name"]
        if name in steps:
            raise ValueError(f"recipe step {name!r} appears twice")
        steps[name] = match["body"]
    return steps


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m tools.recipe", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="the step to print")
    parser.add_argument("--list", action="store_true", help="print every step's name")
    parser.add_argument("--doc", type=Path, default=SCALING, help="the page (default: docs/SCALING.md)")
    args = parser.parse_args(argv)
    steps = recipe_steps(args.doc.read_text())
    if args.list:
        sys.stdout.write("".join(f"{name}\n" for name in steps))
    elif args.name in steps:
        sys.stdout.write(steps[args.name])
    else:
        raise SystemExit(f"{args.doc} has no step {args.name!r} (it has: {', '.join(steps)})")


if __name__ == "__main__":
    main()
