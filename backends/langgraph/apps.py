from django.apps import AppConfig


class LangGraphConfig(AppConfig):
    """LangGraph's checkpointer as a framework backend: it registers itself with the core
    (``sessions_app.backends``) and its rows in the map of people's data; its admin is discovered
    as every app's is."""

    name = "backends.langgraph"
    label = "langgraph"
    verbose_name = "LangGraph backend"

    def ready(self) -> None:
        from backends.langgraph.process import selectors, services, subject_data
        from sessions_app import backends

        subject_data.declare()
        backends.register(
            backends.FrameworkBackend(
                framework=services.FRAMEWORK,
                label="LangGraph",
                unit="checkpoints",
                counts=selectors.checkpoint_counts,
                thread_session_pk=selectors.thread_session_pk,
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
