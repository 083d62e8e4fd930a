"""Edge values more than one hardening test sends: datetimes at the ends of the calendar, and
cursors forged to name any position."""

import base64
from urllib.parse import urlencode

# Exist only with their offset: SQLite overflowed converting them to UTC (a 500).
EXTREME_IN_UTC = [
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59.999999-00:01",
    "0001-01-01T00:00:00+23:59",
]
# Valid in UTC; PostgreSQL refuses offsets past ±16 h (a 500 until they reached it in UTC).
EXTREME_BUT_VALID = [
    "2026-01-01T00:00:00-20:00",
    "2026-01-01T00:00:00+23:59",
    "2026-01-01T00:00:00-23:59",
    "0001-01-01T00:00:00-01:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T10:00:00+13:00",
]


def forged(position: str, **extra: str) -> str:
    """A cursor as DRF encodes one, naming any position."""
    return base64.b64encode(urlencode({"p": position, **extra}).encode()).decode()
