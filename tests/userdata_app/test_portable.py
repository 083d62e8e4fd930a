"""The portable format (issue 31, docs/PORTABLE_FORMAT.md): a tenant written by ``export_tenant``
and read back by ``import_tenant`` into an empty database gives the same bytes; the registry
travels and keeps erased people out; another receipt key ring is refused; a re-run imports nothing
twice; bad lines are named."""

import io
import json
import struct

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agentstate import portable, subject_data
from agentstate.tenancy.models import Tenant
from sessions_app.models import Message, Session
from tests.subjects import held
from tests.userdata_app.test_erasure_residue import markers_of, store_everything
from userdata_app.erasure.registry import grace_until, subject_hash
from userdata_app.models import ErasedSubject
from userdata_app.portable import receipt_key_ring_fingerprint

pytestmark = pytest.mark.django_db(transaction=True)

PEOPLE = ("alice", "bob\u2003")


def exported(slug: str = "acme") -> bytes:
    out = io.StringIO()
    call_command("export_tenant", tenant=slug, stdout=out)
    return out.getvalue().encode()


def imported(path, slug: str = "acme", **options) -> str:
    out = io.StringIO()
    call_command("import_tenant", str(path), tenant=slug, stdout=out, stderr=out, **options)
    return out.getvalue()


def register_erased(slug: str, user_id: str) -> None:
    key_id, digest = subject_hash(tenant_slug=slug, user_id=user_id)
    from django.utils import timezone

    now = timezone.now()
    ErasedSubject.objects.create(
        subject_hash=digest, key_id=key_id, scope="everything", erased_at=now, grace_until=grace_until(erased_at=now)
    )


def empty_database() -> None:
    """What a new deployment holds: no tenant, no registry."""
    Tenant.objects.all().delete()
    ErasedSubject.objects.all().delete()


@pytest.fixture
def filled(api, tenant):
    """Two people with data in every declared category, a fork, and a registry entry of someone else."""
    for person, user_id in enumerate(PEOPLE):
        store_everything(api, user_id, markers_of(person))
    response = api.post("/api/v1/users/alice/sessions/s1/fork/", {"new_session_id": "s1-fork"}, format="json")
    assert response.status_code == 201, response.content
    register_erased("acme", "carol")
    return tenant


def test_every_declared_category_has_a_portable_record(monkeypatch):
    assert {d.category for d in subject_data.declared() if d.portable} == set(subject_data.categories())
    declaration = subject_data.declaration_of(Session)
    monkeypatch.setitem(
        subject_data._declared, Session, subject_data.SubjectData(**{**declaration.__dict__, "portable": None})
    )
    assert subject_data.incomplete() == ["sessions_app.Session declares no portable record (docs/PORTABLE_FORMAT.md)."]


def test_a_tenant_round_trips_to_the_same_bytes(filled, tmp_path):
    before = {user_id: held(tenant=filled, user_id=user_id) for user_id in PEOPLE}
    assert all(before["alice"].values()), before  # every category has data to carry
    first = exported()
    lines = first.decode().splitlines()
    assert json.loads(lines[0]) == {
        "format": "agentstate-portable",
        "version": 1,
        "scope": "tenant",
        "tenant": "acme",
        "receipt_keys": receipt_key_ring_fingerprint(),
    }
    records = [json.loads(line) for line in lines[1:]]
    assert {r["category"] for r in records} == {*subject_data.categories(), "erased_subjects"}
    assert exported() == first  # deterministic
    path = tmp_path / "acme.jsonl"
    path.write_bytes(first)

    empty_database()
    summary = imported(path)
    assert "imported 9 sessions (0 held already" in summary, summary
    tenant = Tenant.objects.get(slug="acme")
    assert {user_id: held(tenant=tenant, user_id=user_id) for user_id in PEOPLE} == before
    assert exported() == first
    fork = Session.objects.get(tenant=tenant, session_id="s1-fork")
    assert fork.parent.session_id == "s1"

    again = imported(path)  # idempotent: a re-run finds everything held
    assert "imported 0 sessions (9 held already" in again and ", 0 rows (" in again, again
    assert exported() == first


