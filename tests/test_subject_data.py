"""The map of people's data is complete: every model holding a person's data is declared, and a
model added without a declaration fails the suite (``agentstate.subject_data.check_declared``)."""

# ruff: noqa: DJ008  (throwaway models that only the completeness check sees need no __str__)

from dataclasses import replace

import pytest
from django.conf import settings
from django.db import models
from django.test.utils import isolate_apps

from agentstate import subject_data
from agentstate.subjects import PROCESS_STATE, USER_DATA
from sessions_app.models import Message, Session
from userdata_app.models import UserDatum


def without(model) -> dict:
    """The map as if ``model`` had not been declared (a copy: the registration order stays)."""
    return {m: d for m, d in subject_data._declared.items() if m is not model}


def test_every_model_of_the_project_is_declared_or_listed_as_not_personal():
    assert subject_data.check_declared() == []


@pytest.mark.needs_backends
def test_the_map_covers_each_kind_of_data_the_service_keeps():
    assert {"user_data", "adk_user_state"} <= set(subject_data.categories(USER_DATA))
    assert {"sessions", "messages", "message_pops", "working_state", "langgraph_checkpoints", "adk_events"} <= set(
        subject_data.categories(PROCESS_STATE)
    )
    assert subject_data.category_label("message_pops") == "kept popped messages"


@isolate_apps("sessions_app")
def test_a_new_model_with_a_user_id_or_a_key_to_a_session_must_be_declared():
    class Preference(models.Model):  # a user id of its own
        user_id = models.CharField(max_length=128)
        value = models.JSONField()

        class Meta:
            app_label = "sessions_app"

    class Annotation(models.Model):  # hangs off a session
        session = models.ForeignKey(Session, on_delete=models.CASCADE)
        note = models.TextField()

        class Meta:
            app_label = "sessions_app"

    class Setting(models.Model):  # about no person
        name = models.CharField(max_length=32)

        class Meta:
            app_label = "sessions_app"

    assert subject_data.undeclared([Preference, Annotation, Setting]) == [
        "sessions_app.Preference",
        "sessions_app.Annotation",
    ]


def test_a_model_left_out_of_the_map_fails_the_check(monkeypatch):
    monkeypatch.setattr(subject_data, "_declared", without(UserDatum))
    errors = subject_data.check_declared()
    assert [(e.id, e.msg.split()[0]) for e in errors] == [("agentstate.E001", "userdata_app.UserDatum")]


def test_rows_hanging_off_undeclared_data_fail_the_check(monkeypatch):
    monkeypatch.setattr(subject_data, "_declared", without(Session))
    problems = subject_data.incomplete()
    assert "sessions_app.Message hangs off sessions_app.Session, which is not declared." in problems


def test_a_declaration_without_an_export_fails_the_check(monkeypatch):
    declaration = subject_data.declaration_of(Message)
    monkeypatch.setitem(
        subject_data._declared, Message, subject_data.SubjectData(**{**declaration.__dict__, "export": None})
    )
    assert subject_data.incomplete() == ["sessions_app.Message declares no export."]


@pytest.mark.parametrize("kind", ["", "people"])
def test_a_declaration_names_a_kind_erasure_knows(kind):
    with pytest.raises(ValueError, match="kind must be one of"):
        subject_data.register(subject_data.SubjectData(model=UserDatum, category="x", kind=kind))


def test_process_state_that_says_nothing_of_retention_fails_the_check(monkeypatch):
    declaration = subject_data.declaration_of(Message)
    monkeypatch.setattr(
        subject_data, "_declared", {**subject_data._declared, Message: replace(declaration, retention=None)}
    )
    assert subject_data.incomplete() == [
        "sessions_app.Message says nothing of retention (the rule that removes its rows, or why none does)."
    ]


@pytest.mark.needs_backends
def test_the_compliance_guide_lists_every_category_by_the_name_staff_read():
    text = (settings.BASE_DIR / "docs" / "COMPLIANCE.md").read_text()
    table = text.split("### Categories", 1)[1].split("\n\n")[2]
    rows = [line.split("|")[1:4] for line in table.splitlines()[2:]]
    documented = [(key.strip().strip("`"), label.strip(), scope.strip()) for key, label, scope in rows]
    scope = {USER_DATA: "either", PROCESS_STATE: "everything"}
    assert documented == [
        (category, subject_data.category_label(category), scope[kind])
        for kind in subject_data.KINDS
        for category in subject_data.categories(kind)
    ]


def test_a_part_must_hang_off_a_declared_model_by_a_cascade(monkeypatch):
    """A part (a memory's vectors) is erased only by its row's cascade: one that names a row it does
    not cascade from, or an undeclared one, is refused by the completeness check."""
    from userdata_app.memory.models import MemoryItem, MemoryVector

    monkeypatch.setitem(subject_data._parts, MemoryVector, (UserDatum, "not its row"))
    assert subject_data.incomplete() == [
        "userdata_app.MemoryVector is a part of userdata_app.UserDatum: it must be declared and cascade."
    ]
    monkeypatch.setitem(subject_data._parts, MemoryVector, (MemoryItem, "its row"))
    assert subject_data.incomplete() == []


def test_no_part_of_an_export_reads_the_database_row_by_row(api, tenant, monkeypatch):
    """Every session part of the map (``SessionPart.row``) and every portable record (``_encode``)
    shows its row from what the row's batch read: a query per row would make an export of a million
    rows a million queries. A part or record added later is walked too."""
    import dataclasses

    from django.db import connection

    from agentstate import portable
    from agentstate.streaming import materialized
    from sessions_app import subject_data as session_parts
    from tests.userdata_app.test_erasure_residue import markers_of, store_everything

    store_everything(api, "ann", markers_of(1))
    inside: list[str] = []
    queried: list[tuple[str, str]] = []

    def flagged(name, show):
        def read(*args, **kwargs):
            inside.append(name)
            try:
                return show(*args, **kwargs)
            finally:
                inside.pop()

        return read

    declared = session_parts.declared
    monkeypatch.setattr(
        session_parts,
        "declared",
        lambda *kinds: [
            dataclasses.replace(d, part=dataclasses.replace(d.part, row=flagged(d.category, d.part.row)))
            if d.part is not None
            else d
            for d in declared(*kinds)
        ],
    )
    monkeypatch.setattr(portable, "_encode", flagged("portable", portable._encode))

    def spy(execute, sql, params, many, context):
        if inside:
            queried.append((inside[-1], sql))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        sessions = materialized(session_parts.subject_sessions_export(tenant=tenant, user_id="ann"))
        records = list(portable.records(tenant=tenant))
    assert len(sessions) >= 3 and len(records) > len(sessions)
    assert not queried


def test_every_top_level_export_is_read_as_it_is_written(tenant):
    """A declared ``Export`` hands the subject export an iterator that reads nothing until it is
    written out (``agentstate.streaming``): one that read every row of a person into a list first
    would hold an export of any size whole. An export declared later is checked too."""
    from collections.abc import Iterator

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agentstate.subject_data import Export, declared

    exports = [d for d in declared() if isinstance(d.export, Export)]
    assert {d.category for d in exports} >= {"user_data", "memories"}
    for d in exports:
        with CaptureQueriesContext(connection) as queries:
            rows = d.export.rows(tenant=tenant, user_id="nobody")
        assert isinstance(rows, Iterator) and not queries, d.category
        assert list(rows) == [], d.category
