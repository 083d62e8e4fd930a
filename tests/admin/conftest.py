import pytest
from django.core.cache import cache

from agentstate_site.templatetags.agentstate_dashboard import ACTIVITY_CACHE_KEY
from tests.admin.staff import staff


@pytest.fixture
def fresh_dashboard(db):
    """The dashboard's activity figures are cached; with Redis the cache outlives each test's
    database, so dashboard tests start and end without them."""
    cache.delete(ACTIVITY_CACHE_KEY)
    yield
    cache.delete(ACTIVITY_CACHE_KEY)


@pytest.fixture
def browser_staff(db):
    """Staff who may browse and manage requests, but not execute erasures or export."""
    perms = ["sessions_app.view_session", "sessions_app.view_message", "userdata_app.view_userdatum"]
    perms += [f"userdata_app.{p}_erasurerequest" for p in ("view", "add", "change")] + [
        "userdata_app.view_erasuresubject"
    ]
    return staff("viewer", perms=perms)
