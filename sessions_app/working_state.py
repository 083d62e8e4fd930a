"""Where working state lives: a table of its own (default) or Redis (``REDIS_URL``).

Both stores are shared by every worker process, expire an entry ``WORKING_STATE_TTL_SECONDS``
after its last write, and never evict a live entry before that. Patches merge top-level keys (a
``None`` value removes the key), so concurrent patches of different keys never lose each other.
Callers (sessions_app.services) hold the session's row lock around writes, so a write cannot
slip in after the session ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import timedelta
from functools import cache
from itertools import islice
from typing import Any, Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from sessions_app.models import Session, WorkingStateEntry


def _merge(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = dict(data)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _bounded(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` if its keys and JSON values add up to at most ``WORKING_STATE_MAX_BYTES``
    characters: each request is bounded by the body limit, but patches of new keys would otherwise
    grow one session's state without end."""
    limit = settings.WORKING_STATE_MAX_BYTES
    size = 0
    for key, value in data.items():
        size += len(key) + len(json.dumps(value, ensure_ascii=False))
        if size > limit:
            raise InvalidInput.for_field("working_state", f"would grow past {limit} characters; remove keys first.")
    return data


def _chunks(items: list[int], size: int = 500) -> Iterator[list[int]]:
    """Bounded batches: one statement or command per 500 sessions, never one per session."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class WorkingStateUnavailable(Exception):
    """The store (Redis) did not answer a read or write an erasure needed inside its transaction."""


class WorkingStateStore(Protocol):
    # Whether a deleted session's entry stays until ``clear_many`` runs after the commit.
    outlives_its_session: bool

    def get(self, session_pk: int) -> dict[str, Any]: ...
    def patch(self, session_pk: int, changes: dict[str, Any]) -> dict[str, Any]: ...
    def replace(self, session_pk: int, data: dict[str, Any]) -> dict[str, Any]: ...
    def clear(self, session_pk: int) -> None: ...
    def clear_many(self, session_pks: list[int]) -> None: ...
    def count_many(self, session_pks: list[int]) -> int: ...
    def purge_expired(self) -> int: ...
    def clear_orphans(self) -> int: ...


class DatabaseWorkingStateStore:
    """One row per live session with an ``expires_at``; expired rows read as empty."""

    outlives_its_session = False  # the row goes with its session's, in the same transaction

    def __init__(self, ttl_seconds: int) -> None:
        self.ttl = timedelta(seconds=ttl_seconds)

    def get(self, session_pk: int) -> dict[str, Any]:
        entry = WorkingStateEntry.objects.filter(session_id=session_pk, expires_at__gt=timezone.now()).first()
        return entry.data if entry else {}

    def patch(self, session_pk: int, changes: dict[str, Any]) -> dict[str, Any]:
        return self._write(session_pk, lambda current: _bounded(_merge(current, changes)))

    def replace(self, session_pk: int, data: dict[str, Any]) -> dict[str, Any]:
        return self._write(session_pk, lambda current: _bounded(dict(data)))

    def clear(self, session_pk: int) -> None:
        WorkingStateEntry.objects.filter(session_id=session_pk).delete()

    def clear_many(self, session_pks: list[int]) -> None:
        for chunk in _chunks(session_pks):
            WorkingStateEntry.objects.filter(session_id__in=chunk).delete()

    def count_many(self, session_pks: list[int]) -> int:
        """How many of these sessions hold unexpired working state."""
        now = timezone.now()
        return sum(
            WorkingStateEntry.objects.filter(session_id__in=chunk, expires_at__gt=now).count()
            for chunk in _chunks(session_pks)
        )

    def purge_expired(self) -> int:
        deleted, _ = WorkingStateEntry.objects.filter(expires_at__lte=timezone.now()).delete()
        return deleted

    def clear_orphans(self) -> int:
        return 0  # none: a row cascades with its session

    @transaction.atomic
    def _write(self, session_pk: int, update) -> dict[str, Any]:
        now = timezone.now()
        entry = WorkingStateEntry.objects.select_for_update().filter(session_id=session_pk).first()
        if entry is None:
            try:
                with transaction.atomic():
                    entry = WorkingStateEntry.objects.create(session_id=session_pk, data={}, expires_at=now)
            except IntegrityError:  # a concurrent first write won; merge into its row
                entry = WorkingStateEntry.objects.select_for_update().get(session_id=session_pk)
        current = entry.data if entry.expires_at > now else {}
        entry.data = update(current)
        entry.expires_at = now + self.ttl
        entry.updated_at = now
        entry.save(update_fields=["data", "expires_at", "updated_at"])
        return entry.data


class RedisWorkingStateStore:
    """One Redis hash per session (field = key, value = JSON), with EXPIRE as the TTL.

    Run Redis with ``maxmemory-policy noeviction`` so live state is never evicted.
    """

    prefix = "agentstate:ws:"
    outlives_its_session = True

    def __init__(self, url: str, ttl_seconds: int) -> None:
        import redis

        # settings.REDIS_OPTIONS bounds every wait; without them redis-py waits on a frozen Redis
        # for ever and retries three times with back-off.
        self.client = redis.Redis.from_url(url, **settings.REDIS_OPTIONS)
        self.ttl = ttl_seconds

    def _key(self, session_pk: int) -> str:
        return f"{self.prefix}{session_pk}"

    @staticmethod
    def _decode(raw: Mapping[bytes | str, bytes | str]) -> dict[str, Any]:
        # Bytes: the client is made without decode_responses (redis types both).
        return {key.decode() if isinstance(key, bytes) else key: json.loads(value) for key, value in raw.items()}

    def get(self, session_pk: int) -> dict[str, Any]:
        return self._decode(self.client.hgetall(self._key(session_pk)))

    def patch(self, session_pk: int, changes: dict[str, Any]) -> dict[str, Any]:
        key = self._key(session_pk)
        # Callers hold the session's row lock, so nothing changes between this read and the write.
        _bounded(_merge(self._decode(self.client.hgetall(key)), changes))
        to_set = {k: json.dumps(v) for k, v in changes.items() if v is not None}
        to_remove = [k for k, v in changes.items() if v is None]
        pipe = self.client.pipeline(transaction=True)
        if to_set:
            pipe.hset(key, mapping=to_set)  # type: ignore[arg-type]  # redis types the keys as a union; a Mapping's keys are invariant
        if to_remove:
            pipe.hdel(key, *to_remove)
        pipe.expire(key, self.ttl)
        pipe.hgetall(key)
        return self._decode(pipe.execute()[-1])

    def replace(self, session_pk: int, data: dict[str, Any]) -> dict[str, Any]:
        _bounded(data)
        key = self._key(session_pk)
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(key)
        if data:
            pipe.hset(key, mapping={k: json.dumps(v) for k, v in data.items()})
            pipe.expire(key, self.ttl)
        pipe.execute()
        return dict(data)

    def clear(self, session_pk: int) -> None:
        self.client.delete(self._key(session_pk))

    def clear_many(self, session_pks: list[int]) -> None:
        for chunk in _chunks(session_pks):
            self.client.delete(*(self._key(pk) for pk in chunk))

    def count_many(self, session_pks: list[int]) -> int:
        return sum(self.client.exists(*(self._key(pk) for pk in chunk)) for chunk in _chunks(session_pks))

    def purge_expired(self) -> int:
        return 0  # Redis expires keys itself.

    def clear_orphans(self, *, batch: int = 500) -> int:
        """Delete the hashes of sessions that no longer exist (what a delete or an erasure left when
        its process died between its commit and ``clear_many``), scanning the keys in batches.
        Returns how many went. A hash is only written for a committed session (callers lock its
        row), so a live session's is never taken for an orphan."""
        cleared = 0
        keys = self.client.scan_iter(match=f"{self.prefix}*", count=batch)
        while chunk := list(islice(keys, batch)):
            pks = {int(key[len(self.prefix) :]) for key in chunk}
            gone = pks - set(Session.objects.filter(pk__in=pks).values_list("pk", flat=True))
            self.clear_many(sorted(gone))
            cleared += len(gone)
        return cleared

    def ping(self) -> bool:
        return bool(self.client.ping())


@cache
def _build_store(backend: str, url: str, ttl: int) -> WorkingStateStore:
    if backend == "redis":
        return RedisWorkingStateStore(url, ttl)
    if backend == "database":
        return DatabaseWorkingStateStore(ttl)
    raise ValueError(f"Unknown AGENTSTATE_WORKING_STATE_BACKEND {backend!r}")


def get_store() -> WorkingStateStore:
    """The store selected by settings (re-read each call so tests can override settings)."""
    return _build_store(settings.WORKING_STATE_BACKEND, settings.REDIS_URL, settings.WORKING_STATE_TTL_SECONDS)
