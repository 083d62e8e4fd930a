from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "agentstate.tenancy"
    label = "tenancy"
    verbose_name = "Tenants and API keys"

    def ready(self) -> None:
        from agentstate.subject_data import register_not_personal

        register_not_personal(
            "tenancy.APIKey",
            "a person key names whom it acts for (a credential, no data about them); an erasure of the "
            "person deletes their keys (services.api_keys_forget_subject)",
        )