def test_a_session_an_agent_creates_during_the_import_is_left_as_the_agent_made_it(filled, tmp_path, monkeypatch):
    """The race between the import's check and its insert: an agent creates the same session in
    between. The import counts it as held already and goes on; nothing of the file is mixed in."""
    from sessions_app import services

    path = tmp_path / "acme.jsonl"
    path.write_bytes(exported())
    empty_database()
    tenant = Tenant.objects.create(slug="acme", name="acme")
    checked = portable._root_pk

    def agent_wins_the_race(tenant_, model, key, number):
        found = checked(tenant_, model, key, number)
        if model is Session and key == ["alice", "", "s1"] and found is None:
            services.session_create(tenant=tenant, user_id="alice", session_id="s1")
        return found

    monkeypatch.setattr(portable, "_root_pk", agent_wins_the_race)
    out = imported(path)
    assert "imported 8 sessions (1 held already" in out, out
    session = Session.objects.get(tenant=tenant, user_id="alice", session_id="s1")
    assert not Message.objects.filter(session=session).exists()  # the agent's empty session, not the file's
    assert Session.objects.filter(tenant=tenant).count() == 9


def test_a_tenant_export_is_in_the_access_log_once_per_person(filled):
    from userdata_app.access_log.selectors import subject_accesses

    exported()
    for user_id in PEOPLE:
        [entry] = subject_accesses(tenant_slug="acme", user_id=user_id).filter(action="export")
        assert entry.actor == "manage.py"


def test_a_dry_run_writes_nothing(filled, tmp_path):
    path = tmp_path / "acme.jsonl"
    path.write_bytes(exported())
    empty_database()
    assert "would import 9 sessions" in imported(path, dry_run=True)
    assert not Tenant.objects.exists() and not ErasedSubject.objects.exists()


def test_an_erased_person_is_never_recreated(filled, tmp_path):
    path = tmp_path / "acme.jsonl"
    path.write_bytes(exported())
    empty_database()
    register_erased("acme", "alice")  # erased in the target
    out = imported(path)
    assert "Refused user 'alice'" in out
    tenant = Tenant.objects.get(slug="acme")
    assert not any(held(tenant=tenant, user_id="alice").values())
    assert all(held(tenant=tenant, user_id="bob\u2003").values())


def test_the_registry_in_the_file_refuses_the_person_it_holds(filled, tmp_path):
    register_erased("acme", "bob\u2003")  # erased after the data was written: the file carries both
    path = tmp_path / "acme.jsonl"
    path.write_bytes(exported())
    empty_database()
    out = imported(path, slug="acme-copy")  # under another slug: the file's tenant is matched too
    assert "Refused user 'bob\\u2003'" in out or "Refused user 'bob\u2003'" in out, out
    tenant = Tenant.objects.get(slug="acme-copy")
    assert not any(held(tenant=tenant, user_id="bob\u2003").values())
    assert all(held(tenant=tenant, user_id="alice").values())


def test_another_receipt_key_ring_is_refused_before_anything_is_written(filled, tmp_path, settings):
    path = tmp_path / "acme.jsonl"
    path.write_bytes(exported())
    empty_database()
    settings.ERASURE_HMAC_KEYS = dict.fromkeys(settings.ERASURE_HMAC_KEYS, "another secret")
    with pytest.raises(CommandError, match="another receipt key ring"):
        imported(path)
    assert not Tenant.objects.exists() and not ErasedSubject.objects.exists()


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda lines: [lines[0].replace('"version":1', '"version":2'), *lines[1:]], "line 1: format version 2"),
        (lambda lines: [*lines[:-1], lines[-1][:-10]], "the line does not end"),
        (lambda lines: [*lines[:5], '{"category":"diaries","record":"diary"}\n', *lines[5:]], "line 6: unknown record"),
        (lambda lines: [*lines[:5], lines[5][:20] + "\n", *lines[6:]], "line 6: not JSON"),
    ],
)
def test_bad_input_names_its_line(filled, tmp_path, damage, message):
    lines = exported().decode().splitlines(keepends=True)
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(damage(lines)), encoding="utf-8")
    empty_database()
    with pytest.raises(CommandError, match=message):
        imported(path)


