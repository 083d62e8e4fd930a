"""AgentStateArtifactService against a live server: through ADK's own Runner (a tool saves and
loads artifacts across a restart of the services), differentially against ADK's
InMemoryArtifactService on random operation sequences, and with the bytes in an S3 bucket (a moto
server this test starts). Runs on SQLite, and on PostgreSQL when DATABASE_URL names one."""

from __future__ import annotations

import random

import pytest
import pytest_asyncio
from google.adk.agents import LlmAgent
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from agentstate.client.errors import ValidationError
from agentstate.integrations.adk import AgentStateSessionService
from agentstate.integrations.adk_artifacts import AgentStateArtifactService
from tests.client.keys import api_key_new

pytestmark = pytest.mark.asyncio
APP = "notes_app"


@pytest.fixture
def artifacts_dir(settings, tmp_path):
    """The artifacts' storage: a directory of this test's own."""
    location = tmp_path / "artifacts"
    backend = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(location)}}
    settings.STORAGES = {**settings.STORAGES, "artifacts": backend}
    return location


@pytest.fixture
def adk_key(transactional_db, tenant) -> str:
    return api_key_new(tenant)


@pytest_asyncio.fixture
async def artifacts(live_server, adk_key, artifacts_dir):
    service = AgentStateArtifactService(live_server.url, adk_key)
    yield service
    await service.close()  # the live server's threads hold a database connection per open connection


# --- Through ADK's Runner ---------------------------------------------------------------------------


async def keep_note(text: str, tool_context: ToolContext) -> dict:
    """Saves the note as a session artifact and the user's photo as a user: artifact."""
    version = await tool_context.save_artifact("note.txt", types.Part(text=text), custom_metadata={"by": "tool"})
    photo = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG" + text.encode()))
    await tool_context.save_artifact("user:photo.png", photo)
    return {"version": version}


async def read_note(tool_context: ToolContext) -> dict:
    """Reads the note back, and lists what the session holds."""
    note = await tool_context.load_artifact("note.txt")
    photo = await tool_context.load_artifact("user:photo.png")
    return {
        "note": note.text if note else None,
        "photo": [photo.inline_data.mime_type, photo.inline_data.data.decode(errors="replace")] if photo else None,
        "names": await tool_context.list_artifacts(),
    }


class NoteModel(BaseLlm):
    """A scripted model: "keep: <text>" calls keep_note, "read" calls read_note, and a tool's result
    is answered as its JSON."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1].parts[0]
        if last.function_response is not None:
            text = repr(last.function_response.response)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        if last.text.startswith("keep: "):
            call = types.FunctionCall(name="keep_note", args={"text": last.text.removeprefix("keep: ")})
        else:
            call = types.FunctionCall(name="read_note", args={})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def note_runner(base_url: str, key: str) -> tuple[Runner, AgentStateSessionService, AgentStateArtifactService]:
    sessions = AgentStateSessionService(base_url, key)
    artifacts = AgentStateArtifactService(base_url, key)
    agent = LlmAgent(name="notes", model=NoteModel(), instruction="Keep notes.", tools=[keep_note, read_note])
    return Runner(app_name=APP, agent=agent, session_service=sessions, artifact_service=artifacts), sessions, artifacts


async def turn(runner: Runner, text: str, *, session_id: str) -> str:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    answers = [
        event.content.parts[0].text
        async for event in runner.run_async(user_id="ann", session_id=session_id, new_message=message)
        if event.is_final_response()
    ]
    return answers[-1]


async def test_a_tool_saves_and_loads_artifacts_across_a_restart(live_server, adk_key, artifacts_dir):
    runner, sessions, artifacts = note_runner(live_server.url, adk_key)
    await sessions.create_session(app_name=APP, user_id="ann", session_id="trip")
    assert await turn(runner, "keep: passport 1234", session_id="trip") == "{'version': 0}"
    assert await turn(runner, "keep: passport 5678", session_id="trip") == "{'version': 1}"
    await sessions.close()
    await artifacts.close()

    runner, sessions, artifacts = note_runner(live_server.url, adk_key)  # a new process, as it were
    answer = await turn(runner, "read", session_id="trip")
    photo = ["image/png", "\ufffdPNGpassport 5678"]
    assert answer == repr({"note": "passport 5678", "photo": photo, "names": ["note.txt", "user:photo.png"]})
    assert await artifacts.list_versions(app_name=APP, user_id="ann", session_id="trip", filename="note.txt") == [0, 1]
    first = await artifacts.load_artifact(
        app_name=APP, user_id="ann", session_id="trip", filename="note.txt", version=0
    )
    assert first.text == "passport 1234"
    version = await artifacts.get_artifact_version(app_name=APP, user_id="ann", session_id="trip", filename="note.txt")
    assert (version.version, version.mime_type, version.custom_metadata) == (1, "text/plain", {"by": "tool"})
    # The user's photo is theirs in every session; the note stays in its own.
    await sessions.create_session(app_name=APP, user_id="ann", session_id="other")
    assert await artifacts.list_artifact_keys(app_name=APP, user_id="ann", session_id="other") == ["user:photo.png"]
    await sessions.close()
    await artifacts.close()
    assert len([path for path in artifacts_dir.rglob("*") if path.is_file()]) == 4  # two notes, two photos


async def test_a_mime_type_a_header_cannot_carry_is_refused_naming_it(artifacts):
    """Through the API's one check: stored, every download of it would fail."""
    part = types.Part(inline_data=types.Blob(mime_type="image/png\r\nX-Injected: 1", data=b"\x89PNG"))
    with pytest.raises(ValidationError) as refused:
        await artifacts.save_artifact(app_name=APP, user_id="ann", filename="user:photo.png", artifact=part)
    assert list(refused.value.fields) == ["artifact.inline_data.mime_type"]
    assert await artifacts.list_artifact_keys(app_name=APP, user_id="ann") == []


