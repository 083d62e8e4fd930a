from django.apps import AppConfig


class OpenAIAgentsConfig(AppConfig):
    """The OpenAI Agents SDK as a framework backend: its sessions are the core API's, found by their
    metadata; it registers them with the core (``sessions_app.backends``) so staff see them as the
    SDK's, and its admin section is discovered as every app's."""

    name = "backends.openai_agents"
    label = "openai_agents"
    verbose_name = "OpenAI Agents SDK backend"

    def ready(self) -> None:
        from backends.openai_agents.process import presenters
        from sessions_app import backends

        backends.register(
            backends.FrameworkBackend(
                framework=presenters.FRAMEWORK,
                label="OpenAI Agents SDK",
                unit="items",
                metadata_key=presenters.METADATA_KEY,
            )
        )
