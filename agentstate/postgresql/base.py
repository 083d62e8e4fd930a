"""Django's PostgreSQL backend, except that a commit synchronous replication did not confirm fails.

With ``synchronous_standby_names`` set, PostgreSQL writes a commit locally, then waits for a standby
to confirm it, for as long as it takes: ``statement_timeout`` does not reach that wait (PostgreSQL
stops a statement's timer before it commits). When the wait is cancelled, the commit stays on the
primary alone and the client gets only a WARNING ("canceling wait for synchronous replication
..."): the commit looks successful, and if the primary is then lost the promoted standby never had
it. So:

- a commit still waiting after ``COMMIT_TIMEOUT`` seconds (the database's settings) is cancelled by
  a watchdog thread, so a write never waits long for a standby that is gone;
- a commit (or an autocommitted statement) that brought that WARNING raises
  ``ReplicationUnconfirmed``, which the API answers with 503 and ``Retry-After``
  (agentstate.api.errors): the write may be stored, and a retry with the same client ids stores
  nothing twice.

PostgreSQL must report its messages in English (``lc_messages`` 'C' or 'en_US'): this reads them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from django.db.backends.postgresql import base

# The start of both WARNINGs PostgreSQL 15 sends when it stops waiting for a standby (syncrep.c).
UNCONFIRMED_WARNINGS = ("canceling wait for synchronous replication", "canceling the wait for synchronous replication")


class ReplicationUnconfirmed(DatabaseError):
    """The transaction committed on the primary but no synchronous standby confirmed it."""


@dataclass
class _Deadline:
    at: float
    connection: Any  # psycopg's
    cancelled: bool = False


class CommitWatchdog:
    """One thread per process that cancels, on the server, a commit still running past its deadline
    (each check is a fraction of a second late at most: it looks every ``TICK_SECONDS``)."""

    TICK_SECONDS = 0.2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, _Deadline] = {}  # by thread id
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def bounded(self, connection: Any, seconds: float) -> Iterator[_Deadline]:
        deadline = _Deadline(at=time.monotonic() + seconds, connection=connection)
        with self._lock:
            self._running[threading.get_ident()] = deadline
            if self._thread is None or not self._thread.is_alive():  # none yet, or a fork's parent had it
                self._thread = threading.Thread(target=self._watch, name="commit-watchdog", daemon=True)
                self._thread.start()
        try:
            yield deadline
        finally:
            with self._lock:
                self._running.pop(threading.get_ident(), None)

    def _watch(self) -> None:
        while True:
            time.sleep(self.TICK_SECONDS)
            with self._lock:  # held while cancelling: the commit cannot end and its thread move on meanwhile
                now = time.monotonic()
                for thread, deadline in list(self._running.items()):
                    if deadline.at <= now:
                        del self._running[thread]
                        deadline.cancelled = True
                        with contextlib.suppress(Exception):  # the connection may be gone: nothing to stop
                            deadline.connection.cancel_safe(timeout=2)


commit_watchdog = CommitWatchdog()


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replication_unconfirmed = False
        # Outermost, and never removed: a statement run in autocommit mode is its own commit.
        self.execute_wrappers.insert(0, self._refuse_unconfirmed_autocommit)

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        self.replication_unconfirmed = False
        connection.add_notice_handler(self._notice_received)
        return connection

    def _notice_received(self, diagnostic: Any) -> None:
        if (diagnostic.message_primary or "").startswith(UNCONFIRMED_WARNINGS):
            self.replication_unconfirmed = True

    def commit(self) -> None:
        timeout = self.settings_dict.get("COMMIT_TIMEOUT")
        with commit_watchdog.bounded(self.connection, timeout) if timeout else contextlib.nullcontext() as deadline:
            super().commit()
        if deadline and deadline.cancelled and not self.replication_unconfirmed:
            # The commit ended just as it was cancelled: the cancel may still reach the server, and
            # must not stop the next statement on this connection.
            self.close()
        self._raise_if_unconfirmed()

    def _refuse_unconfirmed_autocommit(
        self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        result = execute(sql, params, many, context)
        if self.get_autocommit():
            self._raise_if_unconfirmed()
        return result

    def _raise_if_unconfirmed(self) -> None:
        if self.replication_unconfirmed:
            self.replication_unconfirmed = False
            raise ReplicationUnconfirmed(
                "The write was not confirmed by a synchronous standby: it may or may not be kept."
            )
