"""What the log records, decided once for every page and call (``agentstate.access``): a declared
model's rows (``agentstate.subject_data``) reach their person through the declaration, so every
admin page built on ``ReadOnlyAdmin`` is logged without naming it here."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from rest_framework.exceptions import APIException

from agentstate import subject_data
from agentstate.tenancy.models import APIKey, Tenant
from userdata_app.access_log.chain import Pending, entries_append, log_kept, subjects_entries_append
from userdata_app.access_log.models import AccessEntry, AccessPolicy
from userdata_app.erasure.registry import subject_hash

REASON_SECONDS = 30 * 60  # a reason given covers that person's pages for this long
REASONS_SESSION_KEY = "access_log_reasons"
Action = AccessEntry.Action


def hash_of(*, tenant_slug: str, user_id: str) -> str:
    return subject_hash(tenant_slug=tenant_slug, user_id=user_id)[1]


def rows_subjects(model: type[Model], pks: Sequence[Any]) -> dict[tuple[str, str], list[Any]]:
    """``{(tenant slug, subject hash): [pk, ...]}`` of a declared model's rows (one query); {} for
    a model that holds no one's data."""
    declaration = subject_data.declaration_of(model)
    if declaration is None or not log_kept():
        return {}
    prefix = f"{declaration.via}__" if declaration.via else ""
    rows = model._default_manager.filter(pk__in=pks).values_list("pk", f"{prefix}tenant__slug", f"{prefix}user_id")
    found: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for pk, slug, user_id in rows:
        found[(slug, hash_of(tenant_slug=slug, user_id=user_id))].append(pk)
    return found


def _actor(request: HttpRequest) -> str:
    user = getattr(request, "user", None) or AnonymousUser()
    return user.get_username() or "anonymous"


def _reason(request: HttpRequest, digest: str) -> str:
    """The reason staff gave for this person's pages, while it lasts."""
    given = request.session.get(REASONS_SESSION_KEY, {}).get(digest) if hasattr(request, "session") else None
    if given and given["until"] > time.time():
        return given["reason"]
    return ""


def reason_keep(request: HttpRequest, *, digest: str, reason: str) -> None:
    reasons = {k: v for k, v in request.session.get(REASONS_SESSION_KEY, {}).items() if v["until"] > time.time()}
    reasons[digest] = {"reason": reason, "until": time.time() + REASON_SECONDS}
    request.session[REASONS_SESSION_KEY] = reasons


def subjects_exported(*, actor: str, subjects: Iterable[tuple[Tenant, str]], model: str, pks: Sequence[Any]) -> None:
    """A subject export (admin or command): one entry per person in it."""
    if not log_kept():
        return
    found = {(t.slug, hash_of(tenant_slug=t.slug, user_id=user_id)): list(pks) for t, user_id in subjects}
    subjects_entries_append(subjects=found, actor=actor, action=Action.EXPORT, model=model)


def _subjects_read(
    *, request: HttpRequest, model: type[Model], subjects: dict[tuple[str, str], list[Any]], action: str
) -> None:
    """Staff saw these people's rows: one entry each, with the reason given for that person."""
    if not subjects:
        return
    actor = _actor(request)
    by_reason: dict[str, dict[tuple[str, str], list[Any]]] = defaultdict(dict)
    for subject, rows in subjects.items():
        by_reason[_reason(request, subject[1])][subject] = rows
    for purpose, group in by_reason.items():
        subjects_entries_append(subjects=group, actor=actor, action=action, model=model._meta.label, purpose=purpose)


class AccessRecorder:
    """The recorder ``agentstate.access`` calls."""

    def admin_rows_read(self, *, request: HttpRequest, model: type[Model], pks: Sequence[Any], action: str) -> None:
        _subjects_read(request=request, model=model, subjects=rows_subjects(model, pks), action=action)

    def admin_record_read(self, *, request: HttpRequest, obj: Model) -> HttpResponse | None:
        """The reason form, when the person's tenant asks for one and none was given lately;
        else the page is logged. Its person is looked up once for both."""
        model = type(obj)
        subjects = rows_subjects(model, [obj.pk])
        if not subjects:
            return None
        ((slug, digest),) = subjects
        required = AccessPolicy.objects.filter(tenant__slug=slug, reason_required=True).exists()
        if required and not _reason(request, digest):
            return TemplateResponse(
                request,
                "admin/access_log/reason.html",
                {
                    "title": "Why are you opening this person's data?",
                    "action": reverse("admin:access_log_accessentry_reason"),
                    "subject": digest,
                    "next": request.get_full_path(),
                    "site_header": "agentstate",
                },
            )
        _subjects_read(request=request, model=model, subjects=subjects, action=Action.VIEW)
        return None

    def api_call(self, *, request: Any, view: Any, response: Any) -> None:
        """A compliance key's call, or a staff login's call answered by a route whose answers carry
        people's data (its view's ``reads``, checked against the map by agentstate.E003): its route's name,
        method and status, and the person it names (``user_id`` in the path, query or body),
        hashed; never the path or query themselves."""
        # The key authentication already found: never authenticate again here (a request refused
        # before it, e.g. with the database busy, would query the database once more and 500).
        key = getattr(request, "_auth", None)
        if isinstance(key, APIKey):
            if key.scope != APIKey.Scope.COMPLIANCE:
                return
            actor, slug = f"API key {key.prefix}", key.tenant.slug
        else:
            # A login let through to act as a tenant (``request.tenant`` is set once it was), answered.
            tenant = getattr(request, "tenant", None)
            answered = getattr(response, "status_code", 500) < 400
            if not isinstance(tenant, Tenant) or not getattr(view, "reads", None) or not answered:
                return
            actor, slug = _actor(request), tenant.slug
        if not log_kept():
            return
        user_id = _named_user_id(request, view)
        match = getattr(request, "resolver_match", None)
        detail = (
            ("route", getattr(match, "url_name", "") or ""),
            ("method", request.method),
            ("status", getattr(response, "status_code", 0)),
            ("view", type(view).__name__),
        )
        digest = hash_of(tenant_slug=slug, user_id=user_id) if user_id else ""
        purpose = _reason(request, digest) if digest and not isinstance(key, APIKey) else ""
        entries_append(pending={slug: [Pending(actor, Action.API, "", (), digest, purpose, detail)]})


def _named_user_id(request: Any, view: Any) -> str:
    try:
        body = request.data
    except APIException:  # a body that did not parse names no one
        body = None
    for source in (getattr(view, "kwargs", {}), request.query_params, body):
        get = getattr(source, "get", None)
        value = get("user_id") if callable(get) else None
        if isinstance(value, str) and value:
            return value
    return ""
