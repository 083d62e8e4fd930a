"""User-attributed data: (tenant, user_id, key) -> JSON value; set (upsert), get, list, delete."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agentstate.exceptions import InvalidInput, NotFound
from sessions_app import selectors as session_selectors
from sessions_app import services as session_services
from userdata_app.models import UserDatum
from userdata_app.selectors import user_datum_get, user_datum_list
from userdata_app.services import user_datum_delete, user_datum_set

pytestmark = pytest.mark.django_db


class NotJson:
    """A value JSON cannot encode, named the same in every process (xdist's workers must collect
    the same test ids; an object()'s id would carry its address)."""

    def __repr__(self) -> str:
        return "NotJson()"


def _set(tenant, key, value, user_id="u1"):
    return user_datum_set(tenant=tenant, user_id=user_id, key=key, value=value)


@pytest.mark.parametrize(
    "value", ["a@example.com", 42, 1.5, True, None, [1, "two"], {"lang": "fr", "tz": ["Europe/Paris"]}], ids=str
)
def test_set_then_get_returns_the_json_value(tenant, value):
    _set(tenant, "k", value)
    assert user_datum_get(tenant=tenant, user_id="u1", key="k").value == value


def test_set_again_updates_the_value_and_keeps_created_at(tenant):
    first = _set(tenant, "email", "old@example.com")
    long_ago = timezone.now() - timedelta(days=30)
    UserDatum.objects.filter(pk=first.pk).update(created_at=long_ago, updated_at=long_ago)

    second = _set(tenant, "email", "new@example.com")

    stored = UserDatum.objects.get()
    assert stored.pk == first.pk == second.pk
    assert (stored.value, stored.created_at) == ("new@example.com", long_ago)
    assert stored.updated_at > long_ago
    assert (second.value, second.created_at) == ("new@example.com", long_ago)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"key": ""},
        {"key": "a/b"},
        {"key": "k" * 129},
        {"key": "a\x00"},
        {"key": "a\tb"},
        {"key": 5},
        {"user_id": ""},
        {"user_id": "u/1"},
        {"user_id": "u" * 129},
        {"user_id": None},
        {"value": "a\x00b"},
        {"value": {"k\x00": 1}},
        {"value": float("inf")},
        {"value": NotJson()},
    ],
    ids=str,
)
def test_bad_input_is_refused_and_nothing_is_stored(tenant, kwargs):
    _set(tenant, "kept", "v")
    with pytest.raises(InvalidInput):
        user_datum_set(tenant=tenant, **{"user_id": "u1", "key": "kept", "value": "changed", **kwargs})
    assert list(UserDatum.objects.values_list("key", "value")) == [("kept", "v")]


def test_list_gives_one_users_keys_in_key_order(tenant):
    for key in ("tz", "email", "name"):
        _set(tenant, key, key.upper())
    _set(tenant, "email", "someone else", user_id="u2")
    assert [(d.key, d.value) for d in user_datum_list(tenant=tenant, user_id="u1")] == [
        ("email", "EMAIL"),
        ("name", "NAME"),
        ("tz", "TZ"),
    ]
    assert list(user_datum_list(tenant=tenant, user_id="nobody")) == []


def test_delete_removes_one_key_only(tenant):
    _set(tenant, "email", "e")
    _set(tenant, "name", "n")
    _set(tenant, "email", "other", user_id="u2")
    user_datum_delete(tenant=tenant, user_id="u1", key="email")
    with pytest.raises(NotFound):
        user_datum_get(tenant=tenant, user_id="u1", key="email")
    assert [d.key for d in user_datum_list(tenant=tenant, user_id="u1")] == ["name"]
    assert user_datum_get(tenant=tenant, user_id="u2", key="email").value == "other"


def test_get_or_delete_of_a_missing_key_is_not_found(tenant):
    with pytest.raises(NotFound):
        user_datum_get(tenant=tenant, user_id="u1", key="missing")
    with pytest.raises(NotFound):
        user_datum_delete(tenant=tenant, user_id="u1", key="missing")


def test_another_tenants_data_is_invisible(tenant, other_tenant):
    _set(tenant, "email", "acme@example.com")
    with pytest.raises(NotFound):
        user_datum_get(tenant=other_tenant, user_id="u1", key="email")
    assert list(user_datum_list(tenant=other_tenant, user_id="u1")) == []
    with pytest.raises(NotFound):
        user_datum_delete(tenant=other_tenant, user_id="u1", key="email")
    _set(other_tenant, "email", "globex@example.com")
    assert user_datum_get(tenant=tenant, user_id="u1", key="email").value == "acme@example.com"
    assert UserDatum.objects.count() == 2


def test_deleting_user_data_leaves_process_state(tenant):
    session = session_services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    session_services.checkpoint_create(session=session, label="cp", state={"task": "t"})
    _set(tenant, "email", "e")
    user_datum_delete(tenant=tenant, user_id="u1", key="email")
    assert session_selectors.checkpoint_latest(session=session, label="cp").state == {"task": "t"}
