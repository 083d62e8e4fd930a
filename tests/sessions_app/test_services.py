"""The write rules of process state (sessions_app.services), on whichever database the run uses."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentstate.exceptions import (
    InvalidInput,
    NotFound,
    PreconditionFailed,
    SessionAlreadyExists,
    SessionEnded,
)
from sessions_app import selectors, services, working_state
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from userdata_app.models import UserDatum

pytestmark = pytest.mark.django_db

ROUND_ID_MAX = 2**31 - 1
BAD_IDENTIFIERS = [
    pytest.param("", id="empty"),
    pytest.param("x" * 129, id="129-chars"),
    pytest.param("a/b", id="slash"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("a\nb", id="newline"),
    pytest.param("a\x7fb", id="del"),
    pytest.param(42, id="int"),
    pytest.param(["s1"], id="list"),
]


def _session(tenant, user_id="u1", session_id="s1", **fields) -> Session:
    return services.session_create(tenant=tenant, user_id=user_id, session_id=session_id, **fields)


def _append(session, *contents, **fields):
    return services.message_append(
        session=session, messages=[{"role": "user", "content": c, **fields} for c in contents]
    ).messages


def _seqs(session) -> list[int]:
    return list(Message.objects.filter(session=session).order_by("seq").values_list("seq", flat=True))


def _save(tenant, state, **kwargs) -> Round:
    return services.round_save(tenant=tenant, user_id="u1", state=state, **kwargs)


def _round_ids(tenant, session_id="default") -> list[int]:
    session = selectors.session_get(tenant=tenant, user_id="u1", session_id=session_id)
    return [r.round_id for r in selectors.round_list(session=session)]


# --- Sessions ---------------------------------------------------------------------------------


def test_create_strips_the_session_id_and_stores_the_fields(tenant):
    session = _session(tenant, session_id="  s1 \t", agent_id="planner", workspace_id="w1", metadata={"k": [1]})
    stored = Session.objects.get(pk=session.pk)
    assert (stored.session_id, stored.agent_id, stored.workspace_id, stored.metadata) == (
        "s1",
        "planner",
        "w1",
        {"k": [1]},
    )
    assert stored.ended_at is None and stored.created_at is not None


@pytest.mark.parametrize("blank", [None, "", "   "])
def test_create_with_a_blank_id_makes_a_new_uuid(tenant, blank):
    first = _session(tenant, session_id=blank)
    second = _session(tenant, session_id=blank)
    assert str(uuid.UUID(first.session_id)) == first.session_id
    assert first.session_id != second.session_id


def test_create_of_an_existing_id_is_a_conflict_and_leaves_the_original(tenant):
    original = _session(tenant, agent_id="a1", metadata={"v": 1})
    services.message_append(session=original, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(SessionAlreadyExists):
        _session(tenant, session_id=" s1 ", agent_id="a2", metadata={"v": 2})
    stored = Session.objects.get()
    assert (stored.pk, stored.agent_id, stored.metadata, stored.last_seq) == (original.pk, "a1", {"v": 1}, 1)
    assert Message.objects.filter(session=original).count() == 1


def test_the_same_session_id_is_separate_per_user_and_per_tenant(tenant, other_tenant):
    a = _session(tenant, user_id="u1")
    b = _session(tenant, user_id="u2")
    c = _session(other_tenant, user_id="u1")
    assert len({a.pk, b.pk, c.pk}) == 3


@pytest.mark.parametrize(
    "field, bad",
    [
        pytest.param(field, *bad.values, id=f"{field}-{bad.id}")
        for field in ("user_id", "session_id")
        for bad in BAD_IDENTIFIERS
        if (field, bad.id) != ("session_id", "empty")  # a blank session_id means a new UUID
    ],
)
def test_create_rejects_a_bad_identifier_and_stores_nothing(tenant, field, bad):
    ids = {"user_id": "u1", "session_id": "s1", field: bad}
    with pytest.raises(InvalidInput) as err:
        services.session_create(tenant=tenant, **ids)
    assert field in err.value.fields
    assert not Session.objects.exists()


@pytest.mark.parametrize("bad", [0, False, []], ids=["zero", "false", "empty-list"])
def test_create_rejects_a_falsy_non_string_session_id_instead_of_making_a_uuid(tenant, bad):
    with pytest.raises(InvalidInput):
        services.session_create(tenant=tenant, user_id="u1", session_id=bad)
    assert not Session.objects.exists()


def test_create_accepts_an_identifier_of_exactly_128_characters(tenant):
    assert len(_session(tenant, user_id="u" * 128, session_id="s" * 128).session_id) == 128


@pytest.mark.parametrize(
    "fields",
    [{"metadata": [1]}, {"metadata": "x"}, {"metadata": {"k": "a\x00"}}, {"agent_id": "a/b"}, {"workspace_id": "\x01"}],
)
def test_create_rejects_bad_fields_and_stores_nothing(tenant, fields):
    with pytest.raises(InvalidInput):
        _session(tenant, **fields)
    assert not Session.objects.exists()


def test_update_with_a_stale_version_is_a_precondition_failure(tenant):
    session = _session(tenant)
    version = session.version
    services.session_update(session=session, expected_version=version, agent_id="a2")
    with pytest.raises(PreconditionFailed):
        services.session_update(session=session, expected_version=version, agent_id="a3")
    assert Session.objects.get().agent_id == "a2"


def _populate(session):
    services.message_append(session=session, messages=[{"role": "user", "content": "hi"}])
    services.round_save(tenant=session.tenant, user_id=session.user_id, session_id=session.session_id, state={"r": 1})
    services.working_state_patch(session=session, changes={"task": "t"})
    services.checkpoint_create(session=session, label="cp")
    services.transition_record(session=session, from_agent="a", to_agent="b")


def test_delete_removes_process_state_and_leaves_user_data_and_other_sessions(
    tenant, django_capture_on_commit_callbacks
):
    from userdata_app.services import user_datum_set

    doomed, kept = _session(tenant, session_id="doomed"), _session(tenant, session_id="kept")
    _populate(doomed)
    _populate(kept)
    user_datum_set(tenant=tenant, user_id="u1", key="email", value="u1@example.com")

    with django_capture_on_commit_callbacks(execute=True):  # working state goes once the delete commits
        counts = services.session_delete(session=doomed)

    assert counts["session"] == 1 and counts["message"] == 1 and counts["round"] == 1
    for model in (Message, Round, Checkpoint, AgentTransition):
        assert not model.objects.filter(session_id=doomed.pk).exists(), model
        assert model.objects.filter(session=kept).count() == 1, model
    assert not Session.objects.filter(pk=doomed.pk).exists()
    assert selectors.working_state_get(session=kept) == {"task": "t"}
    assert working_state.get_store().get(doomed.pk) == {}
    assert UserDatum.objects.get(tenant=tenant, user_id="u1", key="email").value == "u1@example.com"


def test_end_sets_ended_at_and_discards_working_state(tenant, django_capture_on_commit_callbacks):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"task": "t"})
    with django_capture_on_commit_callbacks(execute=True):  # working state goes once the end commits
        ended = services.session_end(session=session)
    assert ended.ended_at is not None
    assert Session.objects.get().ended_at == ended.ended_at
    assert working_state.get_store().get(session.pk) == {}


def test_ending_twice_keeps_the_first_end_time(tenant):
    session = _session(tenant)
    first = services.session_end(session=session).ended_at
    assert services.session_end(session=session).ended_at == first


@pytest.mark.parametrize("action", [services.session_end, services.session_delete], ids=["end", "delete"])
def test_ending_or_deleting_a_deleted_session_is_not_found(tenant, action):
    session = _session(tenant)
    services.session_delete(session=session)
    with pytest.raises(NotFound):
        action(session=session)


def test_an_ended_session_refuses_writes_and_stays_readable(tenant, django_capture_on_commit_callbacks):
    session = _session(tenant)
    _populate(session)
    with django_capture_on_commit_callbacks(execute=True):
        services.session_end(session=session)

    refused = [
        lambda: services.message_append(session=session, messages=[{"role": "user", "content": "late"}]),
        lambda: services.message_append(session=session, messages=[{"role": "user", "client_id": "c9"}]),
        lambda: _save(tenant, {"r": 2}, session_id="s1"),
        lambda: _save(tenant, {"r": 2}, session_id="s1", round_id=1),
        lambda: services.working_state_patch(session=session, changes={"k": 1}),
        lambda: services.working_state_replace(session=session, data={"k": 1}),
        lambda: services.transition_record(session=session, to_agent="c"),
    ]
    for write in refused:
        with pytest.raises(SessionEnded):
            write()

    assert [m.content for m in selectors.message_list(session=session)] == ["hi"]
    assert selectors.round_export(tenant=tenant, user_id="u1", session_id="s1") == {"r": 1}
    assert [c.label for c in selectors.checkpoint_list(session=session)] == ["cp"]
    assert selectors.working_state_get(session=session) == {}
    assert working_state.get_store().get(session.pk) == {}
    assert Session.objects.get().last_seq == 1 and Round.objects.count() == 1


# --- Messages ---------------------------------------------------------------------------------


def test_append_numbers_messages_without_gaps_across_batches(tenant):
    session = _session(tenant)
    assert [m.seq for m in _append(session, "a")] == [1]
    assert [m.seq for m in _append(session, "b", "c", "d")] == [2, 3, 4]
    assert [m.seq for m in _append(session, "e")] == [5]
    assert _seqs(session) == [1, 2, 3, 4, 5]
    assert Session.objects.get().last_seq == 5


def test_sequence_numbers_are_per_session(tenant):
    a, b = _session(tenant, session_id="a"), _session(tenant, session_id="b")
    _append(a, "1", "2")
    assert [m.seq for m in _append(b, "1")] == [1]


def test_append_stores_every_field(tenant):
    session = _session(tenant)
    [message] = services.message_append(
        session=session,
        messages=[
            {
                "client_id": "m-1",
                "role": "assistant",
                "type": "function_call",
                "status": "completed",
                "name": "bot",
                "content": [{"type": "text", "text": "hi"}],
                "metadata": {"m": 1},
                "usage": {"tokens": 3},
            }
        ],
    ).messages
    stored = Message.objects.get(pk=message.pk)
    assert (stored.client_id, stored.role, stored.type, stored.status, stored.name) == (
        "m-1",
        "assistant",
        "function_call",
        "completed",
        "bot",
    )
    assert (stored.content, stored.metadata, stored.usage) == (
        [{"type": "text", "text": "hi"}],
        {"m": 1},
        {"tokens": 3},
    )
    assert (stored.tenant_id, stored.user_id) == (tenant.pk, "u1")


@pytest.mark.parametrize(
    "content",
    ["plain text", "", [{"type": "text", "text": "a"}, {"type": "image", "url": "u"}], [], None],
    ids=["string", "empty-string", "typed-parts", "no-parts", "null"],
)
def test_content_is_a_string_a_list_of_typed_parts_or_null(tenant, content):
    session = _session(tenant)
    [message] = services.message_append(session=session, messages=[{"role": "user", "content": content}]).messages
    assert Message.objects.get(pk=message.pk).content == content


def test_type_defaults_to_message_and_metadata_to_an_empty_object(tenant):
    [message] = _append(_session(tenant), "x")
    stored = Message.objects.get(pk=message.pk)
    assert (stored.type, stored.metadata, stored.usage) == ("message", {}, None)


BAD_MESSAGES = [
    pytest.param("not an object", id="not-object"),
    pytest.param({"role": "user", "content": {"text": "x"}}, id="content-object"),
    pytest.param({"role": "user", "content": 5}, id="content-number"),
    pytest.param({"role": "user", "content": ["x"]}, id="part-not-object"),
    pytest.param({"role": "user", "content": [{"text": "x"}]}, id="part-without-type"),
    pytest.param({"role": "user", "content": [{"type": 1}]}, id="part-type-not-string"),
    pytest.param({"role": "user", "content": "a\x00b"}, id="content-nul"),
    pytest.param({"role": "user", "metadata": [1]}, id="metadata-list"),
    pytest.param({"role": "user", "metadata": []}, id="metadata-empty-list"),
    pytest.param({"role": "user", "metadata": "x"}, id="metadata-string"),
    pytest.param({"role": "user", "usage": [1]}, id="usage-list"),
    pytest.param({"role": "user", "client_id": "a/b"}, id="client-id-slash"),
    pytest.param({"role": "user", "client_id": 7}, id="client-id-int"),
    pytest.param({"role": "r" * 33}, id="role-too-long"),
    pytest.param({"role": "user", "surprise": 1}, id="unknown-field"),
]


@pytest.mark.parametrize("bad", BAD_MESSAGES)
def test_a_bad_message_in_a_batch_stores_none_of_it(tenant, bad):
    session = _session(tenant)
    _append(session, "before")
    with pytest.raises(InvalidInput):
        services.message_append(session=session, messages=[{"role": "user", "content": "ok", "client_id": "ok-1"}, bad])
    assert _seqs(session) == [1]
    assert Session.objects.get().last_seq == 1
    assert [m.seq for m in _append(session, "after")] == [2]


@pytest.mark.parametrize(
    "batch", [[], {"role": "user"}, None, [{"role": "user"}] * 501], ids=["empty", "object", "none", "501"]
)
def test_a_batch_is_a_non_empty_bounded_list(tenant, batch):
    session = _session(tenant)
    with pytest.raises(InvalidInput):
        services.message_append(session=session, messages=batch)
    assert not Message.objects.exists()


def test_duplicate_client_ids_within_one_batch_are_refused(tenant):
    session = _session(tenant)
    with pytest.raises(InvalidInput):
        services.message_append(
            session=session, messages=[{"role": "user", "client_id": "c"}, {"role": "user", "client_id": "c"}]
        )
    assert not Message.objects.exists()


def test_a_retried_client_id_returns_the_stored_message_and_stores_nothing(tenant):
    session = _session(tenant)
    first = services.message_append(session=session, messages=[{"role": "user", "content": "hi", "client_id": "c1"}])
    retry = services.message_append(
        session=session, messages=[{"role": "user", "content": "CHANGED", "client_id": "c1"}]
    )
    assert first.created and not retry.created
    assert retry.messages[0].pk == first.messages[0].pk
    assert retry.messages[0].content == "hi"
    assert Message.objects.count() == 1 and Session.objects.get().last_seq == 1


def test_a_partly_retried_batch_stores_only_the_new_messages_in_order(tenant):
    session = _session(tenant)
    [a] = _append(session, "a", client_id="c-a")
    result = services.message_append(
        session=session,
        messages=[
            {"role": "user", "content": "b", "client_id": "c-b"},
            {"role": "user", "content": "a again", "client_id": "c-a"},
            {"role": "user", "content": "c"},
        ],
    )
    assert result.created
    assert [(m.content, m.seq) for m in result.messages] == [("b", 2), ("a", 1), ("c", 3)]
    assert result.messages[1].pk == a.pk
    assert _seqs(session) == [1, 2, 3]


def test_an_append_with_new_client_ids_is_one_statement_on_postgresql(tenant, postgres_only):
    """The OpenAI Agents SDK sends a client id with every item: new ones cost the one statement an
    append without them costs; a batch with a stored one takes the locked append."""
    session = _session(tenant)
    with CaptureQueriesContext(connection) as queries:
        _append(session, "a", "b", client_id=None)
        stored = services.message_append(
            session=session, messages=[{"role": "user", "client_id": f"c{i}"} for i in range(2)]
        )
    statements = [q["sql"] for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 2 and [m.seq for m in stored.messages] == [3, 4]
    again = services.message_append(session=session, messages=[{"role": "user", "client_id": c} for c in ("c1", "c2")])
    assert [m.seq for m in again.messages] == [4, 5] and again.created and _seqs(session) == [1, 2, 3, 4, 5]


def test_client_ids_are_per_session(tenant):
    a, b = _session(tenant, session_id="a"), _session(tenant, session_id="b")
    _append(a, "x", client_id="c1")
    result = services.message_append(session=b, messages=[{"role": "user", "content": "y", "client_id": "c1"}])
    assert result.created and result.messages[0].session_id == b.pk


def test_a_retry_on_an_ended_session_returns_the_stored_message(tenant):
    session = _session(tenant)
    [stored] = _append(session, "hi", client_id="c1")
    services.session_end(session=session)
    retry = services.message_append(session=session, messages=[{"role": "user", "content": "hi", "client_id": "c1"}])
    assert not retry.created and retry.messages[0].pk == stored.pk


def test_append_to_a_deleted_session_is_not_found(tenant):
    session = _session(tenant)
    services.session_delete(session=session)
    with pytest.raises(NotFound):
        _append(session, "x")
    assert not Message.objects.exists()


# --- Rounds (the AgentScope state service) ----------------------------------------------------


def test_save_without_a_session_id_creates_the_default_session(tenant):
    assert _save(tenant, {"a": 1}).round_id == 1
    session = Session.objects.get()
    assert (session.user_id, session.session_id) == ("u1", "default")


def test_save_with_an_empty_session_id_uses_default_like_the_seed(tenant):
    _save(tenant, {"a": 1}, session_id="")
    assert Session.objects.get().session_id == "default"


def test_save_does_not_strip_the_session_id_like_the_seed(tenant):
    _save(tenant, {"a": 1}, session_id=" s1 ")
    assert Session.objects.get().session_id == " s1 "


def test_a_refused_save_does_not_create_the_session(tenant):
    with pytest.raises(PreconditionFailed):
        _save(tenant, {"v": 1}, session_id="new", round_id=1, expected_version=1)
    assert not Session.objects.exists()


def test_save_creates_a_named_session_once(tenant):
    _save(tenant, {"a": 1}, session_id="s9")
    _save(tenant, {"a": 2}, session_id="s9")
    assert Session.objects.get().session_id == "s9"
    assert _round_ids(tenant, "s9") == [1, 2]


def test_save_into_an_existing_session_keeps_it(tenant):
    session = _session(tenant, agent_id="a1")
    _save(tenant, {"a": 1}, session_id="s1")
    assert Session.objects.get().pk == session.pk and Session.objects.get().agent_id == "a1"


def test_auto_round_ids_are_max_plus_one(tenant):
    assert [_save(tenant, {"n": n}).round_id for n in range(3)] == [1, 2, 3]


def test_explicit_round_id_overwrites_that_round(tenant):
    _save(tenant, {"v": 1})
    saved = _save(tenant, {"v": 2}, round_id=1)
    assert saved.round_id == 1 and saved.version == 2
    assert Round.objects.count() == 1
    assert selectors.round_export(tenant=tenant, user_id="u1", round_id=1) == {"v": 2}


def test_ids_may_be_sparse_and_auto_continues_after_the_largest(tenant):
    assert _save(tenant, {"v": 10}, round_id=10).round_id == 10
    assert _save(tenant, {"v": 5}, round_id=5).round_id == 5
    assert _save(tenant, {"v": 11}).round_id == 11
    assert _round_ids(tenant) == [5, 10, 11]


def test_round_zero_is_allowed_and_auto_after_it_is_one(tenant):
    _save(tenant, {"v": 0}, round_id=0)
    assert _save(tenant, {"v": 1}).round_id == 1


def test_round_id_bounds(tenant):
    assert _save(tenant, {"v": 1}, round_id=ROUND_ID_MAX).round_id == ROUND_ID_MAX
    with pytest.raises(InvalidInput):
        _save(tenant, {"v": 2})  # no automatic id above the largest possible one
    assert _round_ids(tenant) == [ROUND_ID_MAX]


@pytest.mark.parametrize("bad", [-1, ROUND_ID_MAX + 1, True, "1", 1.0], ids=str)
def test_bad_round_ids_are_refused_and_nothing_is_stored(tenant, bad):
    with pytest.raises(InvalidInput):
        _save(tenant, {"v": 1}, round_id=bad)
    assert not Session.objects.exists() and not Round.objects.exists()


@pytest.mark.parametrize("state", [[1], "s", None, 3, {"k": "a\x00"}, {1: "int key"}], ids=str)
def test_state_must_be_a_json_object(tenant, state):
    with pytest.raises(InvalidInput):
        _save(tenant, state)
    assert not Session.objects.exists() and not Round.objects.exists()


@pytest.mark.parametrize("bad", BAD_IDENTIFIERS)
def test_save_with_a_bad_identifier_stores_nothing(tenant, bad):
    with pytest.raises(InvalidInput):
        services.round_save(tenant=tenant, user_id=bad, state={"v": 1})
    if bad != "":  # an empty session_id means "default", as in the seed
        with pytest.raises(InvalidInput):
            services.round_save(tenant=tenant, user_id="u1", session_id=bad, state={"v": 1})
    assert not Session.objects.exists() and not Round.objects.exists()


def test_saved_state_is_a_copy_of_the_callers_dict(tenant):
    state = {"items": [1]}
    _save(tenant, state)
    state["items"].append(2)
    assert selectors.round_export(tenant=tenant, user_id="u1") == {"items": [1]}


def test_deleting_the_top_round_makes_auto_continue_after_the_remaining_max(tenant):
    for _ in range(3):
        _save(tenant, {})
    session = Session.objects.get()
    services.round_delete(session=session, round_id=3)
    assert _save(tenant, {}).round_id == 3
    services.round_delete(session=session, round_id=3)
    services.round_delete(session=session, round_id=2)
    assert _save(tenant, {}).round_id == 2


def test_deleting_a_lower_round_keeps_auto_after_the_max(tenant):
    for _ in range(3):
        _save(tenant, {})
    services.round_delete(session=Session.objects.get(), round_id=1)
    assert _save(tenant, {}).round_id == 4


def test_deleting_every_round_makes_auto_start_at_one(tenant):
    _save(tenant, {}, round_id=7)
    services.round_delete(session=Session.objects.get(), round_id=7)
    assert _save(tenant, {}).round_id == 1


def test_deleting_a_missing_round_is_not_found(tenant):
    _save(tenant, {})
    with pytest.raises(NotFound):
        services.round_delete(session=Session.objects.get(), round_id=2)
    assert _round_ids(tenant) == [1]


def test_overwrite_with_the_current_version_succeeds_and_a_stale_one_fails(tenant):
    saved = _save(tenant, {"v": 1})
    updated = _save(tenant, {"v": 2}, round_id=1, expected_version=saved.version)
    with pytest.raises(PreconditionFailed):
        _save(tenant, {"v": 3}, round_id=1, expected_version=saved.version)
    assert updated.version == saved.version + 1
    assert selectors.round_export(tenant=tenant, user_id="u1") == {"v": 2}


def test_expected_version_needs_an_existing_round(tenant):
    _save(tenant, {"v": 1})
    with pytest.raises(PreconditionFailed):
        _save(tenant, {"v": 2}, round_id=5, expected_version=1)
    with pytest.raises(PreconditionFailed):
        _save(tenant, {"v": 2}, expected_version=1)
    assert _round_ids(tenant) == [1]
    assert _save(tenant, {"v": 3}).round_id == 2  # the refused saves moved no counter


# --- Checkpoints and transitions --------------------------------------------------------------


def test_checkpoint_promotes_all_working_state_keys(tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1, "b": [2]})
    assert services.checkpoint_create(session=session, label="all").state == {"a": 1, "b": [2]}
    assert services.checkpoint_create(session=session, label="all", include_keys=[]).state == {"a": 1, "b": [2]}


def test_checkpoint_include_keys_promotes_only_those_and_skips_missing_ones(tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1, "b": 2, "c": 3})
    checkpoint = services.checkpoint_create(session=session, label="some", include_keys=["a", "c", "missing"])
    assert Checkpoint.objects.get(pk=checkpoint.pk).state == {"a": 1, "c": 3}


def test_checkpoint_from_a_given_state(tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    checkpoint = services.checkpoint_create(session=session, label="given", state={"z": 26})
    assert Checkpoint.objects.get(pk=checkpoint.pk).state == {"z": 26}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"label": ""},
        {"label": "a/b"},
        {"label": "x" * 129},
        {"label": "cp", "state": [1]},
        {"label": "cp", "state": {"a": 1}, "include_keys": ["a"]},
        {"label": "cp", "include_keys": ["a/b"]},
        {"label": "cp", "include_keys": "a"},
    ],
    ids=str,
)
def test_bad_checkpoints_are_refused_and_nothing_is_stored(tenant, kwargs):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    with pytest.raises(InvalidInput):
        services.checkpoint_create(session=session, **kwargs)
    assert not Checkpoint.objects.exists()


def test_checkpoints_survive_the_end_of_the_session(tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"subtask": "draft"})
    services.checkpoint_create(session=session, label="done", include_keys=["subtask"])
    services.session_end(session=session)
    assert selectors.checkpoint_latest(session=session, label="done").state == {"subtask": "draft"}


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_for_a_session_deleted_meanwhile_is_not_found_and_stores_nothing(tenant):
    """An agent holding a session that a delete or an erasure removed gets a 404, never a
    foreign-key error (a 500 through the API)."""
    session = _session(tenant)
    services.session_delete(session=Session.objects.get(pk=session.pk))
    with pytest.raises(NotFound):
        services.checkpoint_create(session=session, label="late", state={"a": 1})
    assert not Checkpoint.objects.exists()


def test_transitions_are_recorded_with_their_fields(tenant):
    session = _session(tenant)
    transition = services.transition_record(
        session=session, from_agent="triage", to_agent="billing", reason="refund", metadata={"p": 1}
    )
    stored = AgentTransition.objects.get(pk=transition.pk)
    assert (stored.from_agent, stored.to_agent, stored.reason, stored.metadata) == (
        "triage",
        "billing",
        "refund",
        {"p": 1},
    )
    assert (stored.tenant_id, stored.user_id, stored.session_id) == (tenant.pk, "u1", session.pk)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"to_agent": ""},
        {"to_agent": "a/b"},
        {"to_agent": "b", "from_agent": "\x00"},
        {"to_agent": "b", "reason": 3},
        {"to_agent": "b", "reason": "a\x00"},
        {"to_agent": "b", "metadata": [1]},
    ],
    ids=str,
)
def test_bad_transitions_are_refused_and_nothing_is_stored(tenant, kwargs):
    session = _session(tenant)
    with pytest.raises(InvalidInput):
        services.transition_record(session=session, **kwargs)
    assert not AgentTransition.objects.exists()