def test_a_bad_tenant_slug_is_refused(filled, tmp_path):
    path = tmp_path / "acme.jsonl"
    path.write_bytes(exported())
    with pytest.raises(CommandError, match="--tenant 'Not a slug'"):
        imported(path, slug="Not a slug")


def test_a_session_block_cut_by_a_bad_record_is_not_half_written(filled, tmp_path):
    lines = exported().decode().splitlines(keepends=True)
    message = next(i for i, line in enumerate(lines) if '"record":"message"' in line)
    block = max(i for i in range(message) if '"record":"session"' in lines[i])
    lines[message] = lines[message].replace('"seq":', '"seq_number":')
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    empty_database()
    with pytest.raises(CommandError, match=f"line {message + 1}: message: fields missing"):
        imported(path)
    cut = json.loads(lines[block])
    sessions = Session.objects.values_list("session_id", flat=True)
    assert cut["session_id"] not in sessions  # its block rolled back whole
    assert len(sessions) == sum('"record":"session"' in line for line in lines[:block])  # those before it stay


def test_a_subject_export_reads_back_as_that_person(filled, tmp_path):
    from userdata_app.portable import subject_export_lines

    text = "".join(subject_export_lines(tenant=filled, user_id="alice"))
    assert json.loads(text.splitlines()[0])["scope"] == "subject"
    assert '"user_id":"bob' not in text
    path = tmp_path / "alice.jsonl"
    path.write_text(text, encoding="utf-8")
    before = held(tenant=filled, user_id="alice")
    empty_database()
    imported(path)
    assert held(tenant=Tenant.objects.get(slug="acme"), user_id="alice") == before


def test_the_format_module_names_its_version():
    assert (portable.FORMAT, portable.VERSION) == ("agentstate-portable", 1)


def test_an_artifact_whose_chunk_rolls_back_leaves_no_file(filled, tmp_path):
    from django.core.files.storage import storages

    from backends.adk.people.artifacts.models import Artifact

    lines = exported().decode().splitlines(keepends=True)
    artifact = next(i for i, line in enumerate(lines) if '"record":"artifact"' in line)
    # A bad record after the artifact, in its chunk: the chunk rolls back, the stored file with it.
    lines.insert(
        artifact + 1,
        lines[artifact].replace('"version":', '"revision":').replace('"user_id":"alice"', '"user_id":"zed"'),
    )
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    empty_database()
    storage = storages["artifacts"]
    before = set(storage.listdir("")[1])
    with pytest.raises(CommandError, match=f"line {artifact + 2}: artifact: field 'version' missing"):
        imported(path)
    assert not Artifact.objects.exists()
    assert set(storage.listdir("")[1]) == before


# --- What the API refuses, an import refuses: named, and what it wrote said (issue 41) ------------


@pytest.fixture
def six_sessions(api, tenant, tmp_path):
    """A file of six sessions of one person, a user datum and an artifact; then an empty database."""
    import backends.adk  # noqa: F401 (the artifact is ADK's: left out, the import skips the test)

    for n in range(6):
        response = api.post("/api/v1/sessions/", {"user_id": "ann", "session_id": f"s{n}"}, format="json")
        assert response.status_code == 201, response.content
    assert api.put("/api/v1/users/ann/data/email/", {"value": "a@b"}, format="json").status_code in (200, 201)
    part = {"inline_data": {"mime_type": "image/png", "data": "iVBO"}}
    artifact = {"filename": "user:a.png", "artifact": part}
    assert api.post("/api/v1/adk/apps/notes/users/ann/artifacts/", artifact, format="json").status_code == 201
    lines = exported().decode().splitlines(keepends=True)
    empty_database()
    return lines


