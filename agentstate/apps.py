from django.apps import AppConfig


class AgentstateConfig(AppConfig):
    """The project package as an app: its management commands and shared templates."""

    name = "agentstate"
    verbose_name = "agentstate"

    def ready(self) -> None:
        from django.core import checks
        from django.core.signals import request_started

        from agentstate.api.views import check_person_declared, check_reads_declared, raw_path_keep
        from agentstate.subject_data import check_declared

        request_started.connect(raw_path_keep, dispatch_uid="agentstate.raw_path_keep")
        checks.register(check_declared, "agentstate")
        checks.register(check_reads_declared, checks.Tags.urls)
        checks.register(check_person_declared, checks.Tags.urls)
