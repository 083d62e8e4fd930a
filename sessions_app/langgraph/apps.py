from django.apps import AppConfig


class LangGraphConfig(AppConfig):
    """LangGraph's checkpointer as a framework backend: it registers itself with the core
    (``sessions_app.backends``) and its rows in the map of people's data; its admin is discovered
    as every app's is."""

    name = "sessions_app.langgraph"
    label = "langgraph"
    verbose_name = "LangGraph backend"

    def ready(self) -> None:
        from sessions_app import backends
        from sessions_app.langgraph import selectors, services, subject_data

        subject_data.declare()
        backends.register(
            backends.FrameworkBackend(
                framework=services.FRAMEWORK,
                label="LangGraph",
                unit="checkpoints",
                counts=selectors.checkpoint_counts,
                retention=(
                    backends.RetentionRule(
                        policy_field="keep_latest_checkpoints",
                        category="checkpoints_deleted",
                        sessions=lambda sessions: sessions.filter(framework=services.FRAMEWORK),
                        apply=services.checkpoints_keep_latest,
                    ),
                ),
            )
        )
