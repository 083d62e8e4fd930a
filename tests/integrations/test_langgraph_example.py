"""examples/langgraph_graph.py runs against a live server: interrupt, resume, history, fork."""

import importlib.util
import threading
from pathlib import Path

import httpx
import pytest
from django.db import connection

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_graph.py"


@pytest.fixture
def langgraph_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-example", tenant=tenant, scope="agent")[1]


class OneAtATime(httpx.HTTPTransport):
    """LangGraph's sync runner saves writes from worker threads while the next step runs. Django's
    live server shares its one in-memory SQLite connection between request threads, so on SQLite
    the test sends one request at a time (a file database waits for its lock instead)."""

    _lock = threading.Lock()

    def handle_request(self, request):
        with self._lock:
            return super().handle_request(request)


def test_example_runs_resumes_and_time_travels(live_server, langgraph_key):
    spec = importlib.util.spec_from_file_location("langgraph_graph", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    transport = OneAtATime() if connection.vendor == "sqlite" else None
    result = example.main(live_server.url, langgraph_key, transport=transport)

    assert result["question"]["tool_calls"][0]["args"] == {"city": "Paris"}
    assert result["answer"] == "The weather: sunny, 21 C."
    assert result["history_steps"][-1] == -1 and result["history_steps"] == sorted(
        result["history_steps"], reverse=True
    )
    assert result["fork_answer"] == "The weather: cloudy, 18 C."
    # The fork is the thread's newest branch now; the Paris run stays in its history.
    assert result["latest_answer"] == "The weather: cloudy, 18 C."

    from backends.langgraph.process.models import LangGraphThread

    thread = LangGraphThread.objects.get(thread_id="weather-demo")
    assert thread.user_id == "alice"