def _record_edited(lines: list[str], record: str, nth: int, **fields) -> int:
    """Set fields of the ``nth`` record of its type (ASCII escapes kept: a lone surrogate stays one)."""
    index = [i for i, line in enumerate(lines) if f'"record":"{record}"' in line][nth]
    lines[index] = json.dumps({**json.loads(lines[index]), **fields}) + "\n"
    return index + 1


def _import_refused(lines: list[str], tmp_path) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(CommandError) as refused:  # the command's error: a message, exit 1, no traceback
        imported(path)
    return str(refused.value)


@pytest.mark.slow  # six imports; the quick loop keeps the five sessions' one below
@pytest.mark.parametrize(
    "record, nth, fields, field, reason",
    [
        ("session", 0, {"user_id": "ann\x00"}, "session.user_id", "NUL"),
        ("session", 1, {"user_id": "ann\x07"}, "session.user_id", "control characters"),
        ("session", 0, {"session_id": "a/b"}, "session.session_id", "'/'"),
        ("user_datum", 0, {"user_id": "x" * 129}, "user_datum.user_id", "at most 128"),
        ("artifact", 0, {"mime_type": "image/png\r\nX-Injected: 1"}, "artifact.mime_type", "control characters"),
        ("artifact", 0, {"user_id": "ann\ud800"}, "artifact.user_id", "lone surrogates"),
    ],
)
def test_an_import_refuses_what_the_api_refuses_naming_line_and_field(
    six_sessions, tmp_path, record, nth, fields, field, reason
):
    from backends.adk.people.artifacts.models import Artifact
    from userdata_app.models import UserDatum

    line = _record_edited(six_sessions, record, nth, **fields)
    message = _import_refused(six_sessions, tmp_path)
    assert f"line {line}: {field}: " in message and reason in message
    model = {"session": Session, "user_datum": UserDatum, "artifact": Artifact}[record]
    assert not model.objects.exclude(user_id="ann").exists()


def test_a_bad_record_after_five_sessions_says_the_five_were_imported(six_sessions, tmp_path):
    line = _record_edited(six_sessions, "session", 5, metadata={"note": "\ud800"})
    message = _import_refused(six_sessions, tmp_path)
    assert f"line {line}: session.metadata: must be valid Unicode (no lone surrogates)." in message
    assert "Written before it, and kept: 0 new erased-subject registry entries, 5 sessions" in message
    assert sorted(Session.objects.values_list("session_id", flat=True)) == ["s0", "s1", "s2", "s3", "s4"]


def test_a_line_nested_past_a_request_bodys_depth_is_refused_by_its_number(six_sessions, tmp_path):
    line = _record_edited(six_sessions, "user_datum", 0)
    six_sessions[line - 1] = six_sessions[line - 1].replace('"value": "a@b"', '"value": ' + "[" * 5000 + "]" * 5000)
    message = _import_refused(six_sessions, tmp_path)
    assert f"line {line}: line: nests deeper than 64 levels." in message


def test_a_record_the_tables_refuse_is_named_by_its_block_and_nothing_of_it_is_written(api, tenant, tmp_path):
    """Two messages with one seq in a session's block: the checks pass each, the table refuses the pair."""
    assert api.post("/api/v1/sessions/", {"user_id": "ann", "session_id": "s1"}, format="json").status_code == 201
    messages = {"messages": [{"content": "one"}, {"content": "two"}]}
    assert api.post("/api/v1/users/ann/sessions/s1/messages/", messages, format="json").status_code == 201
    lines = exported().decode().splitlines(keepends=True)
    empty_database()
    block = next(i for i, line in enumerate(lines) if '"record":"session"' in line) + 1
    second = max(i for i, line in enumerate(lines) if '"record":"message"' in line)
    lines[second] = lines[second].replace('"seq":2', '"seq":1')

    message = _import_refused(lines, tmp_path)

    assert f"line {block}: the database refused this session's block or chunk" in message
    assert "Written before it, and kept: 0 new erased-subject registry entries, 0 sessions" in message
    assert not Session.objects.exists() and not Message.objects.exists()


