"""API keys for tests that call a live server (the client and the framework integrations)."""


def api_key_new(tenant, scope: str = "agent") -> str:
    from agentstate.tenancy.models import APIKey

    _, key = APIKey.objects.create_key(name="client-tests", tenant=tenant, scope=scope)
    return key
