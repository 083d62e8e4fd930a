import pytest
from django.core.cache import cache

from agentstate.site.templatetags.agentstate_dashboard import ACTIVITY_CACHE_KEY


@pytest.fixture
def fresh_dashboard(db):
    """The dashboard's activity figures are cached; with Redis the cache outlives each test's
    database, so dashboard tests start and end without them."""
    cache.delete(ACTIVITY_CACHE_KEY)
    yield
    cache.delete(ACTIVITY_CACHE_KEY)
