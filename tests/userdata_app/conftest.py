import threading

import pytest
from django.db import connection, connections

from sessions_app import working_state
from sessions_app.models import Session
from tests.sqlite_template import migrated_file


@pytest.fixture
def sqlite_file(transactional_db, tmp_path, monkeypatch):
    """Run the test on a migrated SQLite *file* in WAL mode, as deployed (the settings' pragmas),
    instead of the in-memory test database, whose pages never reach a file: the test can then
    read the database file and its ``-wal`` file byte by byte. Create data inside the test.

    The live server (session-wide) shares this connection object with its request threads, and
    each of them closes every connection when its client's kept-alive socket finally closes: a
    client an earlier test left open could close the file under this test (a closed database, or
    SQLite crashing mid-statement). Only this thread closes it here."""
    if connection.vendor != "sqlite":
        pytest.skip("a SQLite file database: run without DATABASE_URL")
    wrapper = connections["default"]
    owner, close = threading.get_ident(), wrapper.close
    monkeypatch.setattr(wrapper, "close", lambda: close() if threading.get_ident() == owner else None)
    in_memory_name, in_memory_connection = wrapper.settings_dict["NAME"], wrapper.connection
    path = tmp_path / "agentstate.sqlite3"
    wrapper.connection = None  # closing would drop the in-memory test database; set it aside
    wrapper.settings_dict["NAME"] = str(path)
    try:
        migrated_file(path)
        yield path
        # Working state in Redis is keyed by session pk, which the next test's database reuses.
        working_state.get_store().clear_many(list(Session.objects.values_list("pk", flat=True)))
    finally:
        wrapper.close()
        wrapper.settings_dict["NAME"] = in_memory_name
        wrapper.connection = in_memory_connection
