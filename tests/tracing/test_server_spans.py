"""The service's spans (agentstate_site.tracing): requests, SQL and Redis, and nothing in them that
names a person."""

import pytest
from django.db import connection

from userdata_app.access_log.recorder import hash_of

USER = "alice-Zq81"
SESSION = "session-Kp27"
CONTENT = "content-Wm55"
QUERY = "query-Hx90"
DATA = "datum-Rb44"
MARKERS = (USER, SESSION, CONTENT, QUERY, DATA)


def texts_of(span) -> list[str]:
    """Everything a span carries that an exporter sends: its name, attribute values, events'
    attributes and status description."""
    found = [span.name, span.status.description or ""]
    for attributes in [span.attributes, *(event.attributes for event in span.events)]:
        for value in (attributes or {}).values():
            found.extend(str(v) for v in (value if isinstance(value, tuple) else (value,)))
    return found


def test_a_persons_requests_leave_no_identifier_or_content_in_any_span(
    server_spans, api, agent_key, settings, tenant, monkeypatch
):
    # Even where the operator asked OpenTelemetry to capture every header (the key among them).
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST", ".*")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_RESPONSE", ".*")
    settings.ERASURE_HMAC_KEYS = {"k1": "tracing-test-key"}
    settings.ERASURE_HMAC_KEY_ID = "k1"
    base = f"/api/v1/users/{USER}/sessions/{SESSION}/"
    assert api.post("/api/v1/sessions/", {"user_id": USER, "session_id": SESSION}, format="json").status_code == 201
    # The same id again: the database refuses it (an error whose message quotes the values).
    assert api.post("/api/v1/sessions/", {"user_id": USER, "session_id": SESSION}, format="json").status_code == 409
    assert api.post(base + "messages/", {"messages": [{"content": CONTENT}]}, format="json").status_code == 201
    assert api.put(base + "working-state/", {"note": CONTENT}, format="json").status_code == 200
    assert api.put(f"/api/v1/users/{USER}/data/{DATA}/", {"value": CONTENT}, format="json").status_code in (200, 201)
    assert api.get(f"/api/v1/users/{USER}/messages/search/", {"q": QUERY, "user_id": USER}).status_code == 200
    assert api.get(f"/api/v1/users/{USER}/sessions/missing-{SESSION}/").status_code == 404

    spans = server_spans.get_finished_spans()
    markers = (*MARKERS, agent_key.split(".")[-1])
    leaks = [(span.name, text) for span in spans for text in texts_of(span) if any(m in text for m in markers)]
    assert leaks == []
    requests = [span for span in spans if span.kind.name == "SERVER"]
    assert len(requests) == 7
    named = [span for span in requests if span.attributes.get("http.route", "").startswith("api/v1/users/")]
    assert {span.attributes.get("agentstate.subject") for span in named} == {
        hash_of(tenant_slug=tenant.slug, user_id=USER)
    }
    assert all(span.attributes.get("agentstate.tenant") == tenant.slug for span in requests)
    # The URL as the request log writes it: the route's pattern.
    urls = {span.attributes.get("http.url") or span.attributes.get("url.full") for span in requests}
    assert "http://testserver/api/v1/users/{user_id}/sessions/{session_id}/messages/" in urls
    systems = {span.attributes.get("db.system") for span in spans}
    if connection.vendor == "postgresql":
        assert "postgresql" in systems, "each SQL statement is a span"
    if settings.WORKING_STATE_BACKEND == "redis":
        assert "redis" in systems, "each Redis command is a span"


def test_a_database_errors_message_leaves_as_its_type_alone(server_spans, postgres_only):
    from django.db import IntegrityError, transaction

    from agentstate.tenancy.models import Tenant

    Tenant.objects.create(slug=USER.lower())
    with pytest.raises(IntegrityError), transaction.atomic():  # PostgreSQL's message quotes the key's value
        Tenant.objects.create(slug=USER.lower())

    spans = server_spans.get_finished_spans()
    failed = [span for span in spans if span.status.status_code.name == "ERROR"]
    assert failed and all(event.attributes["exception.type"] for span in failed for event in span.events)
    assert [text for span in spans for text in texts_of(span) if USER.lower() in text] == []
