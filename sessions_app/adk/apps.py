from django.apps import AppConfig


class AdkConfig(AppConfig):
    """Google ADK's process state as a framework backend: it registers itself with the core
    (``sessions_app.backends``) and its events in the map of people's data (its ``user:`` state is
    ``userdata_app.adk``'s)."""

    name = "sessions_app.adk"
    label = "adk"
    verbose_name = "Google ADK backend"

    def ready(self) -> None:
        from sessions_app import backends
        from sessions_app.adk import services, subject_data

        subject_data.declare()
        backends.register(
            backends.FrameworkBackend(
                framework=services.FRAMEWORK,
                label="Google ADK",
                unit="events",
                # Every event takes the next seq and none is deleted alone: the last seq counts them.
                counts=lambda sessions: {s.pk: s.last_seq for s in sessions},
            )
        )
