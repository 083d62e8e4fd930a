"""Deterministic embedders for the MCP server's search by meaning, importable as ``--embed``
names (``tests.mcp.embedders:letters``)."""

from __future__ import annotations

import string

NOT_CALLABLE = "letters"  # --embed tests.mcp.embedders:NOT_CALLABLE names a string, not an embedder


def letters(texts: list[str]) -> list[list[float]]:
    """Each text as its count of each letter a-z: texts sharing letters are close."""
    return [[float(text.lower().count(letter)) for letter in string.ascii_lowercase] for text in texts]


async def broken(texts: list[str]) -> list[list[float]]:
    raise RuntimeError("embedding quota exceeded")
