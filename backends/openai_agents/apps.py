from django.apps import AppConfig


class OpenAIAgentsConfig(AppConfig):
    """The OpenAI Agents SDK as a framework backend: its sessions are the core API's, found by their
    metadata; it registers them with the core (``sessions_app.backends``) so staff see them as the
    SDK's, and its admin section is discovered as every app's."""

    name = "backends.openai_agents"
    label = "openai_agents"
    verbose_name = "OpenAI Agents SDK backend"

    def ready(self) -> None:
        from backends.openai_agents import admin
        from backends.openai_agents.process import presenters
        from sessions_app import backends

        backends.register(
            backends.FrameworkBackend(
                framework=presenters.FRAMEWORK,
                label="OpenAI Agents SDK",
                unit="items",
                metadata_key=presenters.METADATA_KEY,
                staff_section=admin.STAFF_SECTION,
                import_sources=(
                    backends.ImportSource(
                        kinds={
                            "openai-sqlite": "OpenAI Agents SDK SQLiteSession: its database file",
                            "openai-sqlalchemy": "OpenAI Agents SDK SQLAlchemySession: its async SQLAlchemy URL",
                        },
                        open=_source,
                        needs_default_user=True,
                    ),
                ),
            )
        )


def _source(kind: str, location: str, default_user_id: str) -> object:
    from backends.openai_agents.importer import OpenAIAgentsSource  # the SDK's own sessions read the store

    return OpenAIAgentsSource(kind, location, default_user_id=default_user_id)
