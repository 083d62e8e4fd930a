"""The API docs group endpoints by resource (Swagger UI shows one section per tag)."""

import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_every_operation_has_one_resource_tag(client):
    schema = client.get(reverse("schema"), HTTP_ACCEPT="application/json").json()
    tags = {
        path: {method: operation["tags"] for method, operation in operations.items()}
        for path, operations in schema["paths"].items()
    }
    assert all(len(t) == 1 for methods in tags.values() for t in methods.values())
    assert tags["/api/v1/users/{user_id}/sessions/{session_id}/messages/"]["get"] == ["messages"]
    assert tags["/api/v1/users/{user_id}/sessions/{session_id}/rounds/latest/"]["get"] == ["rounds"]
    assert tags["/api/v1/users/{user_id}/sessions/{session_id}/end/"]["post"] == ["sessions"]
    assert tags["/api/v1/users/{user_id}/data/{key}/"]["get"] == ["user data"]
    assert tags["/api/v1/compliance/users/{user_id}/export/"]["get"] == ["compliance"]
    assert tags["/healthz/"]["get"] == ["health"]
    assert {t[0] for methods in tags.values() for t in methods.values()} >= {
        "sessions",
        "messages",
        "rounds",
        "checkpoints",
        "transitions",
        "working state",
        "user data",
        "compliance",
        "health",
    }
