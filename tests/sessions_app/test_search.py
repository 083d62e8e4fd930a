"""Search over message history (agentstate.search, selectors.message_search): every path that
writes or removes messages keeps the index in step in its own transaction, checked through the
raw index (the FTS5 table on SQLite, the tsvector column on PostgreSQL), not only the API."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from agentstate.search import engine
from agentstate.search.engine import fts5_query, query_clean
from sessions_app import selectors, services
from sessions_app.models import Message, RetentionPolicy
from sessions_app.selectors.search import MESSAGE_INDEX
from tests import search_index
from userdata_app.erasure.execution import erase_subject
from userdata_app.erasure.storage import storage_cleanup
from userdata_app.models import ErasureRequest

pytestmark = pytest.mark.django_db


def raw_index_ids(word: str) -> list[int]:
    return search_index.raw_index_ids(MESSAGE_INDEX, word)


def found(tenant, query, user_id="u1", **options):
    return [
        (h.session_id, h.seq)
        for h in selectors.message_search(tenant=tenant, user_id=user_id, query=query, limit=20, **options)
    ]


@pytest.fixture
def session(tenant):
    return services.session_create(tenant=tenant, user_id="u1", session_id="s1")


def test_every_string_of_a_message_is_found_whatever_its_shape(tenant, session):
    services.message_append(
        session=session,
        messages=[
            {"role": "user", "content": "Where is the Zanzibar invoice?"},
            {"role": "assistant", "content": [{"type": "text", "text": "The zanzibar file is archived"}]},
            {"role": "tool", "content": [{"type": "tool_result", "output": {"rows": ["quokka"]}}]},
            {"role": "user", "content": None},
        ],
    )
    assert found(tenant, "zanzibar") == [("s1", 2), ("s1", 1)] or found(tenant, "zanzibar") == [("s1", 1), ("s1", 2)]
    assert found(tenant, "quokka") == [("s1", 3)]
    assert found(tenant, "zanzibar invoice") == [("s1", 1)]
    assert found(tenant, '"file is archived"') == [("s1", 2)]
    assert found(tenant, "invoice or quokka") in ([("s1", 1), ("s1", 3)], [("s1", 3), ("s1", 1)])
    assert found(tenant, "zanzibar -invoice") == [("s1", 2)]
    assert found(tenant, "absent") == []


@pytest.fixture(params=["owner matched in the index", "owner's rows walked"])
def owner_path(request, monkeypatch):
    """PostgreSQL searches a user of few messages by the owner's lexeme in the index, a larger one
    by walking their messages: both must find the same."""
    if request.param == "owner's rows walked":
        monkeypatch.setattr(engine, "OWNER_MATCH_ROWS", -1)


def test_a_search_is_scoped_to_the_tenant_and_the_user(tenant, other_tenant, session, owner_path):
    services.message_append(session=session, messages=[{"content": "walrus"}])
    theirs = services.session_create(tenant=tenant, user_id="u2", session_id="s1")
    services.message_append(session=theirs, messages=[{"content": "walrus"}])
    elsewhere = services.session_create(tenant=other_tenant, user_id="u1", session_id="s9")
    services.message_append(session=elsewhere, messages=[{"content": "walrus"}])
    assert found(tenant, "walrus") == [("s1", 1)]
    assert found(tenant, "walrus", user_id="u2") == [("s1", 1)]
    assert found(other_tenant, "walrus") == [("s9", 1)]
    assert len(raw_index_ids("walrus")) == 3


def test_a_user_id_of_any_characters_finds_its_own_messages_only(tenant, owner_path):
    """The index holds each message's owner as a digest (agentstate.search.owner_lexeme): spaces,
    quotes and non-ASCII in a user id change nothing, and typing the owner's lexeme finds nothing."""
    ids = ["ana lópez", 'o\'brien \\ "x"', "用户", "ana"]
    for n, user_id in enumerate(ids):
        session = services.session_create(tenant=tenant, user_id=user_id, session_id=f"s{n}")
        services.message_append(session=session, messages=[{"content": "capybara"}])
    for n, user_id in enumerate(ids):
        assert found(tenant, "capybara", user_id=user_id) == [(f"s{n}", 1)]
    lexeme = engine.owner_lexeme(tenant.pk, "ana")
    assert found(tenant, lexeme, user_id="ana") == []
    assert found(tenant, f'"{lexeme}"', user_id="ana") == []


def test_the_best_match_comes_first_and_pages_do_not_overlap(tenant, session):
    services.message_append(
        session=session,
        messages=[
            {"content": "ocelot"},
            {"content": "ocelot ocelot ocelot and more words here"},
            {"content": "ocelot"},
        ],
    )
    first = selectors.message_search(tenant=tenant, user_id="u1", query="ocelot", limit=2)
    rest = selectors.message_search(tenant=tenant, user_id="u1", query="ocelot", limit=2, offset=2)
    assert [h.rank for h in first] == sorted((h.rank for h in first), reverse=True)
    assert len(first) == 2 and len(rest) == 1
    assert {h.seq for h in first} | {h.seq for h in rest} == {1, 2, 3}
    assert "**ocelot**" in first[0].snippet


def test_only_the_newest_matches_are_ranked_so_a_common_word_costs_the_same_at_any_size(tenant, session, monkeypatch):
    monkeypatch.setattr(engine, "RANKED_MATCHES", 2)
    services.message_append(session=session, messages=[{"content": "ocelot ocelot ocelot ocelot"}])
    other = services.session_create(tenant=tenant, user_id="u1", session_id="s2")
    services.message_append(session=other, messages=[{"content": "ocelot and a long tail of other words"}])
    services.message_append(session=session, messages=[{"content": "ocelot"}])
    assert found(tenant, "ocelot") == [("s1", 2), ("s2", 1)]  # the best match, the oldest, is past the bound
    assert found(tenant, "ocelot", offset=2) == []
    services.message_append(session=other, messages=[{"content": "someone else's ocelot"}])
    assert sorted(found(tenant, "ocelot")) == [("s1", 2), ("s2", 2)]


