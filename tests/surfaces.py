"""The surfaces staff read people's data through, enumerated for the rules that must hold on each
(issue 41): every route of the URL configuration with a request that reads it, every page of
every registered admin, and a subject holding a marker in every category of the map of people's
data (``agentstate.subject_data``). A route, admin or category added later is walked without
anyone listing it; a route that needs more than its path to read gets a line in ``QUERIES``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from agentstate import subject_data
from agentstate.api.views import TenantAPIView, reads_declared
from agentstate.tenancy.models import Tenant
from tests.userdata_app.erasure_factories import verified_request
from tests.userdata_app.test_erasure_residue import markers_of, store_everything
from userdata_app.access_requests import access_request_create, access_request_verify

SUBJECT = "erin-41\u2003"  # stored exactly as sent, as every id
TENANT = "acme"
ADK_APP, ARTIFACT_APP, ADK_SESSION = "travel", "files", "adk-1"  # as store_everything names them

# Where each kind of value store_everything writes lives, by category of the map.
MARKED = {
    "sessions": ("metadata",),
    "messages": ("message", "name"),
    "message_pops": ("popped",),
    "rounds": ("round",),
    "checkpoints": ("working",),  # promoted from the working state
    "working_state": ("working",),
    "transitions": ("transition", "reason"),
    "run_usage": ("usage",),
    "langgraph_threads": ("graph",),  # in the thread id
    "langgraph_checkpoints": ("graph",),
    "langgraph_writes": ("write",),
    "langgraph_channel_values": ("channel_value",),
    "adk_events": ("adk_text", "adk_state"),
    "user_data": ("email", "preference"),
    "adk_user_state": ("adk_user",),
    "memories": ("memory_key", "memory", "adk_memory"),
    "artifacts": ("artifact_name", "artifact"),
}


@dataclass
class Seeded:
    """The subject's data, written through the API, and the marker values in it by category."""

    marks: dict[str, str]

    def markers(self, *categories: str) -> dict[str, str]:
        """``{marker: category}`` of these categories (default: every category of the map)."""
        chosen = categories or subject_data.categories()
        return {self.marks[kind]: category for category in chosen for kind in MARKED[category]}

    def found(self, content: bytes, *categories: str) -> set[str]:
        """The categories of these whose markers ``content`` holds."""
        text = content.decode("utf-8", "replace")
        return {category for marker, category in self.markers(*categories).items() if marker in text}


def seed(api: APIClient) -> Seeded:
    """store_everything for SUBJECT, a second ADK event (so a session read has a next page), and
    a verified erasure request and access request for them (their export pages)."""
    unmarked = set(subject_data.categories()) - MARKED.keys()
    assert not unmarked, f"categories of the map with no marker seeded: {unmarked}"  # a new category: seed it
    marks = markers_of(41)
    store_everything(api, SUBJECT, marks)
    event = {"id": "e2", "invocation_id": "i2", "author": "agent", "timestamp": 1_700_000_001.0}
    response = api.post(_adk_session_url() + "events/", {"event": json.dumps(event)}, format="json")
    assert response.status_code == 201, response.content
    tenant = Tenant.objects.get(slug=TENANT)
    verified_request(subjects=[(tenant, SUBJECT)], scope="everything")
    access_request_verify(request=access_request_create(subjects=[(tenant, SUBJECT)]), identity_check="by e-mail")
    return Seeded(marks)


def _adk_session_url() -> str:
    return (
        reverse(
            "adk-session-detail", kwargs={"app_name": ADK_APP, "user_id": SUBJECT, "session_id": ADK_SESSION}
        ).rstrip("/")
        + "/"
    )


# --- The URL configuration -----------------------------------------------------------------------


def _events_cursor(client: Client, seeded: Seeded) -> dict[str, str]:
    """A session read's next page of events: its cursor, from a read whose page holds one event."""
    from django.test import override_settings

    with override_settings(PAGE_MAX_BYTES=1):
        answer = client.get(_adk_session_url(), {"tenant": TENANT})
    return {"cursor": answer.json().get("events_next") or ""}  # none for a login refused the read


