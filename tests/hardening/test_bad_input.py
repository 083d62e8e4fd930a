"""Bad input is a clear 400 and stores nothing, on SQLite and on PostgreSQL (which rejects NUL
characters and lone surrogates in text and jsonb with errors that would otherwise be 500s)."""
import pytest

from agentstate.exceptions import InvalidInput
from sessions_app import services
from sessions_app.models import Round, Session

LONE_SURROGATES = ["\ud800", "ok\udfff", "\udc80tail"]


@pytest.mark.django_db
@pytest.mark.parametrize("text", LONE_SURROGATES)
def test_lone_surrogates_in_ids_are_invalid_input_and_nothing_is_stored(tenant, text):
    with pytest.raises(InvalidInput) as raised:
        services.session_create(tenant=tenant, user_id=f"user{text}", session_id="s1")
    assert "user_id" in raised.value.fields
    assert not Session.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("state", [{"note": text} for text in LONE_SURROGATES] + [{text: 1} for text in LONE_SURROGATES])
def test_lone_surrogates_in_state_values_and_keys_are_invalid_input(tenant, state):
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"kept": True})
    with pytest.raises(InvalidInput) as raised:
        services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"deep": [state]})
    assert "state" in raised.value.fields
    assert [r.state for r in Round.objects.all()] == [{"kept": True}]
