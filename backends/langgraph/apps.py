from django.apps import AppConfig


class LangGraphConfig(AppConfig):
    """LangGraph's checkpointer as a framework backend: it registers itself with the core
    (``sessions_app.backends``) and its rows in the map of people's data; its admin is discovered
    as every app's is."""

    name = "backends.langgraph"
    label = "langgraph"
    verbose_name = "LangGraph backend"

    def ready(self) -> None:
        from backends.langgraph import admin
        from backends.langgraph.process import selectors, services, subject_data
        from sessions_app import backends

        backends.register(
            backends.FrameworkBackend(
                framework=services.FRAMEWORK,
                label="LangGraph",
                unit="checkpoints",
                counts=selectors.checkpoint_counts,
                thread_session_pk=selectors.thread_session_pk,
                subject_data=subject_data.declarations(),
                staff_section=admin.STAFF_SECTION,
                urls=(("langgraph/", "backends.langgraph.urls"),),
                import_sources=(
                    backends.ImportSource(
                        kinds={
                            "langgraph-sqlite": "LangGraph SqliteSaver: its database file",
                            "langgraph-postgres": "LangGraph PostgresSaver: its connection string (postgresql://...)",
                        },
                        open=_checkpoints,
                        needs_default_user=True,
                    ),
                    backends.ImportSource(
                        kinds={
                            "langgraph-store-sqlite": "LangGraph SqliteStore: its database file",
                            "langgraph-store-postgres": "LangGraph PostgresStore: its connection string "
                            "(postgresql://...)",
                        },
                        open=_store,
                    ),
                ),
                retention=(
                    backends.RetentionRule(
                        policy_field="keep_latest_checkpoints",
                        help_text="Keep only this many LangGraph checkpoints (the newest) per thread namespace, "
                        "with their writes.",
                        category="checkpoints_deleted",
                        sessions=lambda sessions: sessions.filter(framework=services.FRAMEWORK),
                        apply=services.checkpoints_keep_latest,
                    ),
                ),
            )
        )


def _checkpoints(kind: str, location: str, default_user_id: str) -> object:
    from backends.langgraph.importer import LangGraphSource  # LangGraph's own savers read the store

    return LangGraphSource(kind, location, default_user_id=default_user_id)


def _store(kind: str, location: str, default_user_id: str) -> object:
    from backends.langgraph.importer_store import LangGraphStoreSource

    return LangGraphStoreSource(kind, location)