# Query parameters a route needs to read the seeded subject's data, by route name (a callable is
# given the client and the seed).
QUERIES: dict[str, dict[str, str] | Callable[[Client, Seeded], dict[str, str]]] = {
    "message-search": lambda client, seeded: {"q": "message"},
    "memory-search": lambda client, seeded: {"q": "note"},
    "adk-session-list": {"user_id": SUBJECT},
    "checkpoint-latest": {"label": "done"},
    "adk-event-list": _events_cursor,
    # As the saver reads them: its channel values apart (put back inside, a JSON checkpoint is a 400).
    **{
        name: (lambda client, seeded: {"thread_id": f"thread-{seeded.marks['graph']}", "channel_values": "separate"})
        for name in ("langgraph-checkpoint-list", "langgraph-checkpoint")
    },
    **{
        name: (lambda client, seeded: {"filename": f"user:{seeded.marks['artifact_name']}.pdf"})
        for name in ("adk-artifact-versions", "adk-artifact-load", "adk-artifact-content")
    },
}
# Path parameters: the seeded subject's.
PATH_VALUES = {"user_id": SUBJECT, "session_id": "s1", "key": "email", "round_id": "1", "app_name": ADK_APP}
# Reads sent as a POST: a memory batch that gets the subject's items.
POSTED_READS: dict[str, Callable[[Seeded], dict[str, Any]]] = {
    "store-batch": lambda seeded: {
        "ops": [{"op": "search", "namespace_prefix": ["users"], "limit": 10}],
    },
}


@dataclass(frozen=True)
class Route:
    name: str
    pattern: URLPattern
    view_class: type | None

    @property
    def reads(self) -> tuple[str, ...] | None:
        """The categories the route's view says its answers carry (None: a view that says nothing)."""
        if isinstance(self.view_class, type) and issubclass(self.view_class, TenantAPIView):
            return reads_declared(self.view_class)
        return None

    @property
    def readable(self) -> bool:
        """Whether a GET (or a read in ``POSTED_READS``) reads the route: writes that answer with
        data are logged the same way, but are not sent here."""
        return self.name in POSTED_READS or callable(getattr(self.view_class, "get", None))

    @property
    def is_api(self) -> bool:
        return isinstance(self.view_class, type) and issubclass(self.view_class, TenantAPIView)

    def url(self) -> str:
        values = dict(PATH_VALUES)
        if self.name.startswith("adk-artifact"):
            values["app_name"] = ARTIFACT_APP
        if self.name.startswith("adk-"):
            values["session_id"] = ADK_SESSION
        params = self.pattern.pattern.regex.groupindex
        return reverse(self.name, kwargs={k: v for k, v in values.items() if k in params})

    def read(self, client: Client, seeded: Seeded, *, tenant: bool = True) -> Any:
        """The route read as ``client`` (a staff login picks the tenant; a key's is its own)."""
        query = QUERIES.get(self.name, {})
        query = dict(query(client, seeded) if callable(query) else query)
        if tenant:
            query["tenant"] = TENANT
        url = self.url() + ("?" + urlencode(query) if query else "")
        if self.name in POSTED_READS:
            return client.post(url, POSTED_READS[self.name](seeded), content_type="application/json")
        return client.get(url)


def routes(*, admin_pages: bool = False) -> Iterator[Route]:
    """Every named route of the URL configuration outside the admin (the admin: ``admin_urls``)."""

    def walk(patterns: list[Any], namespace: str) -> Iterator[Route]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                yield from walk(pattern.url_patterns, inner)
            elif pattern.name and namespace.startswith("admin:") == admin_pages:
                callback = pattern.callback
                view_class = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
                yield Route(namespace + pattern.name, pattern, view_class)

    seen: set[str] = set()
    for route in walk(get_resolver().url_patterns, ""):
        if route.name not in seen and not route.name.endswith("logout"):  # logging out ends the walk's login
            seen.add(route.name)
            yield route


# --- The admin registry --------------------------------------------------------------------------

SITE_PAGES = ("admin:index",)


def admin_urls() -> Iterator[tuple[str, type | None]]:
    """Every page a GET opens in the admin: the dashboard, each app's index, and every URL of each
    registered admin's ``get_urls`` (changelists, add pages, and each row's change, history,
    delete and custom pages, for every row the database holds) with the model it shows."""
    for name in SITE_PAGES:
        yield reverse(name), None
    for label in sorted({model._meta.app_label for model in admin.site._registry}):
        yield reverse("admin:app_list", kwargs={"app_label": label}), None
    for model, model_admin in admin.site._registry.items():
        pks = list(model._default_manager.order_by("pk").values_list("pk", flat=True)[:5])
        for pattern in model_admin.get_urls():
            if not pattern.name:
                continue
            params = set(pattern.pattern.regex.groupindex)
            if not params:
                yield reverse(f"admin:{pattern.name}"), model
            elif params == {"object_id"}:
                for pk in pks:
                    yield reverse(f"admin:{pattern.name}", kwargs={"object_id": pk}), model
            # Pages of one step of a request (object_id and step) act on a POST: opened from their request's page.
