"""The compliance API (subject export) and the grace period as API clients see it (409)."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agentstate.tenancy.services import api_key_create
from tests.api.assertions import streamed
from tests.userdata_app.erasure_factories import compliance_group, subject_data_create, verified_request
from userdata_app import erasure

EXPORT = "/api/v1/compliance/users/alice/export/"


def client_for(tenant, scope):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name=scope, scope=scope)[1]}")
    return client


@pytest.fixture
def data(tenant, other_tenant):
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=3)
    subject_data_create(tenant=other_tenant, user_id="alice", sessions=1, messages=1)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=1)


def test_compliance_key_exports_everything_about_its_tenants_user(data, tenant):
    response = client_for(tenant, "compliance").get(EXPORT)
    assert response.status_code == 200
    body = streamed(response).decode()
    [subject] = json.loads(body)["subjects"]
    assert subject["tenant"] == "acme" and subject["user_id"] == "alice"
    assert len(subject["sessions"][0]["messages"]) == 3 and len(subject["user_data"]) == 2
    assert "bob" not in body


def test_export_stays_in_the_callers_tenant_and_needs_the_compliance_scope(data, tenant, other_tenant):
    other = json.loads(streamed(client_for(other_tenant, "compliance").get(EXPORT)))["subjects"][0]
    assert other["tenant"] == "globex" and len(other["sessions"][0]["messages"]) == 1

    denied = client_for(tenant, "agent").get(EXPORT)
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission_denied"
    assert APIClient().get(EXPORT).status_code == 401
    bad = client_for(tenant, "compliance").get("/api/v1/compliance/users/%00x/export/")
    assert bad.status_code == 400


def test_staff_need_the_compliance_permission(data, client, tenant):
    staff = get_user_model().objects.create_user("staff", is_staff=True)
    client.force_login(staff)
    assert client.get(EXPORT, {"tenant": "acme"}).status_code == 403
    staff.groups.add(compliance_group())
    client.force_login(get_user_model().objects.get(pk=staff.pk))
    assert json.loads(streamed(client.get(EXPORT, {"tenant": "acme"})))["subjects"][0]["user_id"] == "alice"


def test_api_writes_recreating_an_erased_subject_get_409_subject_erased(data, tenant):
    erasure.erasure_execute(request=verified_request(subjects=[(tenant, "alice")], scope="everything"))
    api = client_for(tenant, "agent")
    for method, path, body in (
        ("post", "/api/v1/sessions/", {"user_id": "alice", "session_id": "again"}),
        ("post", "/api/v1/users/alice/sessions/default/rounds/", {"state": {"x": 1}}),
        ("put", "/api/v1/users/alice/data/email/", {"value": "again@example.com"}),
    ):
        response = getattr(api, method)(path, body, format="json")
        assert response.status_code == 409, (path, response.content)
        error = response.json()["error"]
        assert error["code"] == "subject_erased" and "erased" in error["message"]
    assert api.post("/api/v1/sessions/", {"user_id": "bob", "session_id": "new"}, format="json").status_code == 201


def test_the_export_is_streamed_and_reads_large_rows_a_few_at_a_time(tenant, settings):
    """Messages of 5 MiB made a 157 MB export that the worker built whole: the answer is now
    written as it is read, in batches of about ``PAGE_MAX_BYTES``, and holds the same document."""
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=6)
    whole = json.loads(streamed(client_for(tenant, "compliance").get(EXPORT)))
    settings.PAGE_MAX_BYTES = 1  # every row alone
    with CaptureQueriesContext(connection) as queries:
        response = client_for(tenant, "compliance").get(EXPORT)
        assert response.streaming and not response.has_header("Content-Length")
        batched = json.loads(streamed(response))
    assert batched["subjects"] == whole["subjects"]
    assert sum('"sessions_app_message"."id" IN (' in q["sql"] for q in queries.captured_queries) == 12  # one a message


def test_the_export_comes_in_the_portable_format_too(data, tenant, other_tenant):
    response = client_for(tenant, "compliance").get(EXPORT + "portable/")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/jsonl")
    header, *records = (json.loads(line) for line in streamed(response).decode().splitlines())
    assert header["format"] == "agentstate-portable" and (header["tenant"], header["user_id"]) == ("acme", "alice")
    sessions = [r for r in records if r["record"] == "session"]
    assert [r["user_id"] for r in sessions] == ["alice"]
    assert sum(r["record"] == "message" for r in records) == 3
    assert sum(r["record"] == "user_datum" for r in records) == 2
    assert client_for(tenant, "agent").get(EXPORT + "portable/").status_code == 403
