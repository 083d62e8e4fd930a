"""What an erasure leaves in PostgreSQL's write-ahead log and on the streaming replica, measured on
the real primary and replica (docs/COMPLIANCE.md states what this finds): where the erased bytes
still are once the erasure has committed and replayed, and what takes them out."""

import uuid
from pathlib import Path

from sessions_app import services
from tests.multinode.servers import (
    PRIMARY,
    PRIMARY_DATA,
    REPLICA,
    REPLICA_DATA,
    needs_servers,
    replica_wait_replayed,
    sql,
    tenant_new,
)

pytestmark = needs_servers
MESSAGES = "sessions_app_message"


def wal_files_holding(data: str, marker: bytes) -> list[str]:
    """The WAL segment files of a cluster whose bytes contain ``marker``."""
    return sorted(path.name for path in (Path(data) / "pg_wal").glob("0*") if marker in path.read_bytes())


def pages_holding(url: str, marker: bytes) -> int:
    """How many pages of the messages table, as that server holds them, contain ``marker``."""
    (pages,) = sql(url, "SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int", (MESSAGES,))
    return sum(marker in sql(url, "SELECT get_raw_page(%s, %s)", (MESSAGES, block))[0] for block in range(pages))


def erased_message() -> bytes:
    """A person's message, erased: its text (unique) is what the search looks for."""
    from tests.userdata_app.erasure_factories import verified_request
    from userdata_app.erasure import erasure_execute

    marker = uuid.uuid4().hex
    tenant = tenant_new()
    session = services.session_create(tenant=tenant, user_id="erased", session_id="s1")
    services.message_append(session=session, messages=[{"role": "user", "content": marker}])
    erasure_execute(request=verified_request(subjects=[(tenant, "erased")], scope="everything"))
    replica_wait_replayed()
    return marker.encode()


def segment_switched_and_checkpointed() -> None:
    """What ends the segment holding an erasure on both servers: pg_switch_wal() on the primary,
    then a checkpoint there and one on the replica (a restartpoint), twice: after the first, the
    primary still kept the old segment in our runs."""
    sql(PRIMARY, "SELECT pg_switch_wal()")
    for _ in range(2):
        sql(PRIMARY, "CHECKPOINT")
        replica_wait_replayed()
        sql(REPLICA, "CHECKPOINT")  # on a standby: a restartpoint


def test_what_an_erasure_leaves_in_wal_and_on_the_replica_and_what_takes_it_out():
    sql(PRIMARY, "CREATE EXTENSION IF NOT EXISTS pageinspect")
    marker = erased_message()
    # Committed and replayed: the current WAL segment holds the text on both servers, and so does
    # the table page with the deleted row (the replica keeps the primary's dead tuples).
    assert wal_files_holding(PRIMARY_DATA, marker) and wal_files_holding(REPLICA_DATA, marker)
    assert pages_holding(PRIMARY, marker) == pages_holding(REPLICA, marker) == 1
    sql(PRIMARY, "CHECKPOINT")  # alone it removes nothing: the segment is still the current one
    still = wal_files_holding(PRIMARY_DATA, marker)
    assert still and wal_files_holding(REPLICA_DATA, marker)
    segment_switched_and_checkpointed()  # with wal_recycle on (the default) the segment is
    recycled = wal_files_holding(PRIMARY_DATA, marker)  # renamed for reuse, its bytes intact
    assert recycled and recycled != still and wal_files_holding(REPLICA_DATA, marker)
    sql(PRIMARY, f"VACUUM {MESSAGES}")
    replica_wait_replayed()
    # The replica's page came as a full-page image (VACUUM's first change to it since the
    # checkpoints), whose free space arrives as zeros. The primary's page may still hold the text
    # in the space VACUUM freed (it does not zero it): it did in one of our runs, not in another.
    assert pages_holding(REPLICA, marker) == 0
    for url in (PRIMARY, REPLICA):
        sql(url, "ALTER SYSTEM SET wal_recycle = off")
        sql(url, "SELECT pg_reload_conf()")
    try:
        marker = erased_message()
        assert wal_files_holding(PRIMARY_DATA, marker) and wal_files_holding(REPLICA_DATA, marker)
        segment_switched_and_checkpointed()  # now old segments are deleted, not recycled
        assert wal_files_holding(PRIMARY_DATA, marker) == wal_files_holding(REPLICA_DATA, marker) == []
    finally:
        for url in (PRIMARY, REPLICA):
            sql(url, "ALTER SYSTEM RESET wal_recycle")
            sql(url, "SELECT pg_reload_conf()")