def test_history_edits_and_forks_keep_the_index_in_step(tenant, session):
    services.message_append(session=session, messages=[{"content": f"heron{i}"} for i in range(1, 5)])
    services.message_pop(session=session)
    assert raw_index_ids("heron4") == []
    services.message_rewind(session=session, after_seq=2)
    assert raw_index_ids("heron3") == []
    services.session_fork(session=session, new_session_id="s2")
    assert found(tenant, "heron2") in ([("s2", 2), ("s1", 2)], [("s1", 2), ("s2", 2)])
    services.message_clear(session=session)
    assert found(tenant, "heron1") == [("s2", 1)]
    services.session_delete(session=selectors.session_get(tenant=tenant, user_id="u1", session_id="s2"))
    assert raw_index_ids("heron1") == [] and found(tenant, "heron1") == []


def test_an_erasure_removes_the_index_entries_in_its_own_transaction(tenant, session):
    services.message_append(session=session, messages=[{"content": "pelican secrets"}])
    bystander = services.session_create(tenant=tenant, user_id="u2", session_id="s1")
    services.message_append(session=bystander, messages=[{"content": "pelican"}])
    erase_subject(tenant=tenant, user_id="u1", scope=ErasureRequest.Scope.EVERYTHING)
    assert raw_index_ids("secrets") == []
    assert len(raw_index_ids("pelican")) == 1
    assert found(tenant, "pelican") == [] and found(tenant, "pelican", user_id="u2") == [("s1", 1)]


def test_the_clean_up_after_an_erasure_leaves_no_erased_word_in_the_sqlite_index_pages(tenant, session):
    """FTS5 marks a deleted row's words deleted but keeps them in its segments until they merge."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's FTS5 segments (PostgreSQL: the GIN index points at dead rows until VACUUM)")
    services.message_append(session=session, messages=[{"content": "flamingoquill"}])

    def in_index_pages() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT block FROM {MESSAGE_INDEX.fts_table}_data")  # noqa: S608 (constant SQL)
            return any(b"flamingoquill" in bytes(row[0]) for row in cursor.fetchall() if row[0])

    erase_subject(tenant=tenant, user_id="u1", scope=ErasureRequest.Scope.EVERYTHING)
    assert raw_index_ids("flamingoquill") == [] and in_index_pages()
    storage_cleanup(scope=ErasureRequest.Scope.EVERYTHING)
    assert not in_index_pages()


def test_retention_drops_old_messages_from_the_index(tenant, session):
    services.message_append(session=session, messages=[{"content": "ancient gecko"}, {"content": "fresh gecko"}])
    Message.objects.filter(session=session, seq=1).update(created_at=timezone.now() - timedelta(days=40))
    RetentionPolicy.objects.create(tenant=tenant, drop_messages_after_days=30)
    services.retention_apply(tenant=tenant)
    assert raw_index_ids("ancient") == []
    assert found(tenant, "gecko") == [("s1", 2)]


def test_an_update_of_content_reindexes_the_row(tenant, session):
    """Nothing in the services edits content in place today; the index follows such a write anyway."""
    services.message_append(session=session, messages=[{"content": "before"}])
    Message.objects.filter(session=session).update(content="after")
    assert raw_index_ids("before") == [] and found(tenant, "after") == [("s1", 1)]


@pytest.mark.parametrize(
    "query",
    ["", "   ", "x" * 257, "-only -negatives", "!!! ???", "a\x00b", "or", '"', "___", "word \ud800"],
)
def test_queries_that_cannot_be_searched_are_refused_with_the_reason(query):
    with pytest.raises(InvalidInput) as refused:
        query_clean(query)
    assert "q" in refused.value.fields


@pytest.mark.parametrize(
    "query",
    [
        'NEAR(a b) "unterminated',
        "a AND OR NOT b",
        "col:value ^start *",
        "(((( a",
        "a -",
        "a:* & b | !c <-> d",
        '""" a """',
        "é ñ 日本語",
        "a or or -b or",
    ],
)
def test_any_query_that_passes_the_check_runs_without_a_database_error(tenant, session, query):
    services.message_append(session=session, messages=[{"content": "a b c d"}])
    found(tenant, query_clean(query))


def test_fts5_gets_every_phrase_quoted():
    assert fts5_query('a "b c" or d -e') == '("a" "b c") OR ("d" NOT "e")'
    assert fts5_query('x"y NEAR(z)') == '("x""y" "NEAR(z)")'


def test_the_sqlite_triggers_that_keep_the_index_exist():
    """A later migration that makes SQLite rebuild the messages table drops its triggers: it must
    create them again, or appends stop reaching the index."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's triggers")
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'sessions_app_message'")
        names = {row[0] for row in cursor.fetchall()}
    assert {f"{MESSAGE_INDEX.fts_table}_{event}" for event in ("insert", "delete", "update")} <= names


@pytest.mark.django_db(transaction=True)
def test_the_migration_indexes_the_messages_already_stored(tenant):
    """Migration 0013's backfill: messages written before it are found after it."""
    from django.db.migrations.executor import MigrationExecutor

    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    executor = MigrationExecutor(connection)
    executor.migrate([("sessions_app", "0012_session_owned_rows")])
    try:
        services.message_append(session=session, messages=[{"content": [{"type": "text", "text": "older okapi"}]}])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert found(tenant, "okapi") == [("s1", 1)]
    assert len(raw_index_ids("older")) == 1
