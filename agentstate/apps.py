from django.apps import AppConfig


class AgentstateConfig(AppConfig):
    """The project package as an app: its management commands and shared templates."""

    name = "agentstate"
    verbose_name = "agentstate"
