"""Django's PostgreSQL backend, except that a commit synchronous replication did not confirm fails,
and that the health check before a request's first query asks the server only when the
connection's socket says something happened to it.

With ``synchronous_standby_names`` set, PostgreSQL writes a commit locally, then waits for a standby
to confirm it, for as long as it takes: ``statement_timeout`` does not reach that wait (PostgreSQL
stops a statement's timer before it commits). When the wait is cancelled, the commit stays on the
primary alone and the client gets only a WARNING ("canceling wait for synchronous replication
..."): the commit looks successful, and if the primary is then lost the promoted standby never had
it. So:

- a commit still waiting after ``COMMIT_TIMEOUT`` seconds (the database's settings) is cancelled by
  the process's watchdog (agentstate.watchdog), so a write never waits long for a standby that is gone;
- a commit (or an autocommitted statement) that brought that WARNING raises
  ``ReplicationUnconfirmed``, which the API answers with 503 and ``Retry-After``
  (agentstate.api.errors): the write may be stored, and a retry with the same client ids stores
  nothing twice.

Django's health check (``CONN_HEALTH_CHECKS``) runs ``SELECT 1`` before each request's first
query on a kept connection: a round trip per request. A server that restarted or ended this
backend says so on the socket (its error message, then the end of the stream), and TCP keepalives
(the settings' ``DATABASE_KEEPALIVES_*``) mark a peer that went silent as failed: either leaves the
socket readable. So the check polls the socket (no wait) and asks the server only when there is
something to read; a quiet socket of an idle connection had nothing happen to it that ``SELECT 1``
would find. A peer gone silent within the keepalives' few seconds is found by the request's own
query instead, bounded by the same waits.

The hot statements a small API call sends (a pop, a recent read, an ADK append) go through
``prepared_cursor``: PostgreSQL parses and plans each once per connection, where a client-bound
statement is planned on every call, which cost more than running it (docs/PERFORMANCE.md). The
``PREPARED_STATEMENTS`` key (the settings turn it off behind PgBouncer in transaction mode, which
cannot keep a prepared statement across transactions) makes it an ordinary cursor.

PostgreSQL must report its messages in English (``lc_messages`` 'C' or 'en_US'): this reads them.
"""

from __future__ import annotations

import contextlib
import functools
import select
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from django.db import DatabaseError
from django.db.backends.postgresql import base, operations
from psycopg import _queries
from psycopg.pq import Format, TransactionStatus

from agentstate.watchdog import watchdog

# The start of both WARNINGs PostgreSQL 15 sends when it stops waiting for a standby (syncrep.c).
UNCONFIRMED_WARNINGS = ("canceling wait for synchronous replication", "canceling the wait for synchronous replication")


# psycopg prepares a statement once it ran this many times, or when asked (``prepare=True``).
PREPARE_ONLY_WHEN_ASKED = 2**31


class ReplicationUnconfirmed(DatabaseError):
    """The transaction committed on the primary but no synchronous standby confirmed it."""


@functools.lru_cache(maxsize=256)
def _converted(query: bytes, encoding: str) -> Any:
    """psycopg's conversion of a statement's text (placeholders to ``$n``), kept whatever its length."""
    return _queries._query2pg_nocache(query, encoding)


class _ConvertedOnce(_queries.PostgresQuery):
    """psycopg's query, its text converted once per text: psycopg keeps the conversion of a text
    of at most 50 parameters only, and parses a longer one again at every call (a LangGraph
    batch's statement: a checkpoint, its values and its tasks' writes). A prepared statement has a
    few fixed texts, so each is kept."""

    def convert(self, query: Any, vars: Any) -> None:
        if vars is None or not isinstance(query, str):
            return super().convert(query, vars)
        encoding = self._tx.encoding
        self.query, self._want_formats, self._order, self._parts = _converted(query.encode(encoding), encoding)
        self.dump(vars)
        return None


class _PreparedCursor(psycopg.Cursor[Any]):
    """psycopg's server-binding cursor, every statement prepared on its connection (psycopg keeps
    them per connection, the least recently used dropped past ``prepared_max``), its text
    converted once (``_ConvertedOnce``)."""

    _query_cls = _ConvertedOnce

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)


