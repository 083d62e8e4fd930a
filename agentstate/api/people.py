"""API keys scoped to one person: the one rule every API call passes through.

A key with a ``user_id`` (``APIKey.user_id``) reaches that person's data only. Each routed view
says where its requests name a person (``TenantAPIView.person_named_in``; the system check
agentstate.E004 refuses a view that says nothing), and ``person_check`` applies the rule there:

- ``PATH``: the ``user_id`` path segment must be the key's person (another: 403). Another person's
  session under the key's own user is not found (404), as any unknown session.
- ``QUERY``: a list across people, narrowed by ``?user_id=``: absent or empty, it becomes the
  key's person; another person's is refused (403).
- ``BODY`` (or a path into the body, as ``"body.calls.*.body"``): a write names its person in the
  JSON object's ``user_id``: absent or null, it becomes the key's person; another is refused (403).
- ``NO_PERSON``: the route's data is no one's (ADK's ``app:`` state): served as to any key.
- ``TENANT_WIDE``: tenant administration (settings, compliance) or an act across people that
  cannot be narrowed: refused (403).

A tenant key, or a staff login, names no person: nothing here applies to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import QueryDict

from agentstate.exceptions import PersonKeyRefused
from agentstate.tenancy.models import APIKey

PATH, QUERY, BODY = "path", "query", "body"
NO_PERSON: tuple[str, ...] = ()
TENANT_WIDE = ("tenant-wide",)
FIELD = "user_id"
WRITES = ("POST", "PUT", "PATCH")


def key_person(request: Any) -> str | None:
    """The person the request's key is scoped to; None for a tenant key or a staff login."""
    auth = getattr(request, "auth", None)
    return auth.user_id if isinstance(auth, APIKey) else None


def valid_places(places: tuple[str, ...]) -> bool:
    """Whether a view's ``person_named_in`` is made of places this module knows."""
    return places == TENANT_WIDE or all(p in (PATH, QUERY) or p.split(".")[0] == BODY for p in places)


def person_check(request: Any, view: Any, places: tuple[str, ...]) -> None:
    """Refuse (``PersonKeyRefused``, 403) a person key's request that names another person or
    reaches a tenant-wide route; make a request that names no one name the key's person."""
    person = key_person(request)
    if person is None:
        return
    if places == TENANT_WIDE:
        raise PersonKeyRefused("This API key is scoped to one person: tenant-wide routes need a tenant key.", fields={})
    for place in places:
        if place == PATH:
            if FIELD in view.kwargs and view.kwargs[FIELD] != person:
                raise _other_person()
        elif place == QUERY:
            _query_narrow(request, person)
        elif request.method in WRITES:
            for document in _documents(request.data, place.split(".")[1:]):
                _body_narrow(document, person)


def _other_person() -> PersonKeyRefused:
    message = "This API key is scoped to one person: it reaches that person's data only."
    return PersonKeyRefused(message, fields={FIELD: ["must be the API key's own person (or left out)."]})


def _query_narrow(request: Any, person: str) -> None:
    named = [value for value in request.query_params.getlist(FIELD) if value != ""]
    if any(value != person for value in named):
        raise _other_person()
    query = QueryDict(mutable=True)  # the query DRF reads (``query_params``), made to name the person
    for name, values in request.query_params.lists():
        query.setlist(name, values)
    query.setlist(FIELD, [person])
    request._request.GET = query


def _documents(value: Any, path: list[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects at ``path`` in ``value`` (``*``: every item of a list); what is not there
    is left to the view's validation (a 400)."""
    if not path:
        if isinstance(value, dict):
            yield value
        return
    step, rest = path[0], path[1:]
    if step == "*":
        for item in value if isinstance(value, list) else ():
            yield from _documents(item, rest)
    elif isinstance(value, dict):
        yield from _documents(value.get(step), rest)


def _body_narrow(document: dict[str, Any], person: str) -> None:
    named = document.get(FIELD)
    if named is None:
        document[FIELD] = person
    elif named != person:
        raise _other_person()


def person_key_scope(places: tuple[str, ...] | None) -> str:
    """What a person key meets on a route, in the API's words (the schema's 403 says it per route)."""
    if places is None or places == TENANT_WIDE:
        return "A key scoped to one person is refused here (`person_key`): this route needs a tenant key."
    if places == NO_PERSON:
        return "A key scoped to one person is served here as any key: the route names no person."
    named = {PATH: "the path's `user_id`", QUERY: "the query's `user_id`"}
    where = " or ".join(named.get(place, "the body's `user_id`") for place in dict.fromkeys(places))
    return f"A key scoped to one person is refused (`person_key`) when {where} names another person."
