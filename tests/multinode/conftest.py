"""The multi-node tests write through the real servers and commit: no test database, no rollback
(a replica never sees a transaction that is rolled back)."""

import pytest

from tests.multinode.servers import PROXY


@pytest.fixture(autouse=True)
def committed_database(request):
    """Direct access to the database the servers use (through PgBouncer), for setting up data."""
    if not PROXY:
        yield
        return
    blocker = request.getfixturevalue("django_db_blocker")
    with blocker.unblock():
        yield
