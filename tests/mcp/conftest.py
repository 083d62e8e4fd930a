"""Two people's memories and sessions in one tenant, stored through the live server, for the MCP
server's tests: whatever the tools reach of the other person's is a failure."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentstate.client import AgentStateClient
from agentstate.integrations.store_batch import StoreBatch, user_namespace
from agentstate.tenancy.services import api_key_create
from tests.client.keys import api_key_new

PERSON, OTHER = "ana.lima@example.com", "bo"


@dataclass(frozen=True)
class Stored:
    url: str
    tenant_key: str
    person_keys: dict[str, str]  # a key scoped to each person (create_api_key --user)


def _store(url: str, key: str, user_id: str, words: str) -> None:
    with StoreBatch(url, key) as store:
        namespace = list(user_namespace(user_id, "notes"))
        store.batch_raw([{"op": "put", "namespace": namespace, "key": "diet", "value": {"text": words}}])
    with AgentStateClient(url, key) as client:
        client.session_create(user_id, "chat-1", agent_id="helper")
        client.message_append(
            user_id,
            "chat-1",
            [{"role": "user", "content": f"{user_id} says {n}"} for n in range(1, 6)],
        )


@pytest.fixture
def stored(live_server, transactional_db, tenant) -> Stored:
    """Ana's memory (vegetarian) and chat-1; Bo's memory (vegan, a different word) and chat-1."""
    key = api_key_new(tenant)
    _store(live_server.url, key, PERSON, "ana is vegetarian and likes figs")
    _store(live_server.url, key, OTHER, "bo is vegan and likes figs")
    people = {user_id: api_key_create(tenant=tenant, name="mcp", user_id=user_id)[1] for user_id in (PERSON, OTHER)}
    return Stored(url=live_server.url, tenant_key=key, person_keys=people)
