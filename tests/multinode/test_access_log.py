"""Two app servers append to one tenant's access log at once (issue 30): each compliance-key call is
an entry, and the servers take turns on the tenant's chain head, so no entry is lost and the chain
verifies (docs/COMPLIANCE.md, "The access log")."""

import io

from django.core.management import call_command

from sessions_app import services
from tests.multinode.servers import APPS, client, in_threads, key_new, needs_servers, tenant_new
from userdata_app.access_log.models import AccessEntry

pytestmark = needs_servers
S = "/api/v1/users/u1/sessions/s1/"


def test_both_servers_logging_at_once_lose_no_entry_and_the_chain_verifies():
    tenant = tenant_new()
    key = key_new(tenant, scope="compliance")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    per_server, calls = 4, 30  # threads on each app server, calls per thread

    def read(t: int) -> None:
        with client(key, base=APPS[t % 2]) as api:  # straight to app server 1 or 2, as the proxy reaches it
            for _ in range(calls):
                answer = api.get(S)
                assert answer.status_code == 200, answer.text

    in_threads(2 * per_server, read)

    total = 2 * per_server * calls
    entries = AccessEntry.objects.filter(tenant=tenant.slug)
    assert entries.filter(action="api").count() == total
    assert list(entries.order_by("seq").values_list("seq", flat=True)) == list(range(1, total + 1))
    out = io.StringIO()
    call_command("verify_access_log", "--tenant", tenant.slug, stdout=out)
    assert out.getvalue() == f"{tenant.slug}: {total} entries verify.\n"
