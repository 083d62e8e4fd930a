"""Another tenant's key reaches nothing of ours: every endpoint and method answers 404 or an empty
list, writes that create land in the caller's own tenant, and our rows stay exactly as they were."""

import pytest

from backends.adk.people.artifacts import urls as artifact_urls
from sessions_app.api import urls as session_urls
from tests.api.cross_tenant import CASES, EMPTY, NOT_FOUND, NOTHING, snapshot
from tests.api.routes import api_routes
from tests.quick_loop import first_of_each_kind
from userdata_app.api import urls as userdata_urls
from userdata_app.memory import urls as memory_urls

pytestmark = pytest.mark.django_db


def every_case(cases: list, kind) -> list:
    return first_of_each_kind(cases, [f"{c[1]} {c[0]}" for c in cases], kind)


def test_the_table_covers_every_endpoint_and_method():
    routes = set()
    for module in (session_urls, userdata_urls, memory_urls, artifact_urls):
        for _, pattern in api_routes(module.urlpatterns):
            if pattern.name.startswith("langgraph-"):  # tests/integrations/test_langgraph_tenancy.py
                continue
            view = pattern.callback.view_class
            routes |= {
                (pattern.name, m) for m in view.http_method_names if m not in ("head", "options") and hasattr(view, m)
            }
    assert routes == {(name, method) for name, method, *_ in CASES}


# The quick loop: each method with each kind of answer (404, an empty page, 204, created apart).
@pytest.mark.parametrize("name, method, path, body, expected", every_case(CASES, lambda c: (c[1], c[4])))
def test_other_tenant_reaches_nothing(victim, tenant, other_tenant, other_api, name, method, path, body, expected):
    before = snapshot(tenant)
    response = (
        getattr(other_api, method)(path, body, format="json") if body is not None else getattr(other_api, method)(path)
    )
    if expected == NOT_FOUND:
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
    elif expected == EMPTY:  # a page of results, or of names or versions
        assert response.status_code == 200 and not any(response.json().values()), response.content
    elif expected == NOTHING:
        assert response.status_code == 204
    else:  # created in the caller's own tenant, beside ours
        assert response.status_code in (200, 201), response.content
        assert "mine" not in str(response.json())
    assert snapshot(tenant) == before


@pytest.mark.parametrize(
    "credentials", [{}, {"HTTP_X_API_KEY": "abcdefgh.0123456789abcdef0123456789abcdef"}], ids=["no key", "bad key"]
)
def test_every_endpoint_refuses_a_missing_or_bad_key(victim, tenant, credentials):
    """Every endpoint and method of the table against one victim: a refused request writes
    nothing, so the cases cannot disturb each other (one victim, not one per case); each case
    still answers 401 and leaves our rows as they were, and a failure names every case that did not."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(**credentials)
    before = snapshot(tenant)
    wrong = []
    for name, method, path, body, _ in CASES:
        call = getattr(client, method)
        response = call(path, body, format="json") if body is not None else call(path)
        refused = (
            response.status_code == 401
            and response.get("Content-Type") == "application/json"
            and response.json()["error"]["code"] == "not_authenticated"
            and response.get("WWW-Authenticate") == "Api-Key"
        )
        if not refused:
            wrong.append(f"{method} {name}: {response.status_code} {response.content[:200]!r}")
        elif snapshot(tenant) != before:
            wrong.append(f"{method} {name}: answered 401 but changed our rows")
    assert not wrong, wrong


PATH_CASES = [case for case in CASES if "/users/u1/" in case[2]]


@pytest.mark.parametrize("name, method, path, body, expected", every_case(PATH_CASES, lambda c: c[1]))  # each method
def test_every_endpoint_names_a_bad_identifier_in_its_path(victim, tenant, api, name, method, path, body, expected):
    before = snapshot(tenant)
    bad = path.replace("/users/u1/", "/users/u%01/")
    response = getattr(api, method)(bad, body, format="json") if body is not None else getattr(api, method)(bad)
    assert response.status_code == 400, response.content
    assert "user_id" in response.json()["error"]["fields"]
    assert snapshot(tenant) == before
