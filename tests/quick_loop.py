"""The quick loop's share of a test that enumerates cases (every write route, every endpoint, every
bad value): a few fixed cases guard the rule in `pytest -m "not slow"`, the others are
``crosscheck`` (slow; where they reach the database they run on PostgreSQL only, conftest.py), so
the whole enumeration still runs in .ci/run."""

from collections.abc import Callable, Iterable, Sequence

import pytest


def few_in_the_quick_loop(cases: Iterable, ids: Sequence[str], quick: Iterable[str]) -> list:
    """``cases`` (one value or a tuple of arguments each) as parameters named ``ids``: those named in
    ``quick`` run in the quick loop, every other one in the slow set. A quick name that no case
    has fails the collection, so a renamed case cannot silently leave the quick loop without one."""
    quick = set(quick)
    assert quick <= set(ids), f"quick cases that are not cases: {sorted(quick - set(ids))}"
    return [
        pytest.param(
            *(case if isinstance(case, tuple) else (case,)),
            id=name,
            marks=() if name in quick else pytest.mark.crosscheck,
        )
        for case, name in zip(cases, ids, strict=True)
    ]


def quick_first(cases: Sequence, quick: int) -> list:
    """``cases`` as parameters (pytest's own ids) of which the first ``quick`` run in the quick loop
    and the rest in the slow set: for a table of examples of one rule, its first rows."""
    return [
        pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=() if n < quick else pytest.mark.crosscheck)
        for n, case in enumerate(cases)
    ]


def first_of_each_kind(cases: Sequence, ids: Sequence[str], kind: Callable) -> list:
    """``cases`` as parameters named ``ids`` of which the first case of each ``kind(case)`` runs in
    the quick loop (each method, each kind of answer) and the rest in the slow set."""
    firsts: dict = {}
    for case, name in zip(cases, ids, strict=True):
        firsts.setdefault(kind(case), name)
    return few_in_the_quick_loop(cases, ids, firsts.values())