def test_a_memorys_sources_and_vectors_travel_in_its_record(api, tenant, tmp_path):
    """A memory's parts (register_part) are carried in its record: its sources, linked again to the
    session the file brings and marked where its session was deleted, and its vectors, exact."""
    from userdata_app.memory.models import MemoryPolicy, MemorySource, MemoryVector

    for session_id in ("s1", "s2"):
        response = api.post("/api/v1/sessions/", {"user_id": "ann", "session_id": session_id}, format="json")
        assert response.status_code == 201, response.content
    MemoryPolicy.objects.create(tenant=tenant, keep_derived=True)
    put = {"op": "put", "namespace": ["users", "ann", "facts"], "key": "k", "value": {"text": "tea"}}
    put |= {"sources": [{"session_id": "s1", "ref": "m1"}], "vectors": [{"path": "text", "vector": [0.1, -2.5, 3.0]}]}
    kept = {**put, "key": "kept", "sources": [{"session_id": "s2"}]}
    assert api.post("/api/v1/store/batch/", {"ops": [put, kept]}, format="json").status_code == 200
    assert api.delete("/api/v1/users/ann/sessions/s2/").status_code == 204  # "kept" stays, for review
    first = exported()
    path = tmp_path / "acme.jsonl"
    path.write_bytes(first)

    empty_database()
    imported(path)
    assert exported() == first
    columns = ("item__key", "session_id", "linked_session__session_id", "session_deleted")
    found = {row[:2]: row[2:] for row in MemorySource.objects.values_list(*columns)}
    assert found == {("k", "s1"): ("s1", False), ("kept", "s2"): (None, True)}
    [vector] = MemoryVector.objects.filter(item__key="k").values_list("vector", flat=True)
    assert struct.unpack("<3f", bytes(vector)) == struct.unpack("<3f", struct.pack("<3f", 0.1, -2.5, 3.0))


def test_a_tenants_memories_travel_in_the_same_statements_at_3_and_33_items(api, tenant):
    """A batch of memories reads its items' sources and vectors at once, not a query or two per item:
    in the portable file and in the person's subject export."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from userdata_app.memory.selectors import subject_memory_export

    response = api.post("/api/v1/sessions/", {"user_id": "ann", "session_id": "s1"}, format="json")
    assert response.status_code == 201, response.content

    def put(items, namespace):
        ops = [
            {
                "op": "put",
                "namespace": ["users", "ann", namespace],
                "key": f"k{n}",
                "value": {"text": f"tea {n}"},
                "sources": [{"session_id": "s1", "ref": f"m{n}"}],
                "vectors": [{"path": "text", "vector": [0.5, float(n), -1.0]}],
            }
            for n in range(items)
        ]
        assert api.post("/api/v1/store/batch/", {"ops": ops}, format="json").status_code == 200

    def statements(items):
        with CaptureQueriesContext(connection) as queries:
            records = [json.loads(line) for line in exported().splitlines()[1:]]
            subject = list(subject_memory_export(tenant=tenant, user_id="ann"))
        memories = [r for r in records if r["record"] == "memory"]
        assert len(memories) == len(subject) == items
        assert all(m["sources"][0]["session_id"] == "s1" and len(m["vectors"]) == 1 for m in memories)
        assert all(m["sources"][0]["session_id"] == "s1" and list(m["vectors"]) == ["text"] for m in subject)
        return len(queries)

    put(3, "facts")
    exported()  # the first export's one-time reads (caches) not counted
    few = statements(3)
    put(30, "more")
    assert statements(33) == few
