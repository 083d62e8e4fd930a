"""ADK's own server on agentstate, as a new ADK user starts it: `agentstate adk-services` once, then
`adk api_server --session_service_uri agentstate://HOST:PORT` with the key in AGENTSTATE_API_KEY
and nothing else; one session driven through ADK's HTTP API and found stored in agentstate."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agentstate.integrations.adk import SERVICE_CLASSES, AgentStateSessionService
from agentstate_site import cli
from tests.client.keys import api_key_new

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "adk_agent.py"

# The example's agent (a tool and a scripted model: no network) as an agents directory's app.
AGENT_PY = f"""import importlib.util

spec = importlib.util.spec_from_file_location("adk_agent_example", {str(EXAMPLE)!r})
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
root_agent = example.build_agent()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _agents_dir(tmp_path: Path) -> Path:
    agents = tmp_path / "agents"
    (agents / "weather_app").mkdir(parents=True)
    (agents / "weather_app" / "__init__.py").write_text("from . import agent\n")
    (agents / "weather_app" / "agent.py").write_text(AGENT_PY)
    return agents


def _adk_services(monkeypatch, agents: Path, capsys) -> str:
    monkeypatch.setattr(sys, "argv", ["agentstate", "adk-services", str(agents)])
    cli.main()
    return capsys.readouterr().out


def _start_api_server(agents: Path, agentstate_url: str, key: str, port: int, log: Path) -> subprocess.Popen:
    uri = agentstate_url.replace("http://", "agentstate://")
    # The memory and artifact services are asked for by URI too.
    other_uris = ["--memory_service_uri", uri, "--artifact_service_uri", uri]
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("AGENTSTATE_", "DJANGO_"))},
        "AGENTSTATE_API_KEY": key,
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "google.adk.cli", "api_server", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as output:  # a file: a pipe nobody reads would fill up and stall the server
        return subprocess.Popen(
            [*command, "--session_service_uri", uri, *other_uris, str(agents)],
            cwd=agents.parent,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def _wait_until_up(server: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + 60  # a ceiling: it starts in 5-10 s, longer on a loaded machine
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"adk api_server exited {server.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/list-apps", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    pytest.fail(f"adk api_server did not answer within 60 s:\n{log.read_text()}")


@pytest.mark.servers
def test_adk_api_server_keeps_its_sessions_in_agentstate_from_the_uri_alone(
    live_server, transactional_db, tenant, tmp_path, monkeypatch, capsys
):
    key = api_key_new(tenant)
    agents = _agents_dir(tmp_path)
    assert "Wrote" in _adk_services(monkeypatch, agents, capsys)
    port = _free_port()
    log = tmp_path / "adk.log"
    server = _start_api_server(agents, live_server.url, key, port, log)
    try:
        adk = f"http://127.0.0.1:{port}"
        _wait_until_up(server, adk, log)
        created = httpx.post(
            f"{adk}/apps/weather_app/users/ada/sessions", json={"session_id": "trip", "state": {"user:plan": "pro"}}
        )
        assert created.status_code == 200, created.text
        message = {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}
        run = httpx.post(
            f"{adk}/run",
            json={"app_name": "weather_app", "user_id": "ada", "session_id": "trip", "new_message": message},
            timeout=30,
        )
        assert run.status_code == 200, run.text
        assert run.json()[-1]["content"]["parts"][0]["text"] == "It is sunny in Paris, 21 °C."
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "DatabaseSessionService" not in log.read_text(), log.read_text()
    with httpx.Client(base_url=live_server.url, headers={"X-Api-Key": key}) as http:
        stored = http.get("/api/v1/adk/apps/weather_app/users/ada/sessions/trip/").json()
        assert [event["author"] for event in stored["events"]] == ["user", *["weather_agent"] * 3]
        assert stored["state"] == {"lookups": 1, "user:last_city": "Paris", "user:plan": "pro"}


def test_adk_services_leaves_an_agents_directorys_own_services_py_alone(tmp_path, monkeypatch, capsys):
    agents = _agents_dir(tmp_path)
    assert "Wrote" in _adk_services(monkeypatch, agents, capsys)
    assert "already registers" in _adk_services(monkeypatch, agents, capsys)  # run twice: no harm
    own = "from my_company.sessions import register_mine\n"
    (agents / "services.py").write_text(own)
    with pytest.raises(SystemExit, match="exists and is not ours: add these two lines"):
        _adk_services(monkeypatch, agents, capsys)
    assert (agents / "services.py").read_text() == own


def test_the_written_services_py_registers_every_agentstate_uri(tmp_path, monkeypatch, capsys):
    from google.adk.cli import service_registry

    monkeypatch.setattr(service_registry, "_service_registry_instance", None)  # as a fresh `adk` process has it
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "services", raising=False)
    agents = _agents_dir(tmp_path)
    _adk_services(monkeypatch, agents, capsys)
    service_registry.load_services_module(str(agents))
    registry = service_registry.get_service_registry()
    monkeypatch.setenv("AGENTSTATE_API_KEY", "key")
    for scheme in ("agentstate", "agentstates"):
        uri = f"{scheme}://127.0.0.1:8000"
        assert isinstance(registry.create_session_service(uri, agents_dir=str(agents)), AgentStateSessionService)
        for create, kind in (
            (registry.create_memory_service, "memory"),
            (registry.create_artifact_service, "artifact"),
        ):
            assert type(create(uri, agents_dir=str(agents))).__name__ == SERVICE_CLASSES[kind].rsplit(".", 1)[1]
