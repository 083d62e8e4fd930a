"""The API tests' keys and clients (tests/api/conftest.py), and a tenant full of data."""

import pytest

from sessions_app import services
from tests.api.conftest import _fresh_key_cache, agent_key, anon, api, other_api  # noqa: F401
from userdata_app import services as userdata_services

S = "/api/v1/users/u1/sessions/s1/"


@pytest.fixture
def full_session(tenant):
    """u1/s1 with one of everything, so a write that slips through shows in stored_everything()."""
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1", metadata={"kept": 1})
    services.message_append(session=session, messages=[{"content": "hello", "client_id": "m1"}])
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"kept": 1}, round_id=1)
    services.working_state_replace(session=session, data={"kept": 1})
    services.checkpoint_create(session=session, label="cp")
    services.transition_record(session=session, to_agent="b")
    userdata_services.user_datum_set(tenant=tenant, user_id="u1", key="email", value="a@example.com")
    return session
