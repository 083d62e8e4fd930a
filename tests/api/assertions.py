"""Assertions the API and hardening tests share."""


def assert_error(response, status: int, code: str, field: str | None = None):
    """The one error shape, with the expected status and code (and the named field)."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    if field is not None:
        assert field in error["fields"], error
    return error


def streamed(response) -> bytes:
    """The body of a streamed answer (the subject export), read whole."""
    return b"".join(response.streaming_content)
