from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "agentstate.tenancy"
    label = "tenancy"
    verbose_name = "Tenants and API keys"
