from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Agent sessions (process state)"

    def ready(self) -> None:
        from sessions_app import subject_data

        subject_data.declare()
