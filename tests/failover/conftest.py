"""The failover tests write through the real servers and commit: no test database, no rollback."""

import pytest

from tests.failover.cluster import APPS


@pytest.fixture(autouse=True)
def committed_database(request):
    """Direct access to the database the servers use (the multi-host DATABASE_URL), for setting up."""
    if not APPS:
        yield
        return
    blocker = request.getfixturevalue("django_db_blocker")
    with blocker.unblock():
        yield
