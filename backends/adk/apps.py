from django.apps import AppConfig


class AdkConfig(AppConfig):
    """Google ADK as a framework backend, both layers in one app: it registers itself with the core
    (``sessions_app.backends``), its rows in the map of people's data (events in process state,
    ``user:`` state and artifacts in people's data) and its staff section."""

    name = "backends.adk"
    label = "adk"
    verbose_name = "Google ADK backend"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from backends.adk import staff
        from backends.adk.people import subject_data as people_subject_data
        from backends.adk.people.artifacts import services as artifact_services
        from backends.adk.people.artifacts import subject_data as artifact_subject_data
        from backends.adk.people.artifacts.models import Artifact
        from backends.adk.process import services, subject_data
        from sessions_app import backends

        # Every path that deletes rows (erasure, delete_artifact, retention's and a tenant's
        # cascades) removes their files once it commits: a file lives exactly as long as its row.
        post_delete.connect(
            artifact_services.artifact_file_release, sender=Artifact, dispatch_uid="artifact_file_release"
        )
        backends.register(
            backends.FrameworkBackend(
                framework=services.FRAMEWORK,
                label="Google ADK",
                unit="events",
                # Every event takes the next seq and none is deleted alone: the last seq counts them.
                counts=lambda sessions: {s.pk: s.last_seq for s in sessions},
                subject_data=(
                    *subject_data.declarations(),
                    *people_subject_data.declarations(),
                    *artifact_subject_data.declarations(),
                ),
                not_personal=artifact_subject_data.NOT_PERSONAL,
                # Its page merges in the user: state, people's data: rendered at the top of the backend.
                staff_section=backends.FrameworkSection("ADK events and state", staff.session_section),
                urls=(("adk/", "backends.adk.urls"),),
                import_sources=(
                    backends.ImportSource(
                        kinds={
                            "adk-database": "Google ADK DatabaseSessionService: its SQLAlchemy URL "
                            "(sqlite+aiosqlite:///..., postgresql+asyncpg://...)",
                            "adk-sqlite": "Google ADK SqliteSessionService: its database file",
                        },
                        open=_source,
                    ),
                ),
            )
        )


def _source(kind: str, location: str, default_user_id: str) -> object:
    from backends.adk.importer import AdkSource  # reads the peer's store through ADK's own classes

    return AdkSource(kind, location)
