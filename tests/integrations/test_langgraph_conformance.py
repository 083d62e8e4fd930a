"""LangGraph's own conformance suite (langgraph-checkpoint-conformance) against AgentStateSaver on
a live server: every capability, base and extended, detected and passed, none skipped. The suite
drives the async methods only; tests/integrations/test_langgraph_saver.py covers the sync ones."""

import asyncio

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from agentstate.integrations.langgraph import AgentStateSaver

pytestmark = pytest.mark.conformance


@pytest.fixture
def langgraph_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-conformance", tenant=tenant, scope="agent")[1]


def test_every_capability_passes(live_server, langgraph_key):
    @checkpointer_test(name="AgentStateSaver")
    async def agentstate_saver():
        saver = AgentStateSaver(live_server.url, langgraph_key, default_user_id="conformance")
        yield saver
        await saver.aclose()

    report = asyncio.run(validate(agentstate_saver))

    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}
    failures = {name: r.failures for name, r in report.results.items() if r.passed is not True}
    assert not failures, failures
    for name, result in report.results.items():
        assert result.detected, name
        assert result.tests_skipped == 0, name
        assert result.tests_passed > 0 and result.tests_failed == 0, name
    assert report.conformance_level() == "FULL"