class _Pipelined:
    """Statements sent in one round trip (psycopg's pipeline), each prepared, read as one
    multi-statement execute is: the first statement's rows, then ``nextset()`` to the next. Until
    the round trip's end they run in one transaction, each with a snapshot of its own (READ
    COMMITTED), as statements joined by ``;`` do."""

    def __init__(self, connection: Any, statements: Sequence[tuple[str, Any]]) -> None:
        self.connection, self.statements = connection, statements
        self.cursors = [_PreparedCursor(connection) for _ in statements]
        self.current = 0

    def execute(self, query: Any = None, params: Any = None) -> _Pipelined:
        # Raw: runs the statements its caller justifies (agentstate.statements.execute_all)
        with self.connection.pipeline():
            for cursor, (sql, args) in zip(self.cursors, self.statements, strict=True):
                cursor.execute(sql, args)
        return self

    def nextset(self) -> bool | None:
        if self.current + 1 >= len(self.cursors):
            return None
        self.current += 1
        return True

    def close(self) -> None:
        for cursor in self.cursors:
            cursor.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursors[self.current], name)


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor: Any, sql: Any, params: Any) -> str:
        """A prepared statement is logged (Django's query log, the tests' query counts) as it would be
        client-bound, its values in place: its own text has ``$1`` where they go."""
        if isinstance(cursor, _PreparedCursor | _Pipelined):
            return self.compose_sql(sql, params)
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replication_unconfirmed = False
        # Outermost, and never removed: a statement run in autocommit mode is its own commit.
        self.execute_wrappers.insert(0, self._refuse_unconfirmed_autocommit)

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        if self.prepares and connection.prepare_threshold is None:
            # Django's None means psycopg prepares nothing, even when asked: only asked (the
            # prepared cursors below), never by the count it would otherwise keep.
            connection.prepare_threshold = PREPARE_ONLY_WHEN_ASKED
        self.replication_unconfirmed = False
        connection.add_notice_handler(self._notice_received)
        return connection

    @property
    def prepares(self) -> bool:
        """Whether statements may be prepared (off behind PgBouncer in transaction mode)."""
        return bool(self.settings_dict.get("PREPARED_STATEMENTS", True))

    def prepared_cursor(self) -> Any:
        """A cursor, as ``cursor()`` gives (the execute wrappers and the query log apply), whose one
        statement per ``execute`` is prepared, parameters bound by the server; ``cursor()`` itself
        when statements are not prepared. Several statements joined by ``;`` need ``cursor()``."""
        if not self.prepares:
            return self.cursor()
        return self.bound_cursor(prepared=True)

    def bound_cursor(self, *, prepared: bool = False, binary_results: bool = False) -> Any:
        """A cursor, as ``cursor()`` gives, whose parameters the server binds: bytes travel as binary
        parameters rather than hex in the statement's text (Django's cursor binds in the client).
        ``binary_results``: rows come in binary, bytea as it is rather than hex, twice its size.
        ``prepared``: each statement prepared on its connection, where statements are prepared."""
        cursor = (_PreparedCursor if prepared and self.prepares else psycopg.Cursor)(self._open())
        if binary_results:
            cursor.format = Format.BINARY
        return self._wrapped(cursor)

    def pipelined_cursor(self, statements: Sequence[tuple[str, Any]]) -> Any:
        """A cursor whose ``execute(sql, params)`` runs ``statements`` (each ``(sql, params)``)
        prepared, in one round trip (``_Pipelined``); ``sql`` and ``params`` are what the query log
        and the execute wrappers see. Needs ``prepares``."""
        return self._wrapped(_Pipelined(self._open(), statements))

    def _open(self) -> Any:
        self.close_if_health_check_failed()
        self.ensure_connection()
        return self.connection

    def _wrapped(self, cursor: Any) -> Any:
        with self.wrap_database_errors:
            return self._prepare_cursor(cursor)  # type: ignore[attr-defined]  # Django's, not in its stubs

    def close_if_health_check_failed(self) -> None:
        """Django's health check, without its round trip while the connection is quiet (above)."""
        # Django's attributes, not in its type stubs.
        checking = self.health_check_enabled and not self.health_check_done  # type: ignore[attr-defined,has-type]
        if checking and _quiet(self.connection):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _notice_received(self, diagnostic: Any) -> None:
        if (diagnostic.message_primary or "").startswith(UNCONFIRMED_WARNINGS):
            self.replication_unconfirmed = True

    def commit(self) -> None:
        with self._commit_bounded(bounded=True):
            super().commit()

    def _refuse_unconfirmed_autocommit(
        self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        if not self.get_autocommit():
            return execute(sql, params, many, context)
        # A write in autocommit mode (the one-statement appends and puts) commits, and waits for
        # the standby, inside its execute; a read never waits for one, so it is not cut short.
        with self._commit_bounded(bounded=_writes(sql)):
            return execute(sql, params, many, context)

    @contextlib.contextmanager
    def _commit_bounded(self, *, bounded: bool) -> Iterator[None]:
        """Around a commit: cancelled once it has waited ``COMMIT_TIMEOUT`` (when ``bounded``), and
        ``ReplicationUnconfirmed`` raised when no standby confirmed it."""
        timeout: float | None = self.settings_dict.get("COMMIT_TIMEOUT")
        guard = None
        if bounded and timeout and self.connection is not None:  # no connection: nothing to commit
            guard = watchdog.after(timeout, functools.partial(self.connection.cancel_safe, timeout=2))
        with guard or contextlib.nullcontext() as deadline:
            yield
        if deadline and deadline.fired and not self.replication_unconfirmed:
            # It ended just as it was cancelled: the cancel may still reach the server, and must
            # not stop the next statement on this connection.
            self.close()
        self._raise_if_unconfirmed()

    def _raise_if_unconfirmed(self) -> None:
        if self.replication_unconfirmed:
            self.replication_unconfirmed = False
            raise ReplicationUnconfirmed(
                "The write was not confirmed by a synchronous standby: it may or may not be kept."
            )


def _quiet(connection: Any) -> bool:
    """Whether ``connection`` (psycopg's, or None) is open, idle and has nothing waiting on its
    socket: a poll that returns at once."""
    if connection is None or connection.closed or connection.broken:
        return False
    if connection.info.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        readable, _, _ = select.select([connection.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


_WRITE_WORDS = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "WITH"})


def _writes(sql: Any) -> bool:
    """Whether a statement may write (and so commit, in autocommit mode): by its first word, or
    any one's of several joined by ``; `` (``agentstate.statements.execute_all``: a lock, then a write)."""
    return isinstance(sql, str) and any(_first_word(part) in _WRITE_WORDS for part in sql.split("; "))


def _first_word(sql: str) -> str:
    words = sql[:64].split(None, 1)
    return words[0].upper() if words else ""
