"""The OpenAPI schema documents every endpoint with its shapes and errors; the Swagger page loads
only local files; /healthz answers without a key."""

import re

import pytest
from django.core.cache import cache
from django.test import override_settings

from sessions_app.api import urls as session_urls
from tests.api.routes import api_routes
from userdata_app.api import urls as userdata_urls

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def test_every_api_route_and_method_is_in_the_schema(schema):
    from django.contrib.admindocs.views import simplify_regex

    for module in (session_urls, userdata_urls):
        for regex, pattern in api_routes(module.urlpatterns):
            path = "/api/v1/" + simplify_regex(regex).lstrip("/")
            path = re.sub(r"<(\w+)>", r"{\1}", path)
            view = pattern.callback.view_class
            methods = {m for m in view.http_method_names if m not in ("head", "options") and hasattr(view, m)}
            assert path in schema["paths"], path
            assert methods == set(schema["paths"][path]), path


# A download answers the bytes as they were saved, in their own content type (an artifact's).
DOWNLOAD = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
# The portable format's export: JSON Lines (docs/PORTABLE_FORMAT.md), one JSON object per line.
JSON_LINES = {"application/jsonl": {"schema": {"type": "string"}}}


def test_every_operation_has_shapes_and_the_error_shape(schema):
    error_ref = "#/components/schemas/Error"
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            success = [code for code in responses if code.startswith("2")]
            assert success, (method, path)
            for code in success:
                if code != "204" and responses[code]["content"] not in (DOWNLOAD, JSON_LINES):
                    assert "application/json" in responses[code]["content"], (method, path, code)
            if method in ("post", "put", "patch") and not path.endswith("/end/"):
                assert "requestBody" in operation, (method, path)
            if path.startswith("/api/v1/"):
                for code in ("400", "401", "403", "429"):
                    assert responses[code]["content"]["application/json"]["schema"]["$ref"] == error_ref, (
                        method,
                        path,
                        code,
                    )
                if "{" in path:
                    assert "404" in responses
                assert operation["security"], (method, path)


@pytest.mark.needs_backends
def test_the_docs_speak_to_the_apis_users(schema):
    """Every section has a description; no operation shows a base view's docstring (written for the
    project's developers); a 409 names the codes its endpoint answers; a JSON field that holds a
    list documents the list's items and an example."""
    described = {tag["name"] for tag in schema["tags"] if tag.get("description")}
    operations = [(path, op) for path, ops in schema["paths"].items() for op in ops.values()]
    assert {tag for _, op in operations for tag in op["tags"]} <= described
    for path, op in operations:
        assert not re.match(r"(Authenticates|A view under)", op.get("description", "")), path
    put = schema["paths"]["/api/v1/langgraph/checkpoints/"]["post"]["responses"]["409"]
    assert "thread_owned_by_another_user" in put["description"]
    writes = schema["components"]["schemas"]["WritesPutInputRequest"]["properties"]["writes"]
    assert writes["type"] == "array" and writes["example"][0]["channel"] == "messages"
    assert "OpenAI Agents" in next(tag["description"] for tag in schema["tags"] if tag["name"] == "messages")


def test_schema_endpoint_and_offline_docs_page(client):
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html) + re.findall(r"""url:\s*["']([^"']+)["']""", html)
    assert urls and all(url.startswith("/") for url in urls), urls
    assert "swagger-ui" in html
    from django.contrib.staticfiles import finders

    for url in urls:
        if url.startswith("/static/"):
            assert finders.find(url.removeprefix("/static/")), url  # shipped by drf-spectacular-sidecar
    assert not re.search(r"https?://(?!localhost|testserver)", html.replace("http://www.w3.org", ""))


def test_healthz_without_a_key(client):
    for path in ("/healthz", "/healthz/"):
        response = client.get(path)
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ok" and body["database"] == "ok" and body["cache"] == "ok"


def test_healthz_reports_a_failing_cache_as_503(client, monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(cache, "set", broken)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "error" and response.json()["cache"].startswith("error")


@override_settings(WORKING_STATE_BACKEND="redis", REDIS_URL="redis://127.0.0.1:1/0")
def test_healthz_checks_redis_working_state_when_configured(client):
    response = client.get("/healthz")
    assert response.status_code == 503 and response.json()["working_state"].startswith("error")


def test_livez_answers_without_touching_the_database_or_the_cache(client, monkeypatch, django_assert_num_queries):
    def broken(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(cache, "set", broken)
    monkeypatch.setattr(cache, "get", broken)
    for path in ("/livez", "/livez/"):
        with django_assert_num_queries(0):
            response = client.get(path)
        assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 503  # readiness still checks what liveness skips


def test_livez_refuses_writes(client):
    assert client.post("/livez").status_code == 405


def test_readyz_is_the_readiness_check(client):
    response = client.get("/readyz/")
    assert response.status_code == 200 and response.json()["database"] == "ok" and response.json()["cache"] == "ok"


def test_each_routes_403_says_what_a_person_key_meets_there(schema):
    """A client holding a key scoped to one person reads in the schema, route by route, whether it is
    refused outright (tenant-wide routes), refused only for another person, or served."""
    refused = schema["paths"]["/api/v1/compliance/users/{user_id}/export/"]["get"]["responses"]["403"]
    assert "`person_key`" in refused["description"] and "needs a tenant key" in refused["description"]
    own = schema["paths"]["/api/v1/users/{user_id}/sessions/{session_id}/rounds/"]["post"]["responses"]["403"]
    assert "`person_key`" in own["description"] and "path's `user_id` names another person" in own["description"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if path.startswith("/api/v1/"):
                assert "scoped to one person" in operation["responses"]["403"]["description"], (method, path)
