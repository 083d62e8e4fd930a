"""How full the app's PgBouncer pool is, from PgBouncer's admin console (``SHOW POOLS``), for
operators: clients waiting for a server connection and the longest wait.

Read only when ``AGENTSTATE_PGBOUNCER_ADMIN_URL`` names the console, in a connection of its own,
never waited on for more than ``READ_SECONDS``: a PgBouncer that does not answer is reported so,
and at most one read per process is ever under way, so a hung one holds one thread, not requests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

READ_SECONDS = 2.0  # how long a caller waits for a read
CONNECT_SECONDS = 10  # how long the read itself may wait for a PgBouncer that does not answer


@dataclass(frozen=True)
class Pool:
    """One pool (a database user) of the app's database, as PgBouncer counts it."""

    user: str
    clients_active: int
    clients_waiting: int
    servers_active: int
    servers_idle: int
    max_wait_seconds: float


@dataclass(frozen=True)
class PoolReading:
    """The app's pools, or why they could not be read (``error``: then ``pools`` is empty)."""

    pools: list[Pool] = field(default_factory=list)
    error: str = ""


_read_under_way = threading.Lock()


def pool_read() -> PoolReading | None:
    """The app database's pools now, or None when no admin console is configured."""
    url = settings.PGBOUNCER_ADMIN_URL
    if not url:
        return None
    if not _read_under_way.acquire(blocking=False):
        return PoolReading(error="an earlier read is still waiting")
    answer: list[PoolReading] = []
    database = connections[DEFAULT_DB_ALIAS].settings_dict["NAME"]  # as PgBouncer names the app's pools

    def read() -> None:
        try:
            answer.append(PoolReading(pools=_show_pools(url, database=database)))
        except Exception as exc:  # down, refusing, not a console: reported, never raised
            answer.append(PoolReading(error=type(exc).__name__))
        finally:
            _read_under_way.release()

    reader = threading.Thread(target=read, name="agentstate-pgbouncer-read", daemon=True)
    reader.start()
    reader.join(READ_SECONDS)
    return answer[0] if answer else PoolReading(error=f"no answer within {READ_SECONDS:.0f} s")


def _show_pools(url: str, *, database: str) -> list[Pool]:
    # Raw: no ORM form (PgBouncer's admin console: SHOW POOLS)
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_SECONDS) as console:
        cursor = console.execute("SHOW POOLS")
        names = [column.name for column in cursor.description or ()]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return [
        Pool(
            user=row["user"],
            clients_active=int(row["cl_active"]),
            clients_waiting=int(row["cl_waiting"]),
            servers_active=int(row["sv_active"]),
            servers_idle=int(row["sv_idle"]),
            max_wait_seconds=int(row["maxwait"]) + int(row.get("maxwait_us") or 0) / 1e6,
        )
        for row in rows
        if row["database"] == database
    ]
