"""Hypothesis's settings for the frameworks' differential tests, which run on the live server (one
server for every example; the tenant of its own each example takes is ``fresh_key``, conftest.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def examples(max_examples: int):
    return settings(
        max_examples=max_examples, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