# --- Differentially against ADK's InMemoryArtifactService -------------------------------------------

NAMES = ["a.txt", "dir/b.bin", "user:c.png", "user:d f.json", "é.txt"]
SESSIONS = ["s1", "s2", None]


def random_part(rng: random.Random, known: list[tuple[str, str | None, int]], user_id: str) -> types.Part:
    kind = rng.choice(["text", "inline", "inline", "file", "file", "tombstone", "reference", "reference"])
    if kind == "text":
        return types.Part(text=rng.choice(["", "hello", "ünïcode ✓", "line\nbreak"]))
    if kind == "inline":
        data = rng.randbytes(rng.randint(0, 64))
        return types.Part(
            inline_data=types.Blob(mime_type=rng.choice(["image/png", "application/pdf", None]), data=data)
        )
    if kind == "file":
        return types.Part(file_data=types.FileData(file_uri="gs://bucket/report.pdf", mime_type="application/pdf"))
    if kind == "tombstone" or not known:
        return types.Part(inline_data=types.Blob(mime_type="application/octet-stream", data=b""))
    filename, session_id, version = rng.choice(known)
    from google.adk.artifacts import artifact_util

    uri = artifact_util.get_artifact_uri(
        APP, user_id, filename, version, None if filename.startswith("user:") else session_id
    )
    return types.Part(file_data=types.FileData(file_uri=uri))


async def outcome(call):
    """What a call gave, comparable across the two services: its value or its error's type."""
    try:
        result = await call
    except InputValidationError as exc:
        return ("refused", type(exc).__name__)
    if isinstance(result, list) and result and hasattr(result[0], "canonical_uri"):
        return [(v.version, v.custom_metadata, v.mime_type) for v in result]
    if hasattr(result, "canonical_uri"):
        return (result.version, result.custom_metadata, result.mime_type)
    return result


async def test_random_operations_answer_as_adks_in_memory_service(artifacts):
    await random_operations(artifacts, rng=random.Random(0), user_id="ann0", loaded=set())  # noqa: S311 (a reproducible sequence)


@pytest.mark.slow
@pytest.mark.crosscheck  # more sequences of the same operations
async def test_more_random_operations_answer_as_adks_in_memory_service(artifacts):
    loaded: set[str] = set()  # the kinds of part loads gave back: the sequences reached each
    for seed in range(1, 4):
        user_id = f"ann{seed}"
        await random_operations(artifacts, rng=random.Random(seed), user_id=user_id, loaded=loaded)  # noqa: S311 (a reproducible sequence)


async def random_operations(artifacts, *, rng: random.Random, user_id: str, loaded: set[str]) -> None:
    theirs = InMemoryArtifactService()
    known: list[tuple[str, str | None, int]] = []
    for step in range(80):
        filename, session_id = rng.choice(NAMES), rng.choice(SESSIONS)
        scope = {"app_name": APP, "user_id": user_id, "filename": filename, "session_id": session_id}
        operation = rng.choice(
            ["save", "save", "save", "load", "load", "keys", "delete", "versions", "metadata", "one"]
        )
        if operation == "save":
            part = random_part(rng, known, user_id)
            metadata = rng.choice([None, {"step": step, "tags": ["x", "y"]}])
            calls = [s.save_artifact(**scope, artifact=part, custom_metadata=metadata) for s in (artifacts, theirs)]
        elif operation == "load":
            version = rng.choice([None, 0, 1, 5])
            calls = [s.load_artifact(**scope, version=version) for s in (artifacts, theirs)]
        elif operation == "keys":
            calls = [
                s.list_artifact_keys(app_name=APP, user_id=user_id, session_id=session_id) for s in (artifacts, theirs)
            ]
        elif operation == "delete":
            calls = [s.delete_artifact(**scope) for s in (artifacts, theirs)]
        elif operation == "versions":
            calls = [s.list_versions(**scope) for s in (artifacts, theirs)]
        elif operation == "metadata":
            calls = [s.list_artifact_versions(**scope) for s in (artifacts, theirs)]
        else:
            version = rng.choice([None, 0, 2])
            calls = [s.get_artifact_version(**scope, version=version) for s in (artifacts, theirs)]
        ours, expected = [await outcome(call) for call in calls]
        assert ours == expected, (step, operation, scope)
        if operation == "load" and isinstance(ours, types.Part):
            loaded.add(next(name for name in ("text", "inline_data", "file_data") if getattr(ours, name) is not None))
        if operation == "save" and isinstance(ours, int):
            known.append((filename, session_id, ours))
        if operation == "delete":
            known = [k for k in known if k[0] != filename or (not filename.startswith("user:") and k[1] != session_id)]


async def test_adks_registry_builds_it_from_an_agentstate_uri_with_the_key_from_the_environment(monkeypatch):
    from google.adk.cli.service_registry import get_service_registry

    monkeypatch.setenv("AGENTSTATE_API_KEY", "key-from-env")
    service = get_service_registry().create_artifact_service("agentstates://state.example:8443/prefix", agents_dir=".")
    assert isinstance(service, AgentStateArtifactService)
    assert service._options["base_url"] == "https://state.example:8443/prefix"
    assert service._options["headers"]["X-Api-Key"] == "key-from-env"
