"""The router and ``replica_reads``: which database a query goes to, by the rule of
``agentstate.db_router`` (the package)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import Model

from agentstate import metrics
from agentstate.db_router.health import (
    ReplicaCheck,
    close_replica,
    deadline,
    deadline_fired,
    mark_replica,
    no_answer,
    replica_is_healthy,
)
from agentstate.db_router.middleware import SAFE_METHODS, caller_wrote_recently, current_request

_replica: ContextVar[str | None] = ContextVar("agentstate_db_replica", default=None)


_P = ParamSpec("_P")
_R = TypeVar("_R")


class ReplicaRouter:
    """Reads go to the replica ``replica_reads`` chose, if any; everything else to the primary."""

    def db_for_read(self, model: type[Model], **hints: Any) -> str:
        alias = _replica.get()
        if (
            alias is None
            or model._meta.app_label in settings.DATABASE_PRIMARY_ONLY_APPS
            or connections[DEFAULT_DB_ALIAS].in_atomic_block
        ):
            return DEFAULT_DB_ALIAS
        return alias

    def db_for_write(self, model: type[Model], **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool:
        # A replica holds the primary's rows: an object read there may be related to one read here.
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


def replica_reads(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``func`` with its reads on a healthy replica when the rule above allows; if the replica
    fails during the call (any database error), mark it down and run ``func`` again on the primary,
    where a real bug fails again and is reported. Only for reads: ``func`` must change nothing. A
    ``TemplateResponse`` it returns must already be rendered."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        alias = replica_for_read()
        if alias is None:
            metrics.REPLICA_READS.labels(database=DEFAULT_DB_ALIAS).inc()
            return func(*args, **kwargs)
        token = _replica.set(alias)
        try:
            with deadline(alias) as expired:
                result = func(*args, **kwargs)
        except DatabaseError as exc:  # down, cancelled by a replay conflict, behind on a migration, or silent
            found = no_answer() if deadline_fired(expired) else f"{type(exc).__name__} during a read"
            mark_replica(alias, ReplicaCheck(lag=None, error=found))
            close_replica(alias)
        else:
            metrics.REPLICA_READS.labels(database=alias).inc()
            return result
        finally:
            _replica.reset(token)
        metrics.REPLICA_READS.labels(database=DEFAULT_DB_ALIAS).inc()
        return func(*args, **kwargs)

    return wrapper


def replica_for_read() -> str | None:
    """The replica the current reads may use, or None for the primary."""
    replicas = settings.DATABASE_REPLICAS
    if not replicas or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return None
    request = current_request()
    if request is not None and request.method not in SAFE_METHODS:
        return None
    healthy = [alias for alias in replicas if replica_is_healthy(alias)]
    if not healthy or caller_wrote_recently(request):
        return None
    return random.choice(healthy)  # noqa: S311 (spreads reads over replicas: no secret)
